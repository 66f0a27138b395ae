"""The default suite's report, rendered again from a recorded real run: every figure's every
axis holds data, every figure has its CSV beside it with rows for each scheme, and the summary embeds them.

The fixture `data/default-suite.tar.xz` is a real `make run` of this machine, shortened (seed 1, 10 s;
data/README.md says how it was made): the tests see what a user's first run writes, not numbers made up for
them. A change to what the runner records shows up here as a report that fails on real data."""

from __future__ import annotations

import csv
import tarfile
from pathlib import Path

import matplotlib.figure
import pytest

from topo.run import report_again

FIXTURE = Path(__file__).parent / "data" / "default-suite.tar.xz"
SCHEMES = {"rcp", "tcp"}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """The fixture's two results directories, their reports written again; the axes of every saved figure."""
    root = tmp_path_factory.mktemp("recorded")
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(root)      # our own fixture (Debian 12's Python has no extraction filters)
    saved: list[tuple[str, list]] = []
    original = matplotlib.figure.Figure.savefig

    def spy(fig, fname, *args, **kwargs):
        saved.append((Path(fname).name, [(ax.get_title() or ax.get_ylabel(), ax.has_data()) for ax in fig.axes
                                         if ax.get_visible() and ax.axison]))
        return original(fig, fname, *args, **kwargs)

    matplotlib.figure.Figure.savefig = spy
    try:
        dirs = {d.parent.name: d for d in root.glob("*/*") if d.is_dir()}
        for d in dirs.values():
            report_again(d)
    finally:
        matplotlib.figure.Figure.savefig = original
    return dirs, saved


def rows(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_the_fixture_is_the_default_suite():
    with tarfile.open(FIXTURE) as tar:
        names = tar.getnames()
    assert any(n.startswith("fct-short/") for n in names) and any(n.startswith("convergence-short/") for n in names)
    assert any(n.endswith("run.json") for n in names)


def test_every_axis_of_every_figure_holds_data(rendered):
    _, saved = rendered
    assert {name for name, _ in saved} >= {"fct_vs_size.png", "rates_over_time.png", "router_over_time.png"}
    for name, axes in saved:
        assert axes, f"{name}: no axes"
        empty = [label for label, has_data in axes if not has_data]
        assert not empty, f"{name}: empty axes {empty}"


def test_the_headline_has_both_schemes_in_every_bin_near_or_above_processor_sharing(rendered):
    dirs, _ = rendered
    table = rows(dirs["fct-short"] / "fct_vs_size.csv")
    assert {r["scheme"] for r in table} == SCHEMES
    bins = {(r["packets_from"], r["packets_to"]) for r in table}
    assert len(bins) >= 2
    for scheme in SCHEMES:
        mine = [r for r in table if r["scheme"] == scheme]
        assert {(r["packets_from"], r["packets_to"]) for r in mine} == bins
        for r in mine:
            assert int(r["flows"]) > 0 and float(r["mean_fct_s"]) > 0
            # a ratio to PS, not an empty or absurd cell (a bin of a few large flows can finish well inside the
            # bound of the run's mean load)
            assert 0.2 < float(r["mean_fct_over_ps"]) < 10


def test_time_series_have_every_scheme(rendered):
    dirs, _ = rendered
    rates = rows(dirs["convergence-short"] / "rates_over_time.csv")
    assert {r["scheme"] for r in rates} == SCHEMES
    for scheme in SCHEMES:
        assert len({r["flow"] for r in rates if r["scheme"] == scheme}) == 4
    for name in ("fct-short", "convergence-short"):
        router = rows(dirs[name] / "router_over_time.csv")
        assert {r["scheme"] for r in router} == SCHEMES
        assert all(r["R_mbps"] for r in router if r["scheme"] == "rcp")
        assert any(float(r["y_mbps"]) > 0 for r in router)


def test_the_summary_embeds_every_figure_it_names(rendered):
    dirs, _ = rendered
    for d in dirs.values():
        summary = (d / "summary.md").read_text()
        pngs = sorted(p.name for p in d.glob("*.png"))
        assert pngs
        for png in pngs:
            assert f"]({png})" in summary and (d / png.replace(".png", ".csv")).is_file()

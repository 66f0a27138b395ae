"""The FCT figure draws each point at the mean size of its flows, in bins finer than the tables' decades.

A bin's mean FCT belongs to the sizes of the flows in it: drawn at the bin's centre instead, flows of one
size far from that centre land above or below the processor-sharing curve whatever their ratio to it (the
RCP talk's Example 1, every flow 1000 packets, would be drawn at 3162)."""

from __future__ import annotations

import csv
import math

import matplotlib.figure
import pytest

from p4rcp.analysis import fct_ps, service_bytes
from p4rcp.toolchain import ROOT
from p4rcp.topology import load_topology
from topo.report.figures import FIGURE_BINS_PER_DECADE, figure_bins, plot_fct

TOPOLOGY = load_topology(ROOT / "topo" / "topologies" / "dumbbell.toml")
C_BPS, LOAD, RTT_S = 15e6, 0.5, 2 * TOPOLOGY.hosts["h1"].delay_ms / 1000


def _bound(packets: int) -> float:
    size = packets * TOPOLOGY.mss_bytes
    return fct_ps(service_bytes(size, TOPOLOGY.mss_bytes, TOPOLOGY.data_frame_bytes, "bytes"), C_BPS, LOAD, RTT_S)


def _flows(sizes_and_ratios: list[tuple[int, float]]) -> list[dict]:
    return [{"packets": p, "size_bytes": p * TOPOLOGY.mss_bytes, "fct_s": ratio * _bound(p), "ps_ratio": ratio}
            for p, ratio in sizes_and_ratios]


def _draw(tmp_path, flows: list[dict]):
    """plot_fct over one scheme's flows (one seed); the CSV rows and the left panel's lines by label."""
    agg = {"per_seed": [{"seed": 1, "fct_flows": flows}],
           "fct_by_size": {"bound_loads": [LOAD], "nominal_bound_seeds": []}}
    run = {"topology": TOPOLOGY, "meta": {"capacity_bps": {"s1:3": C_BPS}, "load": LOAD, "load_unit": "bytes"}}
    lines = {}
    original = matplotlib.figure.Figure.savefig

    def spy(fig, *args, **kwargs):
        ax = fig.axes[0]
        lines.update({line.get_label(): line.get_xydata() for line in ax.get_lines()})
        lines.update({bars.get_label(): bars.lines[0].get_xydata() for bars in ax.containers})
        return original(fig, *args, **kwargs)

    matplotlib.figure.Figure.savefig = spy
    try:
        path = plot_fct(tmp_path / "fct_vs_size.png", {"rcp": agg}, {"rcp": [run]})
    finally:
        matplotlib.figure.Figure.savefig = original
    with path.with_suffix(".csv").open() as f:
        return list(csv.DictReader(f)), lines


def _curve_at(lines: dict, x: float) -> float:
    """The processor-sharing curve of the left panel at x (linear between its samples)."""
    [xy] = [xy for label, xy in lines.items() if label.startswith("processor sharing")]
    for (x0, y0), (x1, y1) in zip(xy, xy[1:]):
        if x0 <= x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    raise AssertionError(f"the curve does not reach {x}")


def test_flows_of_one_size_are_drawn_at_that_size_above_the_curve_by_their_ratio(tmp_path):
    # The talk's Example 1: every flow 1000 packets, RCP at 1.11 x FCT_PS. 1000 is a bin's lower edge here
    # and far from the centre of the tables' decade (3162).
    rows, lines = _draw(tmp_path, _flows([(1000, 1.11)] * 20))
    assert [(r["packets_from"], r["packets_to"], r["flows"]) for r in rows] == [("1000", "1000", "20")]
    assert float(rows[0]["mean_packets"]) == 1000
    [(x, y)] = lines["rcp, mean"]
    assert x == 1000
    assert y / _curve_at(lines, 1000) == pytest.approx(1.11, rel=0.01)
    assert float(rows[0]["mean_fct_s"]) / float(rows[0]["ps_fct_s"]) == pytest.approx(1.11)


def test_a_point_sits_at_its_flows_mean_size_not_at_its_bins_centre(tmp_path):
    # 40 and 60 packets share a bin of five per decade ([39.8, 63.1)); its centre is 50.1, its flows' mean 55.
    flows = _flows([(40, 1.0)] * 1 + [(60, 1.0)] * 3)
    rows, lines = _draw(tmp_path, flows)
    assert [r["mean_packets"] for r in rows] == ["55.00"]
    [(x, y)] = lines["rcp, mean"]
    assert x == 55
    # FCT_PS is linear in the size, so a bin's mean bound is the curve at its flows' mean size.
    assert y == pytest.approx(_curve_at(lines, 55), rel=0.01)


def test_the_figure_has_several_bins_a_decade_and_the_tables_keep_decades():
    sizes = list(range(1, 1001))
    points = figure_bins(_flows([(p, 1.0) for p in sizes]))
    assert len(points) == 3 * FIGURE_BINS_PER_DECADE           # 1-1000 packets: three decades
    assert sum(p["flows"] for p in points) == len(sizes)
    assert all(p["smallest"] <= p["mean_packets"] <= p["largest"] for p in points)
    widths = [math.log10(p["hi"] / p["lo"]) for p in points]
    assert widths == pytest.approx([1 / FIGURE_BINS_PER_DECADE] * len(points))

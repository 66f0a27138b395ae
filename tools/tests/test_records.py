"""Records: what `python -m tools.records add` makes of a real run, and how the generator reads a record's
cells (the fixture is the recorded Mininet run of topo/tests/data/)."""

from __future__ import annotations

import dataclasses
import sys
import tarfile
from pathlib import Path

import pytest

from tools.records import ROOT, render, store

FIXTURE = ROOT / "topo" / "tests" / "data" / "default-suite.tar.xz"
# The record of the fixture's runs, kept beside the test: the documents' record of the same suite is made
# again with every new measurement.
FIXTURE_RECORD = Path(__file__).parent / "data" / "default-short-mininet.toml"


@pytest.fixture(scope="module")
def fixture_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("suite")
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(root)      # our own fixture (Debian 12's Python has no extraction filters)
    return [next((root / name).iterdir()) for name in ("fct-short", "convergence-short")]


def test_a_record_of_the_fixture_is_the_committed_one(fixture_dirs):
    made = store.from_results("default-short-mininet", fixture_dirs)
    committed = store.load(FIXTURE_RECORD)
    assert made.command == committed.command == ".venv/bin/python -m topo.run default --seeds 1 --duration 10"
    assert (made.experiment, made.engine, made.commit, made.date) == ("default", "mininet", "0856a1722c2e",
                                                                     "2026-11-25")
    assert made.machine == committed.machine and "simple_switch 1.15.5" in made.machine["software"]
    for mine, theirs in zip(made.results, committed.results):
        assert (mine.experiment, mine.runs, mine.valid_runs) == (theirs.experiment, theirs.runs, theirs.valid_runs)
        assert [(t.title, t.header, t.rows) for t in mine.tables] == [(t.title, t.header, t.rows)
                                                                       for t in theirs.tables]
    # From the first run's start to the last run's end, as the run.json files' times give it.
    assert 30 < made.wall_s < 120


def test_a_record_reads_every_table_of_a_summary(fixture_dirs):
    [fct, convergence] = store.from_results("x", fixture_dirs).results
    assert [t.title for t in fct.tables] == ["", "Mean FCT / FCT_PS by flow size (cell: ratio (seeds' range), flows):",
                                             "Mean FCT over rcp's mean FCT by flow size:"]
    assert fct.table().cell("rcp", "valid runs") == "1/1"
    assert fct.table("FCT_PS by flow size").header == ["flow size (packets)", "rcp", "tcp"]
    assert convergence.table().column("Jain") > 0
    assert fct.setting.startswith("Bottleneck: 15.0 Mb/s")
    with pytest.raises(store.RecordError, match="tables match"):
        fct.table("by flow size")           # two tables match: a claim must name one


def test_a_suite_is_recorded_whole_and_runs_apart_are_refused(fixture_dirs, tmp_path):
    assert store.suite_of(["fct-short", "convergence-short"]) == "default"
    with pytest.raises(store.RecordError, match="no suite"):
        store.from_results("x", [fixture_dirs[1], fixture_dirs[0]])
    with pytest.raises(store.RecordError, match="no summary.md"):
        store.from_results("x", [tmp_path])
    with pytest.raises(store.RecordError, match="record name"):
        store.from_results("Bad Name", fixture_dirs)


def test_a_record_survives_writing_and_reading(fixture_dirs, tmp_path, monkeypatch):
    monkeypatch.setattr(store, "RECORDS_DIR", tmp_path)
    made = store.from_results("round-trip", fixture_dirs, note="a test")
    read = store.load(made.write())
    assert read.to_toml() == made.to_toml() | {"wall_s": round(made.wall_s)}


def test_cells_become_numbers_for_the_verdicts():
    assert render.value_of("1.20 (1.13-1.26)") == 1.20
    assert render.value_of("1.17 (1.15-1.19), 1176") == 1.17
    assert render.value_of("14.5 / 13.5 / never") == [14.5, 13.5, None]
    assert render.value_of("1.0 / never, never in 1 of 3") == [1.0, None]
    assert render.value_of("-") is None


def test_a_claim_holds_or_not_by_its_expression():
    quote = [render.Quote("rcp", "1.20", 1.20), render.Quote("joins", "2.4 / never", [2.4, None])]
    assert render.verdict({"holds": "rcp <= 1.25"}, quote) == "holds"
    assert render.verdict({"holds": "rcp <= 1.1"}, quote) == "does not hold"
    assert render.verdict({"holds": "joins[1] < 3"}, quote) == "does not hold"      # never: it did not happen


def test_a_timed_command_is_recorded_with_the_end_of_its_output(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "RECORDS_DIR", tmp_path)
    script = "print('\\n'.join(f'line {i}' for i in range(20)))"
    record = store.timed("printer", [sys.executable, "-c", script])
    assert record.kind == "command" and record.exit_status == 0
    assert record.tail == [f"line {i}" for i in range(20 - store.TAIL_LINES, 20)]
    assert store.load(record.write()).tail == record.tail


def test_a_record_is_made_again_by_running_its_command(fixture_dirs, capsys):
    old = store.load(FIXTURE_RECORD)
    old.command = "printf 'results: %s\\n' " + " ".join(str(d) for d in fixture_dirs)
    new = store.rerun(old)
    assert new.name == old.name and new.command == old.command and new.note == ""
    assert [r.experiment for r in new.results] == ["fct-short", "convergence-short"]
    assert new.results[0].table().cell("rcp", "valid runs") == "1/1"
    assert "results: " in capsys.readouterr().out          # the run's output is shown as it goes


def test_a_rerun_that_fails_or_names_no_results_is_refused(fixture_dirs):
    old = store.load(FIXTURE_RECORD)
    old.command = f"sh -c 'echo results: {fixture_dirs[0]}; exit 3'"
    with pytest.raises(store.RecordError, match="exited with status 3"):
        store.rerun(old)
    old.command = "echo done"
    with pytest.raises(store.RecordError, match="no 'results: DIRECTORY' line"):
        store.rerun(old)


def test_a_claim_whose_record_lacks_its_cells_is_named():
    record = store.load(ROOT / "docs" / "records" / "default-ns3.toml")
    claim = {"id": "made-up", "experiment": "fct-short",
             "quote": [{"label": "x", "row": "rcp-gone", "column": "mean FCT / FCT_PS"}]}
    with pytest.raises(store.RecordError, match="claim made-up .*record default-ns3: no row 'rcp-gone'"):
        render.quotes(claim, record)


def test_the_tna_profiles_block_quotes_the_table_that_ends_the_backends_record(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "RECORDS_DIR", tmp_path)
    assert render.NOT_RECORDED in render.block_tna_profiles({}, {})
    table = ["bf-p4c 9.99.0 (SHA: 34b86e9):", "", "| profile | target | stages |", "|---|---|---|",
             "| core | Tofino 1 | 3 of 12 |", "| full | Tofino 1 | 12 of 12 |"]
    # As make prints it: each compile's command line (also "bf-p4c ..."), its result, then the table.
    echoed = ["bf-p4c -g --target tofino --arch tna -DRCP_PROFILE_FULL -o build/tna/full/tofino p4rcp_tna.p4",
              "check-tna: full tofino: back end OK"]
    script = "print('\\n'.join(" + repr([*echoed, *table]) + "))"
    record = dataclasses.replace(store.timed("tna-profiles", [sys.executable, "-c", script]),
                                 command=render.TNA_PROFILES_COMMAND)
    block = render.block_tna_profiles({}, {"tna-profiles": record})
    lines = block.splitlines()
    assert "bf-p4c 9.99.0 (SHA: 34b86e9); each cell is used of the device's:" in lines[0], block
    assert lines[2:] == table[2:] and "back end OK" not in block and "--target" not in block
    failed = dataclasses.replace(record, exit_status=2)
    assert "exit status 2, no table" in render.block_tna_profiles({}, {"tna-profiles": failed})

"""An evaluation's table (topo.evaluate) as a record (tools.records): what the suite writes is what the record
reads, and the generated block of docs/evaluate.md shows it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.records import render, store
from topo.evaluate.table import FAIL, PASS, Row, write_table
from topo.evaluate.targets import TARGETS, Verdict


def an_evaluation(directory: Path) -> Path:
    """An evaluation's directory as topo.evaluate writes it: the table, and one run below it."""
    rows = [Row("fct-short (the default run)", "flow sizes", "fct-short", "ns3", status=FAIL,
                rcp={"fct_ratio_ps": [1.1, 1.2], "fct_ratio_ps_exact": [1.0, 1.1]}, tcp={"fct_ratio_ps": [1.4, 1.5]},
                verdicts=[Verdict(TARGETS["default-fct"], 1.2, False), Verdict(TARGETS["cell-fct"], 1.2, True)]),
            Row("RCP alone (4 flows)", "TCP mix", "tcp-mix-reno (tcp_flows=0)", "ns3", status=PASS,
                verdicts=[Verdict(TARGETS["mix-alone-queue"], 0.0, True)])]
    write_table(rows, directory, "# Evaluation", {"command": ".venv/bin/python -m topo.evaluate --engine ns3",
                                                   "engine": "ns3", "seeds": [1, 2], "wall_s": 600.0})
    run = directory / "fct-short" / "rcp" / "seed1"
    run.mkdir(parents=True)
    (run / "run.json").write_text('{"valid": true, "environment": {"commit": "abc123", "machine": "2 CPUs"}}')
    return directory


def test_an_evaluation_is_recorded_with_its_table_and_shown_by_its_block(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "RECORDS_DIR", tmp_path / "records")
    made = store.from_evaluation("evaluate-ns3", an_evaluation(tmp_path / "ns3-20261128-100000"))
    assert (made.kind, made.engine, made.commit, made.wall_s) == ("evaluation", "ns3", "abc123", 600.0)
    assert made.command == ".venv/bin/python -m topo.evaluate --engine ns3"
    table = made.result("evaluate").table()
    assert table.cell("fct-short (the default run)", "result") == "FAIL"
    read = store.load(made.write())
    assert read.to_toml() == made.to_toml()
    block = render.block_evaluation({}, {"evaluate-ns3": read})
    assert "| fct-short (the default run) | 1.15 (1.10-1.20) | 1.45 (1.40-1.50) | 1.05 (1.00-1.10) |" in block
    assert "| FAIL | default-fct: 1.2 <= 1.15 FAIL |" in block and "cell-fct" not in block   # only what it missed
    assert "| RCP alone (4 flows) |" in block and "1 of 1 runs valid; 1 PASS, 1 FAIL, 0 not run." in block


def test_an_evaluation_that_does_not_say_how_it_was_made_is_refused(tmp_path):
    directory = an_evaluation(tmp_path / "ns3-20261128-100000")
    data = json.loads((directory / "table.json").read_text())
    (directory / "table.json").write_text(json.dumps({k: v for k, v in data.items() if k != "run"}))
    with pytest.raises(store.RecordError, match="does not say how it was made"):
        store.from_evaluation("x", directory)
    with pytest.raises(store.RecordError, match="no table.md"):
        store.from_evaluation("x", tmp_path)


def test_an_evaluation_is_made_again_from_the_table_its_command_names(tmp_path):
    directory = an_evaluation(tmp_path / "ns3-20261128-100000")
    old = store.from_evaluation("evaluate-ns3", directory)
    old.command = f"echo 'table: {directory}/table.md (also table.csv, table.json)'"
    new = store.rerun(old)
    assert new.kind == "evaluation" and new.result("evaluate").table().rows == old.result("evaluate").table().rows
    old.command = "echo done"
    with pytest.raises(store.RecordError, match="no 'table: DIRECTORY/table.md' line"):
        store.rerun(old)

"""The names p4rcp/dataplane.py gives the control plane exist in the compiled program."""

import json

import pytest

from p4rcp import dataplane as dp
from p4rcp.testing import BUILD_JSON


def test_names_match_compiled_program():
    if not BUILD_JSON.is_file():
        pytest.skip(f"SKIPPED: {BUILD_JSON} not built (needs p4c-bm2-ss; run 'make build')")
    program = json.loads(BUILD_JSON.read_text())
    registers = {r["name"]: r for r in program["register_arrays"]}
    for name in (*dp.COUNTER_REGISTERS, dp.REG_QUEUE_DEPTH, dp.REG_RATE):
        assert name in registers, f"register {name} missing; have {sorted(registers)}"
        assert registers[name]["size"] == dp.NUM_PORTS
    for name in dp.COUNTER_REGISTERS:
        assert registers[name]["bitwidth"] == dp.COUNTER_BITS
    tables = {t["name"] for pipe in program["pipelines"] for t in pipe["tables"]}
    assert dp.TABLE_ROUTING_V4 in tables
    actions = {a["name"] for a in program["actions"]}
    assert {dp.ACTION_SET_NEXT_HOP, dp.ACTION_DROP} <= actions

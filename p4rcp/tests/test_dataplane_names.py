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
    for name in (*dp.RCP_REGISTERS_READ, dp.REG_RATE):
        assert name in registers, f"register {name} missing; have {sorted(registers)}"
        assert registers[name]["size"] == dp.NUM_PORTS
    assert registers[dp.REG_RTT_SUM]["bitwidth"] == dp.RTT_SUM_BITS
    counters = {c["name"]: c for c in program["counter_arrays"]}
    for name in (*dp.RCP_COUNTERS, dp.COUNTER_INGRESS_PACKETS):
        assert name in counters, f"counter {name} missing; have {sorted(counters)}"
        assert counters[name]["size"] == dp.NUM_PORTS
    tables = {t["name"] for pipe in program["pipelines"] for t in pipe["tables"]}
    assert dp.TABLE_ROUTING_V4 in tables
    actions = {a["name"] for a in program["actions"]}
    assert {dp.ACTION_SET_NEXT_HOP, dp.ACTION_DROP} <= actions

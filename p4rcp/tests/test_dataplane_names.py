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
    for name in dp.RCP_REGISTERS_READ:
        assert name in registers, f"register {name} missing; have {sorted(registers)}"
        assert registers[name]["size"] == dp.NUM_PORTS
    assert registers[dp.REG_RTT_SUM]["bitwidth"] == dp.RTT_SUM_BITS
    # one cell per (port, weight class)
    for name in (dp.REG_RATE, dp.REG_POLICE):
        assert registers[name]["size"] == dp.RATE_CELLS == dp.rate_cell(dp.NUM_PORTS - 1, dp.NUM_WEIGHT_CLASSES - 1) + 1
    assert registers[dp.REG_POLICE]["bitwidth"] == 64
    for name in dp.REG_POLICE_ROWS:
        assert (registers[name]["size"], registers[name]["bitwidth"]) == (dp.POLICE_CELLS, 64)
    # the XCP router's registers, one cell per port, at the widths the control plane reads and writes
    for name, bits in ((dp.REG_XCP_SUM_X, dp.XCP_SUM_BITS), (dp.REG_XCP_SUM_RTT_X, dp.XCP_SUM_BITS),
                       (dp.REG_XCP_SUM_S, dp.XCP_SUM_BITS), (dp.REG_XCP_XI_P, dp.XCP_XI_BITS),
                       (dp.REG_XCP_XI_N, dp.XCP_XI_BITS), (dp.REG_XCP_MIN_QUEUE, dp.XCP_QUEUE_BITS),
                       (dp.REG_XCP_ON, 1), (dp.REG_XCP_POSITIVE_LEFT, 64), (dp.REG_XCP_NEGATIVE_LEFT, 64),
                       (dp.REG_CLASSIC_DROP, 32)):
        assert (registers[name]["size"], registers[name]["bitwidth"]) == (dp.NUM_PORTS, bits), name
    counters = {c["name"]: c for c in program["counter_arrays"]}
    for name in (*dp.RCP_COUNTERS, dp.COUNTER_INGRESS_PACKETS, dp.COUNTER_CLASSIC_DROPPED):
        assert name in counters, f"counter {name} missing; have {sorted(counters)}"
        assert counters[name]["size"] == dp.NUM_PORTS
    tables = {t["name"]: t for pipe in program["pipelines"] for t in pipe["tables"]}
    assert dp.TABLE_ROUTING_V4 in tables
    classifier = tables[dp.TABLE_WEIGHT_CLASSIFIER]
    assert [k["name"] for k in classifier["key"]] == [dp.MATCH_PORT, dp.MATCH_DSCP]
    actions = {a["name"]: a for a in program["actions"]}
    assert {dp.ACTION_SET_NEXT_HOP, dp.ACTION_DROP, dp.ACTION_SET_CELL} <= set(actions)
    # a miss reads the drop port's cells: RATE_NONE as the control plane writes it, policing never written
    default = classifier["default_entry"]
    assert actions[dp.ACTION_SET_CELL]["id"] == default["action_id"]
    assert int(default["action_data"][0], 16) == dp.UNCLASSIFIED_CELL

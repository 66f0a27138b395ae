"""tools/tna_resources.py: the summary of a Tofino compile, from logs in the shape of p4c's schemas
(backends/tofino/compiler_interfaces/schemas: resources_schema.py, phv_schema.py), made here small."""

import json

import pytest

from tools import tna_resources as tr


def _stage(n, srams, tcams, salus, hash_bits, tables):
    return {"stage_number": n,
            "rams": {"nRows": 8, "nColumns": 10, "srams": [{"row": 0, "column": i, "usages": []} for i in range(srams)]},
            "tcams": {"nRows": 12, "nColumns": 2, "tcams": [{"row": i, "column": 0, "usages": []} for i in range(tcams)]},
            "map_rams": {"nRows": 8, "nUnits": 6, "maprams": []},
            "meter_alus": {"nAlus": 4, "meters": [{"row": i, "usages": []} for i in range(salus)]},
            "hash_bits": {"nBits": 52, "nFunctions": 8, "bits": [{"hash_bit": i} for i in range(hash_bits)]},
            "gateways": {"nRows": 8, "nUnits": 2, "gateways": [{"row": 0, "unit_id": 0, "usages": []}] * tables},
            "logical_tables": {"size": 16, "ids": [{"id": i} for i in range(tables)]}}


@pytest.fixture
def compiled(tmp_path):
    logs = tmp_path / "pipe" / "logs"
    logs.mkdir(parents=True)
    stages = [_stage(0, 5, 2, 1, 10, 2), _stage(1, 3, 0, 2, 4, 1), _stage(2, 0, 0, 0, 0, 0)]
    (logs / "resources.json").write_text(json.dumps({
        "compiler_version": "9.99.0 (SHA: 34b86e9)",
        "resources": {"mau": {"nStages": 12, "mau_stages": stages},
                      "phv_containers": {"normal": [{"width": 8, "units": 3, "addresses": [0, 1, 2]},
                                                    {"width": 32, "units": 2, "addresses": [64, 65]}]}}}))
    (logs / "phv.json").write_text(json.dumps({"containers": [
        {"phv_number": 0, "bit_width": 8, "container_type": "normal", "slices": [{"field": "a"}]},
        {"phv_number": 1, "bit_width": 8, "container_type": "normal", "slices": []},
        {"phv_number": 64, "bit_width": 32, "container_type": "normal", "slices": [{"field": "b"}, {"field": "c"}]},
        {"phv_number": 65, "bit_width": 32, "container_type": "normal", "slices": [{"field": "d"}]}]}))
    return tmp_path


def test_the_summary_counts_each_resource_against_the_device(compiled):
    text = tr.summary("tofino", compiled, "compiling\nfoo.p4(3): [--Wwarn=unused] warning: x unused\n")
    assert "### Tofino 1 (`--target tofino --arch tna`)" in text
    assert "bf-p4c 9.99.0 (SHA: 34b86e9); 1 warning(s)." in text
    # the device's: its 12 stages' (resources.json lists only 3 here), as Tofino 2's lists 12 of its 20
    for row in ("| stages | 2 | 12 |", "| SRAM blocks | 8 | 960 |", "| TCAM blocks | 2 | 288 |",
                "| stateful ALUs | 3 | 48 |", "| hash bits | 14 | 624 |", "| logical tables | 3 | 192 |",
                "| PHV containers, normal 8-bit | 1 | 3 |", "| PHV containers, normal 32-bit | 2 | 2 |",
                "| 0 | 5 | 2 | 0 | 1 | 10 | 2 | 2 |", "| 1 | 3 | 0 | 0 | 2 | 4 | 1 | 1 |",
                "- foo.p4(3): [--Wwarn=unused] warning: x unused"):
        assert row in text, (row, text)
    assert not any(line.startswith("| 2 |") for line in text.splitlines())   # stages after the last used


def test_without_the_compilers_logs_the_tool_says_what_is_missing(tmp_path, capsys):
    log = tmp_path / "compile.log"
    log.write_text("")
    assert tr.main(["--target", "tofino", "--log", str(log), str(tmp_path)]) == 1
    assert "expected one resources.json (bf-p4c -g writes it" in capsys.readouterr().err

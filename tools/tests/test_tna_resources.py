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


def _compile(folder, stages):
    """bf-p4c's logs of one compile into folder, in the shape its -g writes them."""
    logs = folder / "pipe" / "logs"
    logs.mkdir(parents=True)
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
    return folder


@pytest.fixture
def compiled(tmp_path):
    return _compile(tmp_path, [_stage(0, 5, 2, 1, 10, 2), _stage(1, 3, 0, 2, 4, 1), _stage(2, 0, 0, 0, 0, 0)])


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


def test_the_profiles_table_gives_each_compiles_use_the_stages_left_and_the_binary(tmp_path, capsys):
    _compile(tmp_path / "core" / "tofino", [_stage(0, 1, 0, 1, 0, 1), _stage(1, 2, 0, 2, 0, 2)])
    full = _compile(tmp_path / "full" / "tofino", [_stage(n, 3, 1, 4, 8, 3) for n in range(12)])
    (full / "pipe" / "tofino.bin").write_bytes(b"\0")
    assert tr.main(["--profiles", "core,full", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("bf-p4c 9.99.0 (SHA: 34b86e9):")
    assert ("| core | Tofino 1 | 2 of 12 | 3 of 960 | 0 of 288 | 3 of 48 | 0 of 624 | 3 of 192 | 3 of 5 | 10 | "
            "none (no assembler) |") in text, text
    assert "| full | Tofino 1 | 12 of 12 | 36 of 960 | 12 of 288 | 48 of 48 | 96 of 624 | 36 of 192 | 3 of 5 | 0 | pipe/tofino.bin |" in text, text
    found = json.loads((tmp_path / "profiles.json").read_text())
    assert found["core"]["tofino"]["stateful ALUs"] == [3, 48] and found["full"]["tofino"]["binary"] == "pipe/tofino.bin"


def test_a_profile_without_a_compile_is_an_error_naming_it(tmp_path, capsys):
    _compile(tmp_path / "core" / "tofino", [_stage(0, 1, 0, 1, 0, 1)])
    assert tr.main(["--profiles", "core,full", str(tmp_path)]) == 1
    assert "full: no compile for any of tofino, tofino2" in capsys.readouterr().err

"""Finding the toolchain and asking bmv2 which build it is (p4rcp/toolchain.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from p4rcp import toolchain
from p4rcp.toolchain import bmv2_has_logging, find_tool

# What bmv2 1.15's option parser prints (src/bm_sim/options_parse.cpp) for the check's arguments.
PCAP_REFUSED = "echo \"Directory '/x' specified with '--pcap' does not exist\"; exit 1"
NO_MACROS = ("echo \"You disabled logging macros when building this binary; however, the log level is "
             "currenty set to include 'debug'\"")


def stand_in(tmp_path: Path, body: str) -> str:
    path = tmp_path / "simple_switch"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def test_a_speed_build_says_its_macros_are_disabled(tmp_path):
    assert bmv2_has_logging(stand_in(tmp_path, f"{NO_MACROS}\n{PCAP_REFUSED}")) is False


def test_a_default_build_logs(tmp_path):
    assert bmv2_has_logging(stand_in(tmp_path, PCAP_REFUSED)) is True


def test_a_program_that_is_not_bmv2_is_not_guessed_at(tmp_path):
    with pytest.raises(RuntimeError, match="did not answer the logging check"):
        bmv2_has_logging(stand_in(tmp_path, "echo hello"))


def test_the_installed_simple_switch_answers_the_check():
    path = find_tool("simple_switch")
    if path is None:
        pytest.skip(f"SKIPPED: needs simple_switch (not on PATH or in {toolchain.TOOLCHAIN_DIR}); "
                    f"{toolchain.INSTALL_HINT}")
    assert bmv2_has_logging(path) in (True, False)


def test_the_prefix_comes_from_p4_prefix(tmp_path):
    tool = tmp_path / "bin" / "p4test"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    found = subprocess.run([sys.executable, "-c", "from p4rcp.toolchain import find_tool; print(find_tool('p4test'))"],
                           env={"PATH": "/usr/bin:/bin", "P4_PREFIX": str(tmp_path)}, cwd=toolchain.ROOT,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert found == str(tool)

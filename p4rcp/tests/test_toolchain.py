"""Finding the toolchain and asking bmv2 which build it is (p4rcp/toolchain.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from p4rcp import toolchain
from p4rcp.toolchain import THRIFT_MISSING, bmv2_has_logging, find_tool, grpc_switch_has_thrift

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


# The strings of simple_switch_grpc's binary that the Thrift check reads (bmv2 1.15's switch_runner.cpp).
GRPC_OPTION = b"Bind gRPC server to given address\0grpc-server-addr\0"
NO_THRIFT_WARNING = (b"You used the '--thrift-port' command-line option, but this target was compiled without "
                     b"Thrift support. You can enable Thrift support (not recommended) by providing "
                     b"'--with-thrift' to configure.\0")


def grpc_stand_in(tmp_path: Path, content: bytes) -> str:
    path = tmp_path / "simple_switch_grpc"
    path.write_bytes(b"\x7fELF" + bytes(64) + content + bytes(64))
    path.chmod(0o755)
    return str(path)


def test_a_grpc_switch_configured_with_thrift_serves_it(tmp_path):
    assert grpc_switch_has_thrift(grpc_stand_in(tmp_path, GRPC_OPTION + b"thrift-port\0")) is True


def test_a_grpc_switch_configured_without_thrift_is_told_apart(tmp_path):
    assert grpc_switch_has_thrift(grpc_stand_in(tmp_path, GRPC_OPTION + b"thrift-port\0" + NO_THRIFT_WARNING)) is False


@pytest.mark.parametrize("content", [b"", b"#!/bin/sh\nexec .libs/lt-simple_switch_grpc \"$@\"\n"])
def test_a_file_that_is_no_grpc_switch_is_not_guessed_at(tmp_path, content):
    path = tmp_path / "simple_switch_grpc"
    path.write_bytes(content)
    with pytest.raises(RuntimeError, match="is not a simple_switch_grpc binary"):
        grpc_switch_has_thrift(str(path))


def test_the_missing_thrift_names_the_configure_option_that_fixes_it():
    assert "configure --with-pi --with-thrift" in THRIFT_MISSING.format(path="/x/simple_switch_grpc")


def test_the_installed_simple_switch_grpc_answers_as_its_linked_libraries_do():
    """A build with Thrift links Thrift's library; one without does not (bmv2 links it dynamically)."""
    path = find_tool("simple_switch_grpc")
    if path is None:
        pytest.skip(f"SKIPPED: needs simple_switch_grpc (not on PATH or in {toolchain.TOOLCHAIN_DIR}); "
                    f"{toolchain.INSTALL_HINT}")
    libraries = subprocess.run(["ldd", path], capture_output=True, text=True, check=True).stdout
    assert grpc_switch_has_thrift(path) == ("libthrift" in libraries)

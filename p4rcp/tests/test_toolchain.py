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


def stand_in_prefix(tmp_path: Path, monkeypatch, *, p4c: str, switch: str, grpc: str | None) -> Path:
    """A prefix of stand-ins that answer as the given builds do, and the only place tools are found."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    programs = {"p4c": f"echo 'p4c {p4c} (SHA: 0000000 BUILD: Release)'",
                "p4c-bm2-ss": f"echo \"$0\"; echo 'Version {p4c} (SHA: 0000000 BUILD: Release)'",
                "p4test": f"echo \"$0\"; echo 'Version {p4c} (SHA: 0000000 BUILD: Release)'",
                "simple_switch": f"[ \"$1\" = --version ] && {{ echo 1.15.5-693e69e6; exit 0; }}\n{switch}"}
    if grpc is not None:
        programs["simple_switch_grpc"] = f"echo 1.15.5-693e69e6\n# grpc-server-addr\n# {grpc}"
    for name, body in programs.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setattr(toolchain, "TOOLCHAIN_DIR", str(bin_dir))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    return bin_dir


def test_the_report_gives_each_program_its_version_and_build(tmp_path, monkeypatch):
    bin_dir = stand_in_prefix(tmp_path, monkeypatch, p4c="1.2.5.16", switch=f"{NO_MACROS}\n{PCAP_REFUSED}",
                              grpc="Thrift served")
    assert toolchain.toolchain_report() == [
        f"p4c 1.2.5.16 (SHA: 0000000 BUILD: Release) ({bin_dir}/p4c)",
        f"p4c-bm2-ss 1.2.5.16 (SHA: 0000000 BUILD: Release) ({bin_dir}/p4c-bm2-ss)",
        f"p4test 1.2.5.16 (SHA: 0000000 BUILD: Release) ({bin_dir}/p4test)",
        f"simple_switch 1.15.5-693e69e6 ({bin_dir}/simple_switch): speed build, logging compiled out",
        f"simple_switch_grpc 1.15.5-693e69e6 ({bin_dir}/simple_switch_grpc): P4Runtime and Thrift"]


def test_the_report_warns_of_each_missing_capability_with_the_option_that_gives_it(tmp_path, monkeypatch):
    stand_in_prefix(tmp_path, monkeypatch, p4c="1.2.3.0", switch=PCAP_REFUSED,
                    grpc="this target was compiled without Thrift support")
    notes = [line for line in toolchain.toolchain_report() if line.startswith(("WARNING", "NOTE"))]
    assert [line.split(":")[0] for line in notes] == ["NOTE"] * 3 + ["WARNING"] * 2
    assert all("older than the oldest p4c p4rcp is tested with (1.2.4.8)" in note for note in notes[:3])
    assert "--disable-logging-macros --disable-elogger" in notes[3]
    assert "built without Thrift" in notes[4] and "--with-thrift" in notes[4]


def test_the_report_says_what_a_missing_grpc_switch_skips_and_how_to_build_it(tmp_path, monkeypatch):
    stand_in_prefix(tmp_path, monkeypatch, p4c="1.2.4.8", switch=f"{NO_MACROS}\n{PCAP_REFUSED}", grpc=None)
    report = toolchain.toolchain_report()
    assert f"simple_switch_grpc: not found on PATH or in {toolchain.TOOLCHAIN_DIR}" in report
    assert report[-1].startswith("NOTE: no simple_switch_grpc") and "--with-pi --with-thrift" in report[-1]


@pytest.mark.parametrize("version, note", [
    ("1.2.4.8", None), ("1.2.5.16", None), ("1.15.5-693e69e6", "newer than the newest p4c"),
    ("1.2.4.7", "older than the oldest p4c"), ("unknown", "printed no version")])
def test_versions_outside_the_tested_releases_are_noted(version, note):
    found = toolchain.untested_version_note("p4c", version)
    assert found is None if note is None else note in found


def test_the_readme_names_the_tested_versions():
    readme = (toolchain.ROOT / "README.md").read_text()
    for project, (oldest, newest) in toolchain.TESTED_VERSIONS.items():
        assert oldest in readme and newest in readme, f"README does not name {project} {oldest} and {newest}"

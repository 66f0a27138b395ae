"""Find the P4 toolchain: on PATH first, then in the prefix's bin/ (P4_PREFIX, default /opt/p4).

p4rcp never builds p4c or bmv2 (README, "The toolchain"): it finds them. Standard library only, so
that `make deps` can use it before the project's virtual environment exists.
"""

from __future__ import annotations

import mmap
import os
import re
import shutil
import subprocess
from pathlib import Path

P4_PREFIX = os.environ.get("P4_PREFIX") or "/opt/p4"
TOOLCHAIN_DIR = str(Path(P4_PREFIX) / "bin")

# What `make build` makes of p4src/ (v1model).
ROOT = Path(__file__).resolve().parent.parent
BUILD_DIR = ROOT / "build"
BUILD_JSON = BUILD_DIR / "p4rcp.json"
BUILD_P4INFO = BUILD_DIR / "p4rcp.p4info.txtpb"
BUILD_PLAIN_JSON = BUILD_DIR / "p4rcp_plain.json"
INSTALL_HINT = ("get them from the p4lang packages ('make deps' installs them where their repository answers), "
                "a lab's toolchain archive ('make deps P4_TOOLCHAIN_ARCHIVE=FILE'), or your own build of p4c and "
                f"bmv2; put them on PATH or in {TOOLCHAIN_DIR} (P4_PREFIX=DIR for another prefix); README, "
                "'The toolchain'")

# bmv2 prints this while parsing its options when it was configured with --disable-logging-macros
# (src/bm_sim/options_parse.cpp), if a log is asked for at level debug.
_NO_LOGGING_MACROS = "You disabled logging macros when building this binary"
# ... and this, later in the same parse, for a --pcap folder that does not exist: then it exits, so the
# check starts no switch, opens no port and reads no interface.
_PCAP_REFUSED = "specified with '--pcap'"
_PROBE_DIR = "/nonexistent/p4rcp-logging-probe"


class ToolchainMissing(RuntimeError):
    pass


def find_tool(name: str) -> str | None:
    return shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), TOOLCHAIN_DIR]))


def require_tool(name: str) -> str:
    path = find_tool(name)
    if path is None:
        raise ToolchainMissing(f"{name} not found on PATH or in {TOOLCHAIN_DIR}: {INSTALL_HINT}")
    return path


def missing_tools(*names: str) -> list[str]:
    return [n for n in names if find_tool(n) is None]


def bmv2_has_logging(simple_switch: str) -> bool:
    """Whether this simple_switch was built with its logging macros (bmv2's default configuration).

    Asked of bmv2 itself: with a debug-level log requested it warns while parsing its options when the
    macros were compiled out, then exits on a --pcap folder that does not exist. RuntimeError when its
    output is not what that parse prints (not a bmv2 switch, or one whose messages changed)."""
    ran = subprocess.run([simple_switch, "--log-console", "--log-level", "debug", "--pcap", _PROBE_DIR, "--no-p4"],
                         capture_output=True, text=True, timeout=30)
    output = ran.stdout + ran.stderr
    if _PCAP_REFUSED not in output:
        raise RuntimeError(f"{simple_switch} did not answer the logging check as bmv2 does: {output.strip()[:200]!r}")
    return _NO_LOGGING_MACROS not in output


LOGGING_BUILD_WARNING = (
    "simple_switch {path} is a build with logging compiled in (bmv2's default): it takes about 1.6 times "
    "the CPU per packet of the speed build of bmv2's README ('Performance': configure "
    "--disable-logging-macros --disable-elogger), so experiments with bottlenecks above about 20 Mb/s void "
    "themselves on CPU on a 2-core machine (README, 'The toolchain')")


# bmv2 compiles this warning into simple_switch_grpc only when its configure ran without --with-thrift
# (targets/simple_switch_grpc/switch_runner.cpp, bmv2 1.13 on); such a switch opens no Thrift port. Every
# simple_switch_grpc names its P4Runtime server's option, which tells the binary from anything else.
_NO_THRIFT_MARK = b"compiled without Thrift support"
_GRPC_SWITCH_MARK = b"grpc-server-addr"

THRIFT_MISSING = (
    "{path} was built without Thrift: it opens no Thrift port, over which p4rcp reads bmv2's registers and "
    "sees that a switch is up; rebuild bmv2 with configure --with-pi --with-thrift (simple_switch_grpc "
    "leaves Thrift out unless configured --with-thrift; README, 'The toolchain')")


def grpc_switch_has_thrift(simple_switch_grpc: str) -> bool:
    """Whether this simple_switch_grpc serves bmv2's Thrift runtime beside P4Runtime.

    Read from the binary, without starting it: a build configured without Thrift carries the warning it
    would print for --thrift-port. RuntimeError when the file is not a simple_switch_grpc binary (a
    libtool wrapper of an uninstalled build, or another program)."""
    with open(simple_switch_grpc, "rb") as f:
        if os.fstat(f.fileno()).st_size > 0:
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as binary:
                if binary.find(_GRPC_SWITCH_MARK) >= 0:
                    return binary.find(_NO_THRIFT_MARK) < 0
    raise RuntimeError(f"{simple_switch_grpc} is not a simple_switch_grpc binary: it names no "
                       f"--{_GRPC_SWITCH_MARK.decode()} option")


def tool_version(name: str) -> str | None:
    """The line a tool prints for --version that holds its version, else its first (None: not installed).
    p4c's back ends print their own path on the first line and the version on the next."""
    path = find_tool(name)
    if path is None:
        return None
    ran = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    lines = [line.strip() for line in (ran.stdout + ran.stderr).strip().splitlines()]
    return next((line for line in lines if version_numbers(line)), lines[0] if lines else "?")


def bmv2_build() -> dict:
    """Which simple_switch runs the experiments: its path, version and whether it logs."""
    path = require_tool("simple_switch")
    return {"path": path, "version": tool_version("simple_switch"), "logging": bmv2_has_logging(path)}


def bmv2_build_line(build: dict) -> str:
    """One line for a newcomer: the speed build, or a warning that this one limits the experiments."""
    if build["logging"]:
        return "WARNING: " + LOGGING_BUILD_WARNING.format(path=build["path"])
    return f"simple_switch {build['version']} ({build['path']}): speed build, logging compiled out"


# The oldest and the newest release of each that p4rcp's suite passes with (README, 'The toolchain').
TESTED_VERSIONS = {"p4c": ("1.2.4.8", "1.2.5.16"), "bmv2": ("1.15.5", "1.15.5")}
# What each program is a part of, for its tested versions.
_PROJECT_OF = {"p4c": "p4c", "p4c-bm2-ss": "p4c", "p4test": "p4c", "simple_switch": "bmv2",
               "simple_switch_grpc": "bmv2"}
_VERSION = re.compile(r"\d+(?:\.\d+)+")


def version_numbers(text: str) -> tuple[int, ...] | None:
    """The first dotted version in a text: 'Version 1.2.5.16 (SHA: 6b7ec98e77)' -> (1, 2, 5, 16)."""
    found = _VERSION.search(text)
    return tuple(int(n) for n in found.group(0).split(".")) if found else None


def untested_version_note(name: str, version: str) -> str | None:
    """A note when a program's version lies outside the releases p4rcp is tested with."""
    project = _PROJECT_OF[name]
    oldest, newest = TESTED_VERSIONS[project]
    found = version_numbers(version)
    if found is None:
        return (f"{name} printed no version for --version ({version!r}); p4rcp is tested with {project} "
                f"{oldest} to {newest}")
    if found < version_numbers(oldest):
        return f"{name} {version} is older than the oldest {project} p4rcp is tested with ({oldest})"
    if found > version_numbers(newest):
        return f"{name} {version} is newer than the newest {project} p4rcp is tested with ({newest})"
    return None


def toolchain_report() -> list[str]:
    """For `make deps`: each program found, its version and what its build can do; then a WARNING for each
    capability p4rcp needs that the build lacks, naming the configure option that gives it, and a NOTE
    for what only limits the tests."""
    lines, warnings = [], []
    for name in ("p4c", "p4c-bm2-ss", "p4test", "simple_switch", "simple_switch_grpc"):
        path = find_tool(name)
        if path is None:
            lines.append(f"{name}: not found on PATH or in {TOOLCHAIN_DIR}")
            continue
        version = tool_version(name)
        if found := _VERSION.search(version):      # from the number on: 'p4c 1.2.5.16 (SHA: ...)'
            version = version[found.start():]
        line = f"{name} {version} ({path})"
        if note := untested_version_note(name, version):
            warnings.append("NOTE: " + note)
        try:
            if name == "simple_switch":
                logging = bmv2_has_logging(path)
                line += ": logging compiled in" if logging else ": speed build, logging compiled out"
                if logging:
                    warnings.append("WARNING: " + LOGGING_BUILD_WARNING.format(path=path))
            elif name == "simple_switch_grpc":
                thrift = grpc_switch_has_thrift(path)
                line += ": P4Runtime and Thrift" if thrift else ": P4Runtime only, no Thrift"
                if not thrift:
                    warnings.append("WARNING: " + THRIFT_MISSING.format(path=path))
        except RuntimeError as e:
            warnings.append(f"WARNING: could not tell which build {name} is: {e}")
        lines.append(line)
    if find_tool("simple_switch_grpc") is None:
        warnings.append("NOTE: no simple_switch_grpc: the P4Runtime driver's integration tests skip; bmv2 builds "
                        "it when configured --with-pi --with-thrift with PI installed (README, 'The toolchain')")
    return lines + warnings

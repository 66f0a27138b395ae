"""Toolchain archives (tools/toolchain_archive.py): packing, choosing and installing them.

Every archive here is a small tree of stand-in programs made in a temporary folder and
installed under a temporary root; nothing is built and /opt is never touched."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tools import toolchain_archive as ta

SYSTEM = "debian12-amd64"
TITLE = "# P4 toolchain for p4rcp — Debian 12 (bookworm), amd64"
# What bmv2's option parser prints for the logging check (p4rcp/toolchain.py, bmv2_has_logging).
BMV2_PARSE = ('case "$*" in *--pcap*) {LOGGING}echo "Directory \'/x\' specified with \'--pcap\' does not exist"; '
              'exit 1;; esac')
SPEED_BMV2 = BMV2_PARSE.format(LOGGING='echo "You disabled logging macros when building this binary; however"; ')
LOGGING_BMV2 = BMV2_PARSE.format(LOGGING="")
WORKING = {
    "simple_switch": SPEED_BMV2 + "\necho 1.15.5-693e69e6",
    "p4c": "echo 'p4c 1.2.4.8 (SHA: 32893b7e87 BUILD: Release)'",
    "p4test": "echo 'Version 1.2.4.8'",
    "simple_switch_CLI": "echo 'usage: simple_switch_CLI [-h]'",
}


def write_program(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def make_archive(folder: Path, name: str = f"p4-toolchain-bmv2-1.15.5-p4c-1.2.4.8-{SYSTEM}.tar.zst",
                 title: str = TITLE, packages: tuple[str, ...] = ("libc6",), programs: dict | None = None,
                 manifest: bool = True) -> Path:
    """An archive laid out like the ones `make toolchain-archive` makes (opt/p4/...)."""
    tree = folder / f"tree-{name}"
    prefix = tree / "opt" / "p4"
    for program, body in (programs or WORKING).items():
        write_program(prefix / "bin" / program, body)
    (prefix / "share").mkdir(parents=True)
    if manifest:
        (prefix / ta.MANIFEST).write_text(f"{title}\n\nstand-in for a test\n")
    (prefix / ta.RUNTIME_PACKAGES).write_text("\n".join(packages) + "\n")
    (tree / "opt" / "p4-tofino-include").mkdir()
    (tree / "opt" / "p4-tofino-include" / "tna.p4").write_text("// stand-in\n")
    archive = folder / name
    subprocess.run(["tar", "--zstd", "-cf", str(archive), "-C", str(tree), "opt"], check=True)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    archive.with_name(name + ".sha256").write_text(f"{digest}  {name}\n")
    return archive


@pytest.fixture
def host(tmp_path: Path) -> ta.Host:
    """A root to install into, an apt-get that logs its calls and fails, and this test's system."""
    root = tmp_path / "root"
    root.mkdir()
    apt = tmp_path / "apt-get"
    write_program(apt, f'echo "$@" >>{tmp_path}/apt.log\n'
                       'for p in "$@"; do case $p in -*|update|install) ;; '
                       '*) echo "E: Unable to locate package $p"; exit 100;; esac; done')
    return ta.Host(root=root, apt_get=(str(apt),), ldconfig=("true",), system=SYSTEM)


def installed(host: ta.Host) -> bool:
    return (host.root / "opt").exists()


def test_installs_an_archive_for_this_system(tmp_path, host, capsys):
    ta.install(make_archive(tmp_path), host)
    assert (host.root / "opt/p4/bin/simple_switch").is_file()
    assert (host.root / "opt/p4-tofino-include/tna.p4").is_file()
    err = capsys.readouterr().err
    assert "simple_switch --version: OK 1.15.5-693e69e6" in err
    assert "simple_switch_CLI --help: OK" in err
    assert not (tmp_path / "apt.log").exists(), "libc6 is installed: apt-get has nothing to do"


def test_bad_sha256_is_refused_before_anything_is_installed(tmp_path, host):
    archive = make_archive(tmp_path)
    sums = archive.with_name(archive.name + ".sha256")
    sums.write_text("0" * 64 + f"  {archive.name}\n")
    with pytest.raises(ta.ArchiveError, match="has sha256 [0-9a-f]{64}, but .* says 0{64}"):
        ta.install(archive, host)
    assert not installed(host)


def test_truncated_copy_is_refused(tmp_path, host):
    archive = make_archive(tmp_path)
    archive.write_bytes(archive.read_bytes()[:-100])
    with pytest.raises(ta.ArchiveError, match="incomplete copy"):
        ta.install(archive, host)
    assert not installed(host)


def test_archive_without_sha256_is_refused(tmp_path, host):
    archive = make_archive(tmp_path)
    archive.with_name(archive.name + ".sha256").unlink()
    with pytest.raises(ta.ArchiveError, match=r"\.sha256 is missing"):
        ta.install(archive, host)


@pytest.mark.parametrize("other", ["ubuntu22.04-amd64", "debian11-amd64", "debian12-arm64"])
def test_archive_for_another_system_is_refused(tmp_path, host, other):
    archive = make_archive(tmp_path, name=f"p4-toolchain-bmv2-1.15.5-p4c-1.2.4.8-{other}.tar.zst")
    with pytest.raises(ta.ArchiveError, match=f"built for {other}; this machine is {SYSTEM}"):
        ta.install(archive, host)
    assert not installed(host)


def test_renamed_archive_is_refused_by_its_manifest(tmp_path, host):
    archive = make_archive(tmp_path, title="# P4 toolchain for p4rcp — Ubuntu 22.04 (jammy), amd64")
    with pytest.raises(ta.ArchiveError, match="manifest says it was built for ubuntu22.04-amd64"):
        ta.install(archive, host)
    assert not installed(host)


def test_archive_name_must_carry_the_system(tmp_path, host):
    archive = make_archive(tmp_path, name="p4-toolchain.tar.zst")
    with pytest.raises(ta.ArchiveError, match="cannot say what system it is for"):
        ta.install(archive, host)


def test_archive_without_manifest_is_not_a_toolchain(tmp_path, host):
    with pytest.raises(ta.ArchiveError, match="not a toolchain archive"):
        ta.install(make_archive(tmp_path, manifest=False), host)


def test_runtime_package_that_apt_cannot_install_fails_before_extracting(tmp_path, host):
    archive = make_archive(tmp_path, packages=("libc6", "p4rcp-test-no-such-package"))
    with pytest.raises(ta.ArchiveError, match="(?s)p4rcp-test-no-such-package.*Unable to locate package"):
        ta.install(archive, host)
    assert "install -y -qq p4rcp-test-no-such-package" in (tmp_path / "apt.log").read_text()
    assert not installed(host)


def test_runtime_package_still_missing_after_apt_is_an_error(tmp_path, host):
    write_program(Path(host.apt_get[0]), "exit 0")  # says yes, installs nothing
    archive = make_archive(tmp_path, packages=("p4rcp-test-no-such-package",))
    with pytest.raises(ta.ArchiveError, match="still missing after apt-get install: p4rcp-test-no-such-package"):
        ta.install(archive, host)


@pytest.mark.parametrize("broken", ["p4test", "simple_switch_CLI"])
def test_program_that_does_not_run_fails_the_install(tmp_path, host, broken):
    programs = dict(WORKING, **{broken: "echo 'error while loading shared libraries: libgc.so.1' >&2; exit 127"})
    with pytest.raises(ta.ArchiveError, match=f"(?s)bin/{broken} .* does not run \\(exit status 127\\).*libgc"):
        ta.install(make_archive(tmp_path, programs=programs), host)


def test_missing_program_fails_the_install(tmp_path, host):
    programs = {k: v for k, v in WORKING.items() if k != "p4c"}
    with pytest.raises(ta.ArchiveError, match="bin/p4c --version does not run"):
        ta.install(make_archive(tmp_path, programs=programs), host)


def test_system_of_the_hand_built_archive_and_of_packed_ones():
    # shared/toolchain's first archive, built by hand, names its system in the same two places.
    assert ta.system_of_name(Path("p4-toolchain-bmv2-1.15.5-p4c-1.2.4.8-debian12-amd64.tar.zst")) == SYSTEM
    assert ta.system_of_manifest(TITLE + "\n\nUnpack at /") == SYSTEM
    assert ta.system_of_manifest("# P4 toolchain for p4rcp — Ubuntu 24.04, arm64\n") == "ubuntu24.04-arm64"
    with pytest.raises(ta.ArchiveError, match="does not name a system"):
        ta.system_of_manifest("# P4 toolchain\n")


def test_select_takes_the_newest_archive_for_this_system(tmp_path, host):
    older = make_archive(tmp_path, name=f"p4-toolchain-bmv2-1.15.5-p4c-1.2.4.8-{SYSTEM}.tar.zst")
    newer = make_archive(tmp_path, name=f"p4-toolchain-bmv2-1.15.5-debug-p4c-1.2.4.8-{SYSTEM}.tar.zst")
    other = make_archive(tmp_path, name="p4-toolchain-bmv2-1.15.5-p4c-1.2.4.8-ubuntu22.04-amd64.tar.zst")
    for age, path in ((300, older), (200, newer), (100, other)):
        os.utime(path, (path.stat().st_mtime - age,) * 2)
    assert ta.select(tmp_path, host) == newer
    os.utime(older, None)
    assert ta.select(tmp_path, host) == older
    assert ta.select(tmp_path / "absent", host) is None
    other_only = tmp_path / "other"
    other_only.mkdir()
    shutil.copy(other, other_only)
    assert ta.select(other_only, host) is None


def test_runtime_packages_come_from_ldd_and_dpkg(tmp_path):
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    shutil.copy(shutil.which("zstd"), prefix / "bin" / "zstd")  # an ELF program with Debian libraries
    packages = ta.runtime_packages(prefix)
    assert {"libc6", "liblzma5"} <= set(packages)
    assert set(ta.SCRIPT_PACKAGES) <= set(packages)


def installed_prefix(tmp_path: Path, switch: str = SPEED_BMV2) -> tuple[Path, Path]:
    """A prefix as an installed toolchain leaves it (stand-in programs, one real ELF file) and tna.p4's folder."""
    prefix, tna = tmp_path / "opt-p4", tmp_path / "tna-include"
    for program, body in {**WORKING, "simple_switch": switch + "\necho 1.15.5-693e69e6"}.items():
        write_program(prefix / "bin" / program, body)
    shutil.copy(shutil.which("zstd"), prefix / "bin" / "zstd")
    tna.mkdir()
    (tna / "tna.p4").write_text("// stand-in\n")
    return prefix, tna


@dataclass
class PackagesInstalledHere(ta.Host):
    """A host whose package manager is a set: what the archive's install asks for, without this machine's."""
    installed: set[str] = field(default_factory=set)

    def missing_packages(self, names: list[str]) -> list[str]:
        return [n for n in names if n not in self.installed]

    def install_packages(self, names: list[str]) -> None:
        self.installed.update(names)


def test_packed_archive_installs(tmp_path, capsys):
    """make toolchain-archive's output goes through the same install as any lab's archive."""
    prefix, tna = installed_prefix(tmp_path)
    archive = ta.pack(prefix, tna, tmp_path / "out")
    this_system = ta.Host().system_tag()
    assert archive.name == f"p4-toolchain-bmv2-1.15.5-p4c-1.2.4.8-{this_system}.tar.zst"
    manifest = (prefix / ta.MANIFEST).read_text()
    assert ta.system_of_manifest(manifest) == this_system
    assert "| p4c | `p4c 1.2.4.8 (SHA: 32893b7e87 BUILD: Release)` |" in manifest
    assert "| simple_switch | `1.15.5-693e69e6` |" in manifest
    assert "speed configuration" in manifest
    for recipe in ("cmake", "configure", "make install", "autogen", "commit"):
        assert recipe not in manifest, "the manifest records what is installed, not how it was built"
    assert "liblzma5" in (prefix / ta.RUNTIME_PACKAGES).read_text().split()

    root = tmp_path / "root"
    root.mkdir()
    host = PackagesInstalledHere(root=root, apt_get=("false",), ldconfig=("true",))
    ta.install(archive, host)
    assert "liblzma5" in host.installed
    assert (root / str(prefix).lstrip("/") / "bin" / "p4test").is_file()
    assert (root / str(tna).lstrip("/") / "tna.p4").is_file()
    assert "p4test --version: OK" in capsys.readouterr().err


def test_packed_logging_build_says_so_in_its_name_and_manifest(tmp_path):
    prefix, _ = installed_prefix(tmp_path, switch=LOGGING_BMV2)
    archive = ta.pack(prefix, None, tmp_path / "out")
    assert "-bmv2-1.15.5-logging-p4c-" in archive.name
    assert "logging compiled in" in (prefix / ta.MANIFEST).read_text()
    assert not any("tna" in name for name in ta.members(archive)), "no tna.p4 folder was given"


def test_pack_without_an_installed_toolchain_says_what_is_missing(tmp_path):
    with pytest.raises(ta.ArchiveError, match="has no simple_switch, p4c, p4test, simple_switch_CLI"):
        ta.pack(tmp_path, None, tmp_path / "out")

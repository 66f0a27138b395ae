"""Archives of the P4 toolchain: `make toolchain-archive` packs one, `make deps` installs one.

p4rcp builds no toolchain: a lab installs p4c and bmv2 once (the p4lang packages, Intel's SDE or its
own build), packs the installed prefix here, and its other machines install the archive.

An archive is `p4-toolchain-bmv2-<version>[-logging]-p4c-<version>-<distribution>-<arch>.tar.zst`
(e.g. ...-debian12-amd64.tar.zst) with `<archive>.sha256` beside it. It holds the installed
folders relative to / (the prefix, e.g. opt/p4, and optionally tna.p4's folder) and, in the
prefix's share/, TOOLCHAIN-MANIFEST.md (each program's --version, whether bmv2 logs, the runtime
packages; its title names the system it was packed on) and debian-runtime-packages.txt.

Runs with Debian's /usr/bin/python3 and the standard library only (`make deps` runs it before the
project's virtual environment exists), as a module from the repository's root:

    python3 -m tools.toolchain_archive select DIR       the newest archive in DIR for this system
    python3 -m tools.toolchain_archive install ARCHIVE  check, install the runtime packages, extract at /, try
    python3 -m tools.toolchain_archive pack --prefix /opt/p4 [--tna-include DIR] --out DIR
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from p4rcp.toolchain import bmv2_has_logging

MANIFEST = "share/TOOLCHAIN-MANIFEST.md"
RUNTIME_PACKAGES = "share/debian-runtime-packages.txt"
NAME = re.compile(r"^p4-toolchain-.+-(?P<system>[a-z]+[0-9.]+-[a-z0-9_]+)\.tar\.zst$")
TITLE = re.compile(r"^# P4 toolchain for p4rcp — (?P<name>\S+) (?P<version>[0-9.]+)(?: \([^)]*\))?, (?P<arch>\S+)\s*$")
# Each program once, so that a broken install fails `make deps` rather than a test later.
CHECKS = (("simple_switch", "--version"), ("p4c", "--version"), ("p4test", "--version"),
          ("simple_switch_CLI", "--help"))
# What the toolchain runs besides its ELF files' libraries (ldd cannot see these).
SCRIPT_PACKAGES = {
    "cpp": "p4c preprocesses P4 programs with it",
    "python3": "the p4c driver and the CLIs are Python scripts",
    "python3-thrift": "simple_switch_CLI talks Thrift",
    "python3-protobuf": "PI's Python modules",
    "python3-grpcio": "PI's Python modules",
}
CHECK_TIMEOUT_S = 60
# The programs whose --version the manifest records, where the prefix has them.
VERSIONED = ("simple_switch", "simple_switch_grpc", "p4c", "p4c-bm2-ss", "p4test")


class ArchiveError(RuntimeError):
    pass


def say(message: str) -> None:
    # Progress goes to stderr: `select` prints its answer alone on stdout.
    print(f"[toolchain] {message}", file=sys.stderr, flush=True)


@dataclass
class Host:
    """What installing touches outside the archive: the system's name, its package manager, ldconfig.

    Tests give a temporary root and stand-in commands."""

    root: Path = Path("/")
    apt_get: tuple[str, ...] = ("apt-get",)
    ldconfig: tuple[str, ...] = ("ldconfig",)
    system: str | None = None  # "<distribution><version>-<arch>"; None: this machine's

    def system_tag(self) -> str:
        if self.system is None:
            release = os_release()
            self.system = f"{release['ID']}{release['VERSION_ID']}-{dpkg_architecture()}"
        return self.system

    def missing_packages(self, names: list[str]) -> list[str]:
        installed = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Status}\\n", *names],
                                   capture_output=True, text=True).stdout
        have = {line.split()[0] for line in installed.splitlines() if line.endswith(" installed")
                and " install ok " in line}
        return [n for n in names if n not in have]

    def install_packages(self, names: list[str]) -> None:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for args in (["update", "-qq"], ["install", "-y", "-qq", *names]):
            done = subprocess.run([*self.apt_get, *args], capture_output=True, text=True, env=env)
            if done.returncode != 0:
                raise ArchiveError(f"apt-get {' '.join(args[:1])} failed: the archive's Debian runtime packages "
                                   f"{' '.join(names)} could not be installed:\n{tail(done.stdout + done.stderr)}")
        still = self.missing_packages(names)
        if still:
            raise ArchiveError(f"Debian runtime packages still missing after apt-get install: {' '.join(still)}")


def os_release() -> dict[str, str]:
    with open("/etc/os-release") as f:
        return {k: v.strip('"') for k, v in (line.rstrip("\n").split("=", 1) for line in f if "=" in line)}


def dpkg_architecture() -> str:
    return subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=True).stdout.strip()


def tail(text: str, lines: int = 15) -> str:
    return "\n".join("    " + line for line in text.strip().splitlines()[-lines:])


def system_of_name(archive: Path) -> str | None:
    match = NAME.match(archive.name)
    return match["system"] if match else None


def system_of_manifest(text: str) -> str:
    title = text.splitlines()[0] if text else ""
    match = TITLE.match(title)
    if not match:
        raise ArchiveError(f"{MANIFEST}'s first line does not name a system: {title!r}")
    return f"{match['name'].lower()}{match['version']}-{match['arch']}"


def select(directory: Path, host: Host) -> Path | None:
    """The newest archive (by modification time) in directory built for this system."""
    if not directory.is_dir():
        return None
    ours, others = [], []
    for path in sorted(directory.glob("p4-toolchain-*.tar.zst")):
        (ours if system_of_name(path) == host.system_tag() else others).append(path)
    for path in others:
        say(f"skipping {path.name}: not built for {host.system_tag()}")
    return max(ours, key=lambda p: (p.stat().st_mtime, p.name), default=None)


def check_sha256(archive: Path) -> None:
    sums = archive.with_name(archive.name + ".sha256")
    if not sums.is_file():
        raise ArchiveError(f"{sums} is missing: it holds the sha256 that {archive.name} is checked against")
    fields = sums.read_text().split()
    if len(fields) < 1 or not re.fullmatch(r"[0-9a-f]{64}", fields[0]):
        raise ArchiveError(f"{sums} does not start with a sha256")
    digest = hashlib.sha256()
    with archive.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != fields[0]:
        raise ArchiveError(f"{archive} has sha256 {digest.hexdigest()}, but {sums.name} says {fields[0]}: "
                           "an incomplete copy or another file; copy it again")


def members(archive: Path) -> list[str]:
    listed = subprocess.run(["tar", "--zstd", "-tf", str(archive)], capture_output=True, text=True)
    if listed.returncode != 0:
        raise ArchiveError(f"{archive} is not a readable .tar.zst:\n{tail(listed.stderr)}")
    return listed.stdout.splitlines()


def read_metadata(archive: Path) -> tuple[str, str, list[str]]:
    """The archive's prefix (e.g. opt/p4), its manifest and its Debian runtime packages."""
    names = members(archive)
    manifests = [n for n in names if n.endswith("/" + MANIFEST)]
    if len(manifests) != 1:
        raise ArchiveError(f"{archive.name} holds {len(manifests)} {MANIFEST} files, not one: not a toolchain archive")
    prefix = manifests[0][: -len("/" + MANIFEST)]
    packages_file = f"{prefix}/{RUNTIME_PACKAGES}"
    if packages_file not in names:
        raise ArchiveError(f"{archive.name} has no {packages_file}")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["tar", "--zstd", "-xf", str(archive), "-C", tmp, manifests[0], packages_file], check=True)
        manifest = Path(tmp, manifests[0]).read_text()
        packages = Path(tmp, packages_file).read_text().split()
    return prefix, manifest, packages


def install(archive: Path, host: Host) -> None:
    archive = archive.resolve()
    if not archive.is_file():
        raise ArchiveError(f"{archive} does not exist")
    here = host.system_tag()
    named = system_of_name(archive)
    if named is None:
        raise ArchiveError(f"{archive.name} does not end in -<distribution>-<arch>.tar.zst "
                           f"(e.g. -{here}.tar.zst), so it cannot say what system it is for")
    if named != here:
        raise ArchiveError(f"{archive.name} was built for {named}; this machine is {here}: "
                           f"use an archive packed on a {here} machine")
    check_sha256(archive)
    prefix, manifest, packages = read_metadata(archive)
    if system_of_manifest(manifest) != here:
        raise ArchiveError(f"{archive.name}'s manifest says it was built for {system_of_manifest(manifest)}; "
                           f"this machine is {here}")
    say(f"{archive.name}: sha256 matches, built for {here} like this machine")
    missing = host.missing_packages(packages)
    if missing:
        say(f"installing its Debian runtime packages: {' '.join(missing)}")
        host.install_packages(missing)
    say(f"extracting {archive.name} at {host.root}")
    untar = subprocess.run(["tar", "--zstd", "-xf", str(archive), "-C", str(host.root)], capture_output=True,
                           text=True)
    if untar.returncode != 0:
        raise ArchiveError(f"extracting {archive.name} at {host.root} failed:\n{tail(untar.stderr)}")
    subprocess.run(host.ldconfig, check=True)
    bindir = host.root / prefix / "bin"
    for program, arg in CHECKS:
        try:
            ran = subprocess.run([str(bindir / program), arg], capture_output=True, text=True,
                                 timeout=CHECK_TIMEOUT_S)
            failed = f"exit status {ran.returncode}" if ran.returncode != 0 else None
            output = ran.stdout + ran.stderr
        except (OSError, subprocess.TimeoutExpired) as error:
            failed, output = str(error), ""
        if failed:
            raise ArchiveError(f"{bindir / program} {arg} does not run ({failed}) after installing "
                               f"{archive.name}:\n{tail(output)}")
        lines = output.strip().splitlines()
        shown = next((line for line in lines if re.search(r"\d\.\d", line)), lines[0] if lines else "")
        say(f"{program} {arg}: OK {shown}")


# ---- packing -------------------------------------------------------------------------------


def is_elf(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(4) == b"\x7fELF"


def runtime_packages(prefix: Path) -> list[str]:
    """The Debian packages that hold the libraries the prefix's ELF files load (ldd + dpkg -S)."""
    libraries: set[str] = set()
    for path in sorted(prefix.rglob("*")):
        if not path.is_file() or path.is_symlink() or path.suffix in (".a", ".o") or not is_elf(path):
            continue
        linked = subprocess.run(["ldd", str(path)], capture_output=True, text=True).stdout
        for line in linked.splitlines():
            if "not found" in line:
                raise ArchiveError(f"ldd {path}: {line.strip()}: fix the build before packing it")
            match = re.search(r"=> (/\S+)", line)
            if match and not Path(match[1]).resolve().is_relative_to(prefix.resolve()):
                libraries.add(match[1])
    packages = set(SCRIPT_PACKAGES)
    for library in sorted(libraries):
        packages.add(package_of(library))
    return sorted(packages)


def package_of(library: str) -> str:
    # dpkg knows a file by the path its package installed it at, which merged /usr may hide.
    real = os.path.realpath(library)
    candidates = {library, real}
    for path in list(candidates):
        candidates.add(path[4:] if path.startswith("/usr/") else "/usr" + path)
    for path in sorted(candidates):
        found = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True)
        if found.returncode == 0:
            return found.stdout.split(":", 1)[0].split(",")[0].strip()
    raise ArchiveError(f"no Debian package holds {library} (dpkg -S): the archive could not name it")


def program_version(program: Path, pattern: str) -> str:
    out = subprocess.run([str(program), "--version"], capture_output=True, text=True).stdout
    match = re.search(pattern, out)
    if not match:
        raise ArchiveError(f"{program} --version printed {out!r}: no version in it")
    return match[1]


def version_lines(bindir: Path) -> dict[str, str]:
    """What each program of the prefix says of its version (the first line of --version)."""
    versions = {}
    for program in VERSIONED:
        path = bindir / program
        if path.is_file():
            ran = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=CHECK_TIMEOUT_S)
            lines = (ran.stdout + ran.stderr).strip().splitlines()
            versions[program] = lines[0] if lines else "(printed nothing)"
    return versions


def os_title() -> str:
    """This system as the manifest's title names it, e.g. "Debian 12 (bookworm), amd64"."""
    release = os_release()
    codename = f" ({release['VERSION_CODENAME']})" if release.get("VERSION_CODENAME") else ""
    return f"{release['NAME'].split()[0]} {release['VERSION_ID']}{codename}, {dpkg_architecture()}"


def manifest_text(title: str, prefix: Path, tna: Path | None, versions: dict[str, str], logging: bool,
                  packages: list[str], packed: str) -> str:
    rows = "\n".join(f"| {program} | `{line}` |" for program, line in versions.items())
    scripts = "; ".join(f"{p} ({why})" for p, why in SCRIPT_PACKAGES.items())
    variant = ("with its logging compiled in (bmv2's default configuration): experiments with bottlenecks above "
               "about 20 Mb/s void themselves on CPU on 2 cores" if logging else
               "the speed configuration of bmv2's README (\"Performance\"): logging macros compiled out")
    folders = f"{str(prefix).lstrip('/')}" + (f" and {str(tna).lstrip('/')}" if tna else "")
    return f"""# P4 toolchain for p4rcp — {title}

Packed by p4rcp's `make toolchain-archive` on {packed} from the toolchain installed on that
machine. Unpack at / (it holds {folders}) after installing the Debian packages listed in
{str(prefix).lstrip('/')}/{RUNTIME_PACKAGES}, then run ldconfig; `make deps` does all of this and
runs each program once.

## Programs

| program | --version |
|---|---|
{rows}

simple_switch is a build {variant} (asked of simple_switch itself).

## Debian runtime packages

ldd of every ELF file in the prefix, each library's package by dpkg -S, and what the scripts
run: {scripts}. The list is in {RUNTIME_PACKAGES}.
"""


def pack(prefix: Path, tna: Path | None, out: Path) -> Path:
    """An archive of the toolchain installed in prefix (and tna.p4's folder, if given)."""
    bindir = prefix / "bin"
    absent = [program for program, _ in CHECKS if not (bindir / program).is_file()]
    if absent:
        raise ArchiveError(f"{bindir} has no {', '.join(absent)}: install the toolchain there first "
                           "(P4_PREFIX=DIR packs another prefix)")
    if tna is not None and not (tna / "tna.p4").is_file():
        raise ArchiveError(f"{tna} has no tna.p4")
    bmv2 = program_version(bindir / "simple_switch", r"^(\d+\.\d+\.\d+)")
    p4c = program_version(bindir / "p4c", r"p4c (\d+(?:\.\d+)+)")
    logging = bmv2_has_logging(str(bindir / "simple_switch"))
    system = Host().system_tag()
    name = f"p4-toolchain-bmv2-{bmv2}{'-logging' if logging else ''}-p4c-{p4c}-{system}.tar.zst"

    say(f"finding the Debian runtime packages of {prefix} (ldd + dpkg -S)")
    packages = runtime_packages(prefix)
    (prefix / "share").mkdir(exist_ok=True)
    (prefix / RUNTIME_PACKAGES).write_text("\n".join(packages) + "\n")
    packed = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    (prefix / MANIFEST).write_text(manifest_text(os_title(), prefix, tna, version_lines(bindir), logging,
                                                 packages, packed))

    out.mkdir(parents=True, exist_ok=True)
    archive = out / name
    partial = out / (name + ".part")
    say(f"packing {prefix}{f' and {tna}' if tna else ''} into {archive}")
    folders = [str(prefix.resolve().relative_to("/"))] + ([str(tna.resolve().relative_to("/"))] if tna else [])
    subprocess.run(["tar", "-C", "/", "-I", "zstd -19 -T0", "-cf", str(partial), *folders], check=True)
    partial.rename(archive)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    archive.with_name(name + ".sha256").write_text(f"{digest}  {name}\n")
    say(f"{archive}: {archive.stat().st_size / 1e6:.1f} MB, sha256 {digest}; "
        f"'make deps P4_TOOLCHAIN_ARCHIVE={archive}' installs it")
    return archive


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("select").add_argument("directory", type=Path)
    commands.add_parser("install").add_argument("archive", type=Path)
    packing = commands.add_parser("pack")
    packing.add_argument("--prefix", type=Path, required=True, help="the installed toolchain, e.g. /opt/p4")
    packing.add_argument("--tna-include", type=Path, help="tna.p4's folder, packed too if given")
    packing.add_argument("--out", type=Path, required=True, help="where the archive goes")
    args = parser.parse_args(argv)
    try:
        if args.command == "select":
            found = select(args.directory, Host())
            if found:
                print(found)
        elif args.command == "install":
            install(args.archive, Host())
        else:
            pack(args.prefix, args.tna_include, args.out)
    except ArchiveError as error:
        print(f"[toolchain] ERROR: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

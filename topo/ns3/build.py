"""The engine's C++ module (topo/ns3/model/): compiled ahead of time with g++ against the ns3 wheel's headers
and libraries and linked with the hosts' transport (hosts/: libp4rcp_host.a, the Rust library that `make
hosts` builds, and its C headers in hosts/include/), loaded into the simulation process with cppyy.

Why ahead of time rather than with cppyy.cppdef: the per-packet code (queue disc, applications) is compiled
once with -O2, a compiler error names its file and line before anything runs, and a run does not JIT
the module again (seeds run as separate processes). The library is cached under build/ns3/ by a hash of the
sources, the hosts' library and headers, the flags and the ns-3 version, so a changed source or a rebuilt
hosts' library rebuilds it and parallel runs share it.

The wheel's pkg-config files point to paths of the machine that built it: the include and library
directories are taken from the installed package instead.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODEL_DIR = Path(__file__).resolve().parent / "model"      # the protocol classes
HELPER_DIR = Path(__file__).resolve().parent / "helper"    # what the Python driver calls to install them
SOURCE_DIRS = (MODEL_DIR, HELPER_DIR)
# The hosts' transport as a C library (hosts/src/ffi/), built by `make hosts` (cargo build --release).
HOSTS_INCLUDE_DIR = ROOT / "hosts" / "include"
HOSTS_LIBRARY = ROOT / "hosts" / "target" / "release" / "libp4rcp_host.a"
# What a Rust static library needs from the system (cargo rustc -- --print native-static-libs).
HOSTS_LIBRARY_NEEDS = ("-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc")
BUILD_DIR = ROOT / "build" / "ns3"
NS3_MODULES = ("core", "network", "internet", "traffic-control", "applications", "point-to-point")
# The wheel's own compile definitions (its lib64/cmake/ns3/ns3Targets.cmake): inline code in the headers
# must see what the libraries were built with.
DEFINES = ("NS3_BUILD_PROFILE_RELEASE", "NS3_LOG_ENABLE", "NS3_ASSERT_ENABLE")
CXXFLAGS = ("-std=c++20", "-O2", "-fPIC", "-Wall", "-Wno-unused-parameter")


class Ns3Unavailable(RuntimeError):
    """ns-3 (the ns3 wheel with cppyy) or a C++ compiler is missing: the engine cannot run."""


def unavailable() -> str | None:
    """Why the engine cannot run here, in one line, or None. Cheap: imports nothing of ns-3."""
    if importlib.util.find_spec("ns3") is None:
        return "the ns3 wheel is not installed (make deps installs it: pip install -r requirements.txt)"
    if importlib.util.find_spec("cppyy") is None:
        return "cppyy is not installed (it comes with the ns3 wheel: pip install -r requirements.txt)"
    if shutil.which(os.environ.get("CXX", "g++")) is None:
        return "no C++ compiler (g++) to build topo/ns3/model against the ns3 wheel (Debian: apt-get install g++)"
    if not HOSTS_LIBRARY.is_file():
        return f"{HOSTS_LIBRARY.relative_to(ROOT)} is missing (the hosts' transport): run 'make hosts'"
    return None


def wheel_dir() -> Path:
    spec = importlib.util.find_spec("ns3")
    if spec is None or not spec.submodule_search_locations:
        raise Ns3Unavailable(unavailable() or "the ns3 wheel is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def ns3_version() -> str:
    return importlib.metadata.version("ns3")


def _lib_name(module: str, version: str) -> str:
    return f"ns{version}-{module}"   # libns3.44-core.so


def _sources() -> list[Path]:
    return sorted(p for d in SOURCE_DIRS for p in d.glob("*.cc"))


def _headers() -> list[Path]:
    return sorted(p for d in SOURCE_DIRS for p in d.glob("*.h"))


def _hosts_headers() -> list[Path]:
    return sorted(HOSTS_INCLUDE_DIR.glob("*.h"))


def library_path() -> Path:
    """Where the module built from the current sources and hosts' library lives (built or not)."""
    h = hashlib.sha256()
    for path in _headers() + _sources() + _hosts_headers() + [HOSTS_LIBRARY]:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    h.update(" ".join(CXXFLAGS + DEFINES + (ns3_version(),)).encode())
    return BUILD_DIR / f"libp4rcp-ns3-{h.hexdigest()[:16]}.so"


def build(verbose: bool = False) -> Path:
    """The module's shared library, compiled if the sources changed since the last build."""
    why = unavailable()
    if why:
        raise Ns3Unavailable(why)
    target = library_path()
    if target.is_file():
        return target
    wheel = wheel_dir()
    lib64 = wheel / "lib64"
    version = ns3_version().split(".post")[0]
    cxx = os.environ.get("CXX", "g++")
    compile_flags = [*CXXFLAGS, f"-I{wheel / 'include'}", *(f"-I{d}" for d in (*SOURCE_DIRS, HOSTS_INCLUDE_DIR)),
                     *(f"-D{d}" for d in DEFINES)]
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=BUILD_DIR) as tmp:
        def compile_one(source: Path) -> Path:
            obj = Path(tmp) / f"{source.stem}.o"
            _run([cxx, *compile_flags, "-c", str(source), "-o", str(obj)], verbose)
            return obj
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            objects = list(pool.map(compile_one, _sources()))
        partial = Path(tmp) / target.name
        _run([cxx, "-shared", "-Wl,--no-undefined", "-o", str(partial), *map(str, objects), str(HOSTS_LIBRARY),
              f"-L{lib64}", *(f"-l{_lib_name(m, version)}" for m in NS3_MODULES), *HOSTS_LIBRARY_NEEDS,
              f"-Wl,-rpath,{lib64}"], verbose)
        os.replace(partial, target)      # atomic: a parallel build of the same sources loses nothing
    for old in BUILD_DIR.glob("libp4rcp-ns3-*.so"):
        if old != target:
            old.unlink(missing_ok=True)
    return target


def _run(command: list[str], verbose: bool) -> None:
    if verbose:
        print(" ".join(command), file=sys.stderr)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"building topo/ns3/model failed:\n{done.stderr.strip()}")


@lru_cache(maxsize=None)
def load():
    """ns-3 (the `ns` namespace of the wheel's bindings) and the module's namespace `p4rcp`, loaded once per
    process. Importing ns-3 takes seconds and hundreds of megabytes (its bindings parse the headers of every
    module)."""
    library = build()
    # The bindings search the working directory's tree for libraries; from the repository that is every
    # file below it (results/ included).
    here = os.getcwd()
    os.chdir(wheel_dir())
    try:
        from ns import ns   # noqa: F401  (the import loads every ns-3 library into cppyy)
    finally:
        os.chdir(here)
    import cppyy
    for directory in (*SOURCE_DIRS, HOSTS_INCLUDE_DIR):
        cppyy.add_include_path(str(directory))
    cppyy.load_library(str(library))
    for header in _headers():
        cppyy.include(header.name)
    return ns, cppyy.gbl.p4rcp

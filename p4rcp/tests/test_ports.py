"""The TNA and SUME ports compile with p4c's front and mid end against their architecture includes, and the
TNA program's profiles with p4c's Tofino back end (bf-p4c) for Tofino 1 and Tofino 2 where that is installed."""

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from p4rcp import dataplane as dp
from p4rcp.toolchain import BUILD_DIR, ROOT, TOOLCHAIN_DIR, find_tool


@pytest.mark.parametrize("target", ["check-tna", "check-sume"])
def test_port_compiles(target):
    # BF_P4C= : the front and mid end only; the back end is the named test below.
    result = subprocess.run(["make", "-s", target, "BF_P4C="], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    if output.startswith("SKIP"):
        pytest.skip(output.strip().splitlines()[0])
    assert "front and mid end OK" in output, output


def _bf_p4c() -> str | None:
    """As the Makefile finds it: BF_P4C, else on PATH, in P4_PREFIX/bin or $SDE_INSTALL/bin."""
    sde = os.environ.get("SDE_INSTALL")
    return os.environ.get("BF_P4C") or find_tool("bf-p4c") or (sde and find_tool(os.path.join(sde, "bin", "bf-p4c")))


def _makefile_profiles() -> list[str]:
    [line] = [l for l in (ROOT / "Makefile").read_text().splitlines() if l.startswith("RCP_PROFILES ?=")]
    return line.split("?=")[1].split()


def _p4_profiles() -> dict[str, set[str]]:
    """profiles.p4's profiles, each with the RCP_ features its branch defines (core: the fall-through)."""
    source = (ROOT / "p4src" / "shared" / "profiles.p4").read_text()
    found = {}
    branches = re.findall(r"^#(?:el)?if (.*?)\n(.*?)(?=^#(?:elif|else|endif))", source, re.MULTILINE | re.DOTALL)
    for condition, body in branches:
        [name] = re.findall(r"defined\(RCP_PROFILE_(\w+)\)", condition)
        found[name.lower()] = {f.lower() for f in re.findall(r"^#define RCP_(\w+)$", body, re.MULTILINE)}
    return found


def test_the_makefile_and_the_control_plane_know_exactly_the_librarys_profiles():
    assert _makefile_profiles() == list(dp.PROFILE_FEATURES)
    assert _p4_profiles() == {name: set(features) for name, features in dp.PROFILE_FEATURES.items()}


# A stand-in for bf-p4c: deletes the *.log files in its output folder first, as bf-p4c's precleaner does,
# then writes the logs of a compile whose stage count is the profile's position in the Makefile's list, in
# the shape tools/tests/test_tna_resources.py documents.
FAKE_BF_P4C = textwrap.dedent("""\
    import json, sys, pathlib
    args = sys.argv[1:]
    out = pathlib.Path(args[args.index("-o") + 1])
    for log in out.glob("*.log"):
        log.unlink()
    profile = next(a for a in args if a.startswith("-DRCP_PROFILE_"))[len("-DRCP_PROFILE_"):].lower()
    n = PROFILES.index(profile) + 1
    stage = lambda i: {"stage_number": i, "meter_alus": {"nAlus": 4, "meters": [{"row": 0}]},
                       "logical_tables": {"size": 16, "ids": [{"id": 0}]}}
    (out / "pipe" / "logs").mkdir(parents=True)
    (out / "pipe" / "logs" / "resources.json").write_text(json.dumps({"compiler_version": "0.0 (fake)",
        "resources": {"mau": {"nStages": 12, "mau_stages": [stage(i) for i in range(n)]}}}))
    (out / "pipe" / "logs" / "phv.json").write_text(json.dumps({"containers": []}))
    print("compiled", profile)
    """)


def test_check_tna_backend_compiles_every_profile_for_every_target_and_tabulates_them(tmp_path):
    """The Makefile's loop, with a stand-in compiler: every profile and target compiled with its -D, and the
    profiles' table last in the output, where the record of `make check-tna-backend` keeps it."""
    profiles = _makefile_profiles()
    fake = tmp_path / "bf-p4c"
    fake.write_text(f"#!{sys.executable}\nPROFILES = {profiles!r}\n" + FAKE_BF_P4C)
    fake.chmod(0o755)
    result = subprocess.run(["make", "-s", "check-tna-backend", f"BF_P4C={fake}", f"BUILD={tmp_path / 'build'}"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    tail = output.strip().splitlines()[-len(profiles) * 2 - 2:]
    assert tail[0].startswith("| profile | target | stages |"), output
    for i, profile in enumerate(profiles):
        for target in ("Tofino 1", "Tofino 2"):
            assert any(line.startswith(f"| {profile} | {target} | {i + 1} of 12 | ") for line in tail), (profile, tail)
    found = json.loads((tmp_path / "build" / "tna" / "profiles.json").read_text())
    assert list(found) == profiles and all(set(t) == {"tofino", "tofino2"} for t in found.values())


# The TNA program's targets on Tofino 1 (docs/porting.md, "Profiles"): RCP alone leaves most of the pipeline
# to a host program; every feature together fits where the program always did.
CORE_MAX_STAGES, CORE_MAX_STATEFUL_ALUS, FULL_MAX_STAGES = 4, 4, 12


@pytest.mark.parametrize("target, arch", [("tofino", "tna"), ("tofino2", "t2na")])
def test_the_core_and_full_profiles_compile_with_the_tofino_back_end_within_their_targets(target, arch, tmp_path):
    bf_p4c = _bf_p4c()
    if bf_p4c is None:
        pytest.skip(f"SKIPPED: bf-p4c (p4c's Tofino back end) not found on PATH, in {TOOLCHAIN_DIR} or "
                    "$SDE_INSTALL/bin, and BF_P4C is not set (README, 'The toolchain')")
    result = subprocess.run(["make", "-s", "check-tna-backend", f"BF_P4C={bf_p4c}", f"BUILD={tmp_path}",
                             f"TNA_BACKEND_TARGETS={target}:{arch}", "RCP_PROFILES=core full"],
                            cwd=ROOT, capture_output=True, text=True, timeout=3600)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    found = json.loads((tmp_path / "tna" / "profiles.json").read_text())
    core, full = found["core"][target], found["full"][target]
    if target == "tofino":
        assert core["stages"][0] <= CORE_MAX_STAGES and core["stateful ALUs"][0] <= CORE_MAX_STATEFUL_ALUS, core
        assert full["stages"][0] <= FULL_MAX_STAGES, full
    assert core["stages"][0] < full["stages"][0], (core, full)

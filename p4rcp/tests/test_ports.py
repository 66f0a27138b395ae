"""The TNA and SUME ports compile with p4c's front and mid end against their architecture includes, and the
TNA program with p4c's Tofino back end (bf-p4c) for Tofino 1 and Tofino 2 where that is installed."""

import os
import subprocess

import pytest

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


@pytest.mark.parametrize("target, arch", [("tofino", "tna"), ("tofino2", "t2na")])
def test_tna_program_compiles_with_the_tofino_back_end(target, arch):
    bf_p4c = _bf_p4c()
    if bf_p4c is None:
        pytest.skip(f"SKIPPED: bf-p4c (p4c's Tofino back end) not found on PATH, in {TOOLCHAIN_DIR} or "
                    "$SDE_INSTALL/bin, and BF_P4C is not set (README, 'The toolchain')")
    result = subprocess.run(["make", "-s", "check-tna-backend", f"BF_P4C={bf_p4c}",
                             f"TNA_BACKEND_TARGETS={target}:{arch}"],
                            cwd=ROOT, capture_output=True, text=True, timeout=1800)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert f"check-tna: {target}: back end OK" in output, output
    summary = (BUILD_DIR / "tna" / f"{target}.resources.md").read_text()
    assert f"| stages | " in summary, summary

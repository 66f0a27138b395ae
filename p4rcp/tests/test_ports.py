"""The TNA and SUME ports compile with p4c's front and mid end against their architecture includes."""

import subprocess

import pytest

from p4rcp.toolchain import ROOT


@pytest.mark.parametrize("target", ["check-tna", "check-sume"])
def test_port_compiles(target):
    result = subprocess.run(["make", "-s", target], cwd=ROOT, capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    if output.startswith("SKIP"):
        pytest.skip(output.strip().splitlines()[0])
    assert "front and mid end OK" in output, output

"""Runs the PTF suite (ptf_tests/tests) against simple_switch as part of `make test`."""

import subprocess
import sys

from p4rcp.testing import require_toolchain
from p4rcp.toolchain import ROOT


def test_ptf_suite_passes():
    require_toolchain("simple_switch")
    result = subprocess.run([sys.executable, "-m", "ptf_tests.run"], cwd=ROOT, capture_output=True, text=True,
                            timeout=600)
    print(result.stdout[-20000:], result.stderr[-20000:])
    assert result.returncode == 0, f"PTF suite failed:\n{result.stderr[-5000:]}"

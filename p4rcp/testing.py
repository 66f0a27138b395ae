"""pytest helpers shared by the test suites: loud skips when the toolchain or root is missing."""

from __future__ import annotations

import os

import pytest

from p4rcp.toolchain import BUILD_JSON, INSTALL_HINT, TOOLCHAIN_DIR, missing_tools


def require_toolchain(*tools: str) -> None:
    """Skip the calling test, naming what is missing, unless the tools, root and the build are there."""
    missing = missing_tools(*tools)
    if missing:
        pytest.skip(f"SKIPPED: needs {', '.join(missing)} (not on PATH or in {TOOLCHAIN_DIR}); {INSTALL_HINT}")
    if os.geteuid() != 0:
        pytest.skip("SKIPPED: needs root (veth pairs, simple_switch on raw interfaces)")
    if not BUILD_JSON.is_file():
        if missing_tools("p4c-bm2-ss"):
            pytest.skip(f"SKIPPED: needs p4c-bm2-ss to build {BUILD_JSON.name} (not on PATH or in {TOOLCHAIN_DIR}); "
                        f"{INSTALL_HINT}")
        pytest.fail(f"{BUILD_JSON} is missing although p4c is installed: run 'make build'")

"""pytest helpers shared by the test suites: loud skips when the toolchain or root is missing."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import pytest

from p4rcp.toolchain import (BUILD_JSON, INSTALL_HINT, THRIFT_MISSING, TOOLCHAIN_DIR, find_tool,
                             grpc_switch_has_thrift, missing_tools)


def require_toolchain(*tools: str) -> None:
    """Skip the calling test, naming what is missing, unless the tools, root and the build are there
    (and, for simple_switch_grpc, its Thrift server)."""
    missing = missing_tools(*tools)
    if missing:
        pytest.skip(f"SKIPPED: needs {', '.join(missing)} (not on PATH or in {TOOLCHAIN_DIR}); {INSTALL_HINT}")
    # p4rcp starts every switch, simple_switch_grpc too, with a Thrift port to reach it by.
    if "simple_switch_grpc" in tools and not grpc_switch_has_thrift(grpc := find_tool("simple_switch_grpc")):
        pytest.skip("SKIPPED: " + THRIFT_MISSING.format(path=grpc))
    if os.geteuid() != 0:
        pytest.skip("SKIPPED: needs root (veth pairs, simple_switch on raw interfaces)")
    if not BUILD_JSON.is_file():
        if missing_tools("p4c-bm2-ss"):
            pytest.skip(f"SKIPPED: needs p4c-bm2-ss to build {BUILD_JSON.name} (not on PATH or in {TOOLCHAIN_DIR}); "
                        f"{INSTALL_HINT}")
        pytest.fail(f"{BUILD_JSON} is missing although p4c is installed: run 'make build'")


def wait_for(cond: Callable[[], object], timeout: float, message: str, poll_s: float = 0.05) -> None:
    """Return once cond() holds; raise AssertionError(message) if it still does not after timeout seconds."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(message)
        time.sleep(poll_s)

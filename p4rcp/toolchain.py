"""Find the P4 toolchain: on PATH first, then under /opt/p4/bin."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

TOOLCHAIN_DIR = "/opt/p4/bin"

# What `make build` makes of p4src/ (v1model).
ROOT = Path(__file__).resolve().parent.parent
BUILD_DIR = ROOT / "build"
BUILD_JSON = BUILD_DIR / "p4rcp.json"
BUILD_P4INFO = BUILD_DIR / "p4rcp.p4info.txtpb"
BUILD_PLAIN_JSON = BUILD_DIR / "p4rcp_plain.json"
INSTALL_HINT = ("run 'make deps' (it installs a toolchain archive or the p4lang packages, or says how), "
                f"or put the binaries on PATH or in {TOOLCHAIN_DIR}")


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

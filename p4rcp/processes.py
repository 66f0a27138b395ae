"""Stopping the child processes a run started."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable


def stop_processes(procs: Iterable[subprocess.Popen], grace_s: float = 5.0) -> None:
    """SIGTERM to all first (they wind down together), then SIGKILL any still running after grace_s."""
    procs = list(procs)
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

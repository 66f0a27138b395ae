"""Runs for the end-to-end tests: a run the machine voided (its CPU, other work, an input overrun, a stall:
p4rcp/monitor.py MACHINE_CAUSES) says nothing about p4rcp, so it is run again, and the test is skipped, naming
the causes, when every attempt was void; a run void for any other cause fails the test."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

import pytest

from p4rcp.monitor import MACHINE_CAUSES
from topo.mininet.runner import RunOptions, run_scheme
from topo.schedule import RunDir

ATTEMPTS = 3


@contextlib.contextmanager
def beside(act):
    """act(stop) on a thread of its own while the body runs (what a test does to a run meanwhile); when the body
    ends, stop (a threading.Event) is set and the thread joined."""
    stop = threading.Event()
    thread = threading.Thread(target=act, args=(stop,))
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def machine_limited(meta: dict) -> bool:
    """Void, and only for the machine's causes."""
    return not meta["valid"] and bool(meta["void_causes"]) and set(meta["void_causes"]) <= MACHINE_CAUSES


def valid_run(exp, variant, scheme: str, root: Path, options: RunOptions = RunOptions(), attempts: int = ATTEMPTS,
              during=None) -> tuple[dict, RunDir]:
    """A valid run of `scheme` in root/attempt-N (the first valid of `attempts`), its metadata and directory.
    `during(out)`, if given, is entered around each attempt (a context manager factory: what a test does to
    the run while it runs)."""
    voided = []
    for attempt in range(1, attempts + 1):
        out = RunDir(root / f"attempt-{attempt}")
        if during is None:
            meta = run_scheme(exp, variant, scheme, out, options=options)
        else:
            with during(out):
                meta = run_scheme(exp, variant, scheme, out, options=options)
        if meta["valid"]:
            return meta, out
        assert machine_limited(meta), f"run void, not for the machine: {meta['problems']}"
        voided.append("; ".join(meta["problems"]))
    pytest.skip(f"SKIPPED: the machine voided all {attempts} runs: " + " | ".join(voided))

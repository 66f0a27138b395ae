"""What the runner is doing, on stderr, whichever engine runs the experiment."""

from __future__ import annotations

import sys
import threading
import time


class Progress:
    """What the runner is doing, on stderr: run k of N, the run's time, the time left, what drains.

    Never silent for more than HEARTBEAT_S: a thread repeats the current line (with the time spent in its
    phase) while set-up, checks or the report take long. On a terminal the line is rewritten in place."""
    HEARTBEAT_S = 5.0

    def __init__(self, total_runs: int, run_estimate_s: float = 0.0):
        self.total, self.done, self.run_estimate_s = total_runs, 0, run_estimate_s
        self.started = time.monotonic()
        self._line, self._since, self._printed = "", time.monotonic(), 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._heartbeat, daemon=True)
        self._thread.start()

    def _left_s(self) -> float:
        elapsed = time.monotonic() - self.started
        per_run = elapsed / self.done if self.done else self.run_estimate_s
        return max(0.0, per_run * self.total - elapsed)

    def _show(self, line: str, force: bool = False) -> None:
        with self._lock:
            self._line = line
            now = time.monotonic()
            if sys.stderr.isatty():
                sys.stderr.write("\r" + line.ljust(110)[:160])
            elif force or now - self._printed >= self.HEARTBEAT_S:
                sys.stderr.write(line + "\n")
                self._printed = now
            else:
                return
            self._printed = now
            sys.stderr.flush()

    def _heartbeat(self) -> None:
        while not self._stop.wait(1.0):
            with self._lock:
                quiet = time.monotonic() - self._printed
                line, since = self._line, self._since
            if line and quiet >= self.HEARTBEAT_S:
                self._show(f"{line} ({time.monotonic() - since:.0f} s)", force=True)

    def _prefix(self) -> str:
        k = min(self.done + 1, self.total)
        if not self.done and not self.run_estimate_s:      # the ns-3 engine: no estimate before a run ends
            return f"run {k} of {self.total}, time left known after the first run"
        return f"run {k} of {self.total}, about {self._left_s() / 60:.0f} min left"

    def phase(self, what: str) -> None:
        """A step without a clock of its own: building the network, checking a run, writing the report."""
        self._since = time.monotonic()
        if sys.stderr.isatty():
            sys.stderr.write("\n")
        self._show(f"{self._prefix()}: {what}", force=True)

    def tick(self, label: str, elapsed: float, duration: float, running: int, flows_left: int, cpu: float) -> None:
        if elapsed <= duration:
            state = f"{elapsed:5.1f}/{duration:.0f} s, senders running {running}"
        else:
            state = f"{duration:.0f}/{duration:.0f} s, draining: {flows_left} flows left ({elapsed - duration:.0f} s)"
        self._since = time.monotonic()
        self._show(f"{self._prefix()}: [{label}] {state}, cpu {cpu:3.0f}%")

    def run_done(self) -> None:
        self.done += 1

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        if sys.stderr.isatty():
            sys.stderr.write("\n")

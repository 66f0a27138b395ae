"""Whether the machine, not the network, limited a run: CPU samples, other processes, bmv2's unread input.

A run is INVALID when any of these says so (docs/experiments.md, "Valid runs"). The engine says how many
frames each switch has not read yet (Monitor.unread; on Mininet, topo/mininet/network.py's InputCounts).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

# A run is INVALID when the machine, not the network, limited it.
CPU_SATURATED_PCT = 95.0        # total CPU, all cores
SWITCH_SATURATED_PCT = 95.0     # one simple_switch, of one core
SATURATED_SAMPLE_SHARE = 0.10   # share of samples above those
OTHER_WORK_PCT = 20.0           # processes that are not this run's, in % of one core: the machine is shared
INPUT_DROP_SHARE = 0.001        # frames the kernel delivered but bmv2 never read
CPU_SAMPLE_S = 0.5
MEMORY_SAMPLE_S = 60.0          # resident memory of every process of the run, this often (and at the start)

# Why a run is void, as run.json's void_causes names it. The machine's causes (MACHINE_CAUSES) say nothing
# about the protocol: a test may run such a run again; the others are faults of what the run started.
CPU = "cpu"                      # the CPU saturated (total, or one switch's core)
OTHER_WORK = "other work"        # processes that are not the run's took the machine
OVERRUN = "input overrun"        # bmv2 did not read frames the kernel delivered
STALL = "stall"                  # the switch or its input stood still, then took a burst (p4rcp/stalls.py)
SWITCH_DIED = "switch died"      # a simple_switch exited during the run
HOST = "host program"            # a host program failed, or a long flow did not complete
MACHINE_CAUSES = frozenset({CPU, OTHER_WORK, OVERRUN, STALL})


@dataclass
class Monitor:
    """Samples CPU (total, stolen by the hypervisor, per process) and the frames each switch has not read yet,
    and tracks the processes it is told about.

    Each sample goes to samples_path (JSON lines) as it is taken, and only tallies stay in memory: an hour's run
    holds as little as a minute's."""
    switch_pids: dict[str, int]
    unread: Callable[[], dict[str, int]] = dict     # per switch: frames the kernel delivered, minus those bmv2 read
    samples_path: Path | None = None
    host_pids: list[int] = field(default_factory=list)
    _host_procs: dict[int, psutil.Process] = field(default_factory=dict)
    _other_procs: dict[int, psutil.Process] = field(default_factory=dict)
    other_work: dict[str, int] = field(default_factory=dict)    # name -> samples in which it was busy
    # The run's processes by label ("s1 simple_switch", "r1 receiver", ...), whose resident memory is sampled
    # every memory_every_s into `memory` (None: not sampled).
    memory_pids: Callable[[], dict[str, int]] | None = None
    memory_every_s: float = MEMORY_SAMPLE_S
    memory: list[dict] = field(default_factory=list)
    last_total_pct: float = 0.0
    _tally: "SampleTally" = field(default_factory=lambda: SampleTally())
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> "Monitor":
        psutil.cpu_percent()
        psutil.cpu_times_percent()
        self._procs = {name: psutil.Process(pid) for name, pid in self.switch_pids.items()}
        for proc in self._procs.values():
            proc.cpu_percent()
        self._file = open(self.samples_path, "w") if self.samples_path is not None else None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        try:
            self._sample_until_stopped()
        finally:
            if self._file is not None:
                self._file.close()

    def _sample_until_stopped(self):
        started = next_memory = time.monotonic()
        while not self._stop.wait(CPU_SAMPLE_S):
            if self.memory_pids is not None and time.monotonic() >= next_memory:
                self._sample_memory(time.monotonic() - started)
                next_memory += self.memory_every_s
            sample = {"time": time.time(), "total_pct": psutil.cpu_percent(),
                      "steal_pct": psutil.cpu_times_percent().steal}
            for name, proc in self._procs.items():
                try:
                    sample[f"{name}_pct"] = proc.cpu_percent()
                except psutil.Error:
                    sample[f"{name}_pct"] = None
            sample["hosts_pct"] = self._hosts_pct()
            sample["other_pct"] = self._others_pct()
            sample.update({f"{name}_unread": n for name, n in self.unread().items()})
            self._tally.add(sample, self.switch_pids)
            self.last_total_pct = sample["total_pct"]
            if self._file is not None:
                self._file.write(json.dumps(sample) + "\n")

    def _sample_memory(self, elapsed_s: float) -> None:
        """Resident memory (bytes) of each labelled process still running."""
        rss = {}
        for label, pid in self.memory_pids().items():
            try:
                rss[label] = psutil.Process(pid).memory_info().rss
            except psutil.Error:
                pass
        self.memory.append({"time": time.time(), "elapsed_s": round(elapsed_s, 1), "rss_bytes": rss})

    def _hosts_pct(self) -> float:
        """CPU of the host programs (senders, receivers, link emulators), in % of a core.

        psutil measures CPU between two calls on the same Process object, so the objects are kept: a fresh
        one reports 0 on its first call. (Mininet's popen execs the program itself: no children to scan.)
        """
        total = 0.0
        for pid in list(self.host_pids):
            try:
                if pid not in self._host_procs:
                    self._host_procs[pid] = psutil.Process(pid)
                total += self._host_procs[pid].cpu_percent()
            except psutil.Error:
                self.host_pids.remove(pid)
                self._host_procs.pop(pid, None)
        return total

    def _others_pct(self) -> float:
        """CPU of user processes that are not this run's (the runner and everything it started), in % of a
        core: other work on the machine competes with the emulation. Kernel threads count as the run's (they
        carry its packets)."""
        ours = {os.getpid(), *(p.pid for p in psutil.Process().children(recursive=True))}
        total = 0.0
        seen = set()
        for proc in psutil.process_iter(["ppid"]):
            if proc.pid in ours or proc.pid == 2 or proc.info["ppid"] == 2:
                continue
            seen.add(proc.pid)
            known = self._other_procs.setdefault(proc.pid, proc)
            try:
                pct = known.cpu_percent()
                if pct >= OTHER_WORK_PCT:
                    self.other_work[known.name()] = self.other_work.get(known.name(), 0) + 1
                total += pct
            except psutil.Error:
                self._other_procs.pop(proc.pid, None)
        for pid in self._other_procs.keys() - seen:         # exited: kept, they would pile up over a long run
            del self._other_procs[pid]
        return total

    def stop(self):
        self._stop.set()
        self._thread.join(2)

    def backlog_peak(self, switch: str) -> str:
        """When the switch fell furthest behind, and what the machine did then: for an overrun's message."""
        if switch not in self._tally.peak_unread:
            return ""
        sample = self._tally.peak_unread[switch]
        return (f"; most unread, {sample[f'{switch}_unread']} frames, at {sample['time'] - self._tally.first_time:.1f} s: "
                f"total CPU {sample['total_pct']:.0f}%, stolen {sample['steal_pct']:.0f}%, "
                f"{switch} {sample.get(f'{switch}_pct') or 0:.0f}%")

    def verdict(self) -> list[str]:
        return [message for _, message in self.findings()]

    def findings(self) -> list[tuple[str, str]]:
        """What voids the run, each as (cause, message): causes OTHER_WORK and CPU, both the machine's."""
        problems = []
        tally = self._tally
        n = tally.samples
        if n == 0:
            return problems
        busy = tally.other_busy
        if busy / n > SATURATED_SAMPLE_SHARE:
            names = ", ".join(sorted(self.other_work, key=self.other_work.get, reverse=True)[:3])
            problems.append((OTHER_WORK, f"other processes used >= {OTHER_WORK_PCT:.0f}% of a core in {busy}/{n} "
                                         f"samples (the machine was not this run's alone: {names})"))
        hot = tally.total_hot
        if hot / n > SATURATED_SAMPLE_SHARE:
            problems.append((CPU, f"total CPU >= {CPU_SATURATED_PCT:.0f}% in {hot}/{n} samples"))
        for name in self.switch_pids:
            busy = tally.switch_busy.get(name, 0)
            if busy / n > SATURATED_SAMPLE_SHARE:
                problems.append((CPU, f"simple_switch {name} >= {SWITCH_SATURATED_PCT:.0f}% of a core in "
                                      f"{busy}/{n} samples"))
        return problems


@dataclass
class SampleTally:
    """What the verdict needs of the CPU samples, counted as they come."""
    samples: int = 0
    first_time: float = 0.0
    other_busy: int = 0              # samples in which other processes used >= OTHER_WORK_PCT
    total_hot: int = 0               # samples with the total CPU >= CPU_SATURATED_PCT
    switch_busy: dict[str, int] = field(default_factory=dict)       # per switch, samples >= SWITCH_SATURATED_PCT
    peak_unread: dict[str, dict] = field(default_factory=dict)      # per switch, the sample with the most unread

    def add(self, sample: dict, switches: dict[str, int]) -> None:
        if self.samples == 0:
            self.first_time = sample["time"]
        self.samples += 1
        self.other_busy += sample["other_pct"] >= OTHER_WORK_PCT
        self.total_hot += sample["total_pct"] >= CPU_SATURATED_PCT
        for name in switches:
            self.switch_busy[name] = self.switch_busy.get(name, 0) + ((sample.get(f"{name}_pct") or 0)
                                                                      >= SWITCH_SATURATED_PCT)
            unread = sample.get(f"{name}_unread")
            peak = self.peak_unread.get(name)
            if unread is not None and (peak is None or unread > peak[f"{name}_unread"]):
                self.peak_unread[name] = sample

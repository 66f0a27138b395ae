"""Stalls of the machine under a run, found in the control loop's per-interval records.

A stall: the switch (or the path into it) stood still for a moment, and the frames that arrived meanwhile
reached its queue at once, a burst that no sender made. On a shared 2-core machine it happens when the
switch's process, or the whole machine, does not get a core for tens of milliseconds; a queue of one
bandwidth-delay product can then overflow under a protocol that keeps it empty (an end-to-end run once saw a
control read take 22 ms, the switch's input stop and 78 frames arrive at once at a 63-packet queue, which
dropped 22). Such a run measured the machine, not the protocol: the runner voids it, naming the stall
(topo/mininet/runner.py; docs/experiments.md, "Valid runs").

Two signs, from the records of control_SWITCH.jsonl (docs/control_plane.md, "Log records"), each enough:

- a late answer: the switch answered a control read (``answer_s``) more than ``threshold_s`` after it was
  sent, while the port carried traffic. The switch's Thrift thread answers within a millisecond or two
  when its process runs; a read that waits longer waited for the whole process, which forwarded nothing
  meanwhile either;
- a gap and a burst: on a port carrying traffic (at least MIN_LOAD_SHARE of its capacity over the last
  RECENT_S), an interval whose input fell below GAP_SHARE of that recent rate, then, in the next
  interval, frames beyond what the port serves in it, at least BURST_QUEUE_SHARE of its queue. This one
  sees a stall of the input alone (the switch's receive thread, the link emulators, the kernel) while
  the switch still answered.

The threshold, from the queue and the loop's period: the frames that arrive while the switch stands still
reach its queue together, sent at up to the senders' NIC rate, a times the port's capacity C (the
topology's access_speedup), so a stall of Q / (2 a C) fills half of a Q-packet queue; a read answered
later than one loop period T_max is needed to say anything (a late start of up to about a period is the
machine's ordinary scheduling noise: docs/control_plane.md, "Timing"):

    threshold_s = max(T_max, Q / (2 a C_pps))

For the end-to-end test's link (10 Mb/s, 1160 frames/s, Q = 64, a = 2): 13.8 ms; fct-short's (15 Mb/s,
Q = 348): 50 ms.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

GAP_SHARE = 0.25          # an interval whose input fell below this share of the port's recent input rate
BURST_QUEUE_SHARE = 0.5   # then this share of the queue, beyond what the port serves, in one interval
MIN_LOAD_SHARE = 0.25     # "carrying traffic": the recent input at least this share of the capacity
RECENT_S = 0.5            # the window of the port's recent input rate
MERGE_S = 0.1             # signs of one switch this close together are one stall


@dataclass(frozen=True)
class PortLimits:
    """What a stall of a port is measured against: its capacity in frames per second, its queue (frames),
    the senders' NIC rate as a multiple of the capacity, the loop's longest period."""
    C_pps: float
    queue_pkts: int
    access_speedup: float = 1.0
    T_max_s: float = 0.010

    @property
    def threshold_s(self) -> float:
        """The longest the switch may take to answer a read: max(T_max, Q / (2 a C))."""
        return max(self.T_max_s, self.queue_pkts / (2 * self.access_speedup * self.C_pps))

    @property
    def burst_pkts(self) -> float:
        return BURST_QUEUE_SHARE * self.queue_pkts


@dataclass(frozen=True)
class Stall:
    switch: str
    port: int
    at_unix_s: float          # the record's time: when the read that saw it was answered
    kind: str                 # "late answer" or "gap and burst"
    what: str                 # in words, with the numbers and the threshold

    def describe(self, start_unix_s: float | None = None) -> str:
        when = f" {self.at_unix_s - start_unix_s:.1f} s into the run" if start_unix_s is not None else ""
        return f"{self.switch} stalled{when}: {self.what}"


def find_stalls(records: Iterable[dict], limits: dict[tuple[str, int], PortLimits]) -> list[Stall]:
    """The stalls the records of one run show, in time order. `records`: the control loop's per-port interval
    records (any switches); `limits`: the ports to look at. A stall seen on several ports of a switch, or by
    both signs, is one stall: one per switch and read."""
    by_port: dict[tuple[str, int], list[dict]] = {}
    for r in records:
        key = (r["switch"], r["port"])
        if key in limits:
            by_port.setdefault(key, []).append(r)
    found: list[Stall] = []
    for (switch, port), series in sorted(by_port.items()):
        series.sort(key=lambda r: r["time"])
        lim = limits[switch, port]
        for i, r in enumerate(series):
            late = r.get("answer_s")
            busy = r["input_packets"] > 0 or (i + 1 < len(series) and series[i + 1]["input_packets"] > 0)
            if late is not None and late > lim.threshold_s and busy:
                found.append(Stall(
                    switch, port, r["time"], "late answer",
                    f"it answered a control read after {late * 1000:.0f} ms, while port {port} carried traffic "
                    f"(above {lim.threshold_s * 1000:.1f} ms, the stall that fills half of its "
                    f"{lim.queue_pkts}-packet queue at {lim.access_speedup:g} x its capacity)"))
            burst = _gap_then_burst(series, i, lim)
            if burst is not None:
                found.append(Stall(switch, port, r["time"], "gap and burst", burst))
    merged: list[Stall] = []
    for stall in sorted(found, key=lambda s: s.at_unix_s):
        if not any(m.switch == stall.switch and stall.at_unix_s - m.at_unix_s < MERGE_S for m in merged[-4:]):
            merged.append(stall)
    return merged


def _gap_then_burst(series: list[dict], i: int, lim: PortLimits) -> str | None:
    """Whether interval i is a burst right after a gap on a port that carried traffic, in words."""
    if i < 2:
        return None
    burst, gap = series[i], series[i - 1]
    excess = burst["input_packets"] - lim.C_pps * burst["period_s"]
    if excess < lim.burst_pkts:
        return None
    recent = [r for r in series[:i - 1] if r["time"] >= gap["time"] - gap["period_s"] - RECENT_S]
    seconds = sum(r["period_s"] for r in recent)
    if seconds < RECENT_S / 2:
        return None
    rate_pps = sum(r["input_packets"] for r in recent) / seconds
    if rate_pps < MIN_LOAD_SHARE * lim.C_pps or gap["input_packets"] > GAP_SHARE * rate_pps * gap["period_s"]:
        return None
    return (f"port {burst['port']}'s input stopped for {gap['period_s'] * 1000:.0f} ms ({gap['input_packets']} "
            f"frames where {rate_pps * gap['period_s']:.0f} were due), then {burst['input_packets']} frames arrived "
            f"in {burst['period_s'] * 1000:.0f} ms, {excess:.0f} more than the port serves (a burst of "
            f"{BURST_QUEUE_SHARE:.0%} of its {lim.queue_pkts}-packet queue or more)")

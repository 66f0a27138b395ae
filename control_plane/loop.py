"""The periodic RCP loop for one switch: counters in, R(t) out, one record per port and interval."""

from __future__ import annotations

import gc
import logging
import os
import random
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from control_plane.driver import Driver, PortCounters, SwitchUnavailable
from p4rcp import dataplane as dp
from p4rcp.params import RcpParams
from p4rcp.police import police_allowance, police_limit
from p4rcp.rcp_law import (classic_drop_probability, persistent_queue, rcp_feedforward, rcp_grant_packets,
                            rcp_overload_floor, rcp_rate, rcp_syn_rates, rcp_window_syn_rates, stamp_rate)
from p4rcp.topology import Route, Switch, SwitchPort

log = logging.getLogger("control_plane")


class CounterWentBackwards(Exception):
    """A monotonic counter decreased: the switch lost its state (restart)."""


def counter_delta(new: int, old: int, bits: int) -> int:
    """Wrap-safe delta of a monotonic counter (serial-number arithmetic, RFC 1982).

    A wrap gives a small positive delta; a counter that moved backwards gives a
    delta above half the range, which only a restart can explain.
    """
    delta = (new - old) % (1 << bits)
    if delta >= 1 << (bits - 1):
        raise CounterWentBackwards(f"counter went from {old} to {new}")
    return delta


def program_switch(driver: Driver, switch: Switch, routes: list[Route]) -> dict[str, int]:
    """Routes and queue settings of the topology, on a connected switch, and no stamp where none belongs:
    the unclassified cell (every port without RCP) caps nothing (RATE_NONE), nor does any port's SYN stamp
    (SynGrants.none(): a cap another tool left is lifted). A switch that holds the routes already keeps
    them: the table is reconciled, not cleared (Driver.install_routes), so that a controller (re)started
    against a forwarding switch drops nothing. Where the driver sets no queues (P4Runtime alone: Tofino
    shapes its ports in the traffic manager's own configuration), the topology's capacities are what the
    operator shaped the ports to.
    Returns the routing table's changes."""
    changes = driver.install_routes(routes)
    if driver.sets_queues:
        for sp in switch.ports.values():
            driver.set_queue(sp.number, sp.queue_rate_pps, sp.queue_depth_pkts)
    driver.write_rates_kbps({dp.UNCLASSIFIED_CELL: dp.RATE_NONE})
    if dp.FEATURE_FEEDFORWARD in driver.features:
        driver.write_syn_grants({port: dp.SynGrants.none() for port in sorted(switch.ports)})
    return changes


def rate_of_stamps(stamps_kbps: list[int], weights: tuple[float, ...], C_bps: float, *, gamma: float,
                   R_min_bps: float) -> float | None:
    """The R that a port's stamps (kb/s, one per weight class: min(gamma C, w_k R), rounded) were written
    from, or None when the port holds no stamp (RATE_NONE: no controller wrote it; 0 kb/s: not a rate any
    controller writes). A class whose stamp is capped at gamma C gives w_k R >= gamma C, so the largest
    stamp_k / w_k is R, or gamma C / w_min, R's own upper clamp, when every class is capped."""
    if len(stamps_kbps) != len(weights) or any(s in (0, dp.RATE_NONE) for s in stamps_kbps):
        return None
    R = max(s * 1000.0 / w for s, w in zip(stamps_kbps, weights))
    return min(max(R, R_min_bps), gamma * C_bps / min(weights))


def _keep_one_round_trip(window: deque, now: float, d0: float) -> None:
    """Drop a window's oldest (time, ...) entries while the next one is at least d0 old: what is left starts
    with the newest entry of a round trip ago."""
    while len(window) > 1 and window[1][0] <= now - d0:
        window.popleft()


@dataclass
class PortState:
    port: int
    C_bps: float
    R_bps: float
    d0_s: float
    config: SwitchPort               # the topology's port: its queue rate says how it is shaped
    last: PortCounters | None = None
    last_time: float = 0.0
    last_rtt_s: float | None = None  # the last interval's mean RTT sample (ns-2 reuses it in an interval without)
    # The feedforward: what the switch holds for this port's SYNs, and the window the long SYNs' stamps run
    # over, (time, long SYNs counted, R, y) of each interval, back to the last one at least d0 old.
    grants: dp.SynGrants = field(default_factory=dp.SynGrants.none)
    syn_window: deque = field(default_factory=deque)
    queue_reads: deque = field(default_factory=deque)   # the queue at each of the last queue_reads reads (bits)
    R_sent: deque = field(default_factory=deque)        # (time, R) of the last round trip: the R flows now send at
    # False after R was resumed from a running switch: d0 is not in the switch, so the first interval's mean
    # RTT becomes d0 instead of being averaged into d0_init (which would take tens of intervals to forget).
    d0_measured: bool = True
    # (time, R) of the intervals policing looks back on: the largest R of the last epoch, plus d0, plus the
    # time the port's full queue takes to drain (what a packet stamped then may still wait before it returns)
    R_history: deque = field(default_factory=deque)
    # What the switch holds for this port, per weight class, as of its last update: the stamps and the
    # policing (allowance, limit), written and recorded from here (computed once per update).
    stamps_bps: list[float] = field(default_factory=list)
    police: list[tuple[int, int]] = field(default_factory=list)
    classic_drop: float = 0.0        # the TCP packets' drop probability (RcpParams.tcp_coupling)

    def queue_drain_s(self, frame_bytes: int) -> float:
        """The longest a packet waits in this port's queue: its depth in data frames at C."""
        return self.config.queue_depth_pkts * frame_bytes * 8 / self.C_bps if self.C_bps > 0 else 0.0

    def slot_bytes(self, queue_rate_unit: str) -> float | None:
        """Bytes of one slot when the queue serves packets, not bytes (None: y in bytes).

        C of a packet-shaped port is its packet rate times the data frame (p4rcp/topology.py), so a
        slot is C / (8 * packet rate): every arriving frame, a SYN or a short last segment included,
        costs what it costs the queue, one full data frame."""
        if queue_rate_unit != "packets" or not self.config.queue_rate_pps:
            return None
        return self.C_bps / (8 * self.config.queue_rate_pps)


@dataclass
class ControlLoop:
    """Drives one switch. ``step`` is one interval; ``run`` repeats it every T."""
    switch: Switch
    routes: list[Route]
    driver: Driver
    params: RcpParams = field(default_factory=RcpParams)
    emit: Callable[[dict], None] = lambda record: None
    clock: Callable[[], float] = time.monotonic
    wall_clock: Callable[[], float] = time.time
    # SCHED_FIFO priority of the thread that runs the loop (None: leave it): the loop sleeps most of
    # each period, and on a machine whose cores the switch and the hosts keep busy a normal thread
    # waits for a core after every wake-up (docs/control_plane.md, "Timing").
    rt_priority: int | None = 10
    # Python's thread switch interval while the loop runs (process-wide; None: leave it). A woken loop
    # thread waits for the GIL until the thread holding it gives it up, which Python asks for only after
    # this long (5 ms by default): in an experiment the other switches' loops and the runner's monitor share
    # the process (docs/control_plane.md, "Timing").
    switch_interval_s: float | None = 0.0005
    ports: dict[int, PortState] = field(init=False)
    connected: bool = field(init=False, default=False)
    class_of_dscp: dict[int, int] = field(init=False)        # the data plane's weight classes (RcpParams)
    class_weights: tuple[float, ...] = field(init=False)
    # Until the first synchronisation the loop holds no R of its own, and takes a running switch's over
    # (resync); after it, its own R is the one to (re)write.
    synchronised_once: bool = field(init=False, default=False)

    def __post_init__(self):
        if self.rt_priority is not None and hasattr(self.driver, "server_nice"):
            # The switch's thread that answers the loop needs a core as soon as the loop does. A
            # weight, not a real-time class: with SCHED_FIFO the idle period got worse (p99 1.5-2.0 T
            # against 1.16; docs/control_plane.md, "Timing").
            self.driver.server_nice = -20
        if not self.switch.rcp_ports:
            raise ValueError(f"switch {self.switch.name} has no RCP port (no port with a capacity)")
        self.class_of_dscp, self.class_weights = self.params.weight_classes()
        needed = self.features_needed()
        lacking = {f: why for f, why in needed.items() if f not in self.driver.features}
        if lacking:
            profiles = " or ".join(dp.profiles_with(needed))
            raise ValueError(f"{self.switch.name}: the switch's program has no {' and no '.join(lacking)}, which "
                             f"{' and '.join(lacking.values())} need: load a program that has it (on Tofino and "
                             f"SUME, the profile {profiles}; docs/porting.md, \"Profiles\"), or change the setting")
        if self.params.tcp_coupling and not self.couples_tcp:
            log.warning("%s: the switch's program has no %s: TCP beside RCP is not coupled (RcpParams.tcp_coupling)",
                        self.switch.name, dp.REG_CLASSIC_DROP)
        self.ports = {}
        for sp in self.switch.rcp_ports:
            if not sp.capacity_bps > 0:
                raise ValueError(f"{self.switch.name} port {sp.number}: capacity must be > 0, got {sp.capacity_bps}")
            self.ports[sp.number] = PortState(sp.number, sp.capacity_bps,
                                              R_bps=max(self.params.R_init_fraction * sp.capacity_bps,
                                                        self.params.R_min_bps),
                                              d0_s=self.params.d0_init_s, config=sp,
                                              queue_reads=deque(maxlen=self.params.queue_reads))

    def features_needed(self) -> dict[str, str]:
        """The program's features these settings need, each with the setting that needs it."""
        p = self.params
        weights = ",".join(f"{d}:{w:g}" for d, w in sorted(p.dscp_weights.items()))
        needed = {dp.FEATURE_FEEDFORWARD: p.feedforward and "feedforward=true",
                  dp.FEATURE_POLICING: p.police and "police=true",
                  dp.FEATURE_WEIGHTS: len(self.class_weights) > 1 and f"dscp_weights={weights}"}
        return {f: why for f, why in needed.items() if why}

    @property
    def couples_tcp(self) -> bool:
        """Whether the loop writes the TCP packets' drop probability: asked for, and the program has the cells."""
        return self.params.tcp_coupling and dp.FEATURE_CLASSIC_DROP in self.driver.features

    def port_T_s(self, ps: PortState) -> float:
        """A port's own interval, T = min(T_max, d0), as ns-2 keeps one per queue."""
        return min(self.params.T_max_s, ps.d0_s)

    @property
    def period_s(self) -> float:
        """The loop's tick: the shortest T of its ports (each port is updated when its own T has passed)."""
        return min(self.port_T_s(ps) for ps in self.ports.values())

    def set_capacity(self, port: int, C_bps: float) -> None:
        """The link's rate changed (bandwidth-change experiment); R stays within the new clamp."""
        if port not in self.ports or not C_bps > 0:
            raise ValueError(f"{self.switch.name}: cannot set capacity {C_bps} on port {port}")
        ps = self.ports[port]
        ps.C_bps = C_bps
        ps.R_bps = min(ps.R_bps, self.params.gamma * C_bps)

    def resync(self) -> None:
        """(Re)connect and bring the switch to our state: tables, queues, weight classes, stamps, policing.

        A loop that has not run yet first reads back what a running switch holds (resume): the R each RCP
        port stamps, so that a controller restarted mid-run takes over where its predecessor left, without
        a step back to R_init (and the burst of every flow re-accelerating); the tables are reconciled, not
        cleared, so the switch forwards and classifies throughout. A switch that holds no stamp (just
        started, or restarted) gets the loop's R, initial or current."""
        self.connected = False
        self.driver.connect()
        resumed = {} if self.synchronised_once else self._resume()
        routes = program_switch(self.driver, self.switch, self.routes)
        # The cells before the classes that point at them, so that no packet reads a cell not yet written.
        # program_switch left the unclassified cell without a cap; the feedforward's SYN stamps cap nothing
        # until its first interval, and count sizes against the P of this R (the loop must know the P the
        # switch counts with, so it writes its own, resumed or not).
        for ps in self.ports.values():
            self._refresh_cells(ps)
        if self.params.feedforward:
            for ps in self.ports.values():
                ps.grants, ps.syn_window = self.first_grants(ps), deque()
            self.driver.write_syn_grants({ps.port: ps.grants for ps in self.ports.values()})
        self.driver.write_rates_kbps(self._stamps(self.ports.values()))
        if dp.FEATURE_POLICING in self.driver.features:     # on or off, no policing left from earlier settings
            self.driver.write_police(self._police(self.ports.values()))
        if dp.FEATURE_CLASSIC_DROP in self.driver.features:  # coupled or not, no drop left from earlier settings
            self.driver.write_classic_drop({ps.port: ps.classic_drop if self.couples_tcp else 0.0
                                            for ps in self.ports.values()})
        classes = (self.driver.install_weight_classes(sorted(self.ports), self.class_of_dscp)
                   if dp.FEATURE_WEIGHTS in self.driver.features else None)
        for ps in self.ports.values():
            ps.last = None   # the next read is a fresh baseline
        self.connected = True
        how = ("resumed the switch's state: " + ", ".join(f"port {p} R {R / 1e6:.3f} Mb/s" for p, R in resumed.items())
               if resumed else "programmed it: " + ", ".join(f"port {ps.port} R {ps.R_bps / 1e6:.3f} Mb/s"
                                                             for ps in self.ports.values()))
        if resumed and len(resumed) < len(self.ports):
            how += "; " + ", ".join(f"port {p} held no stamp, R {self.ports[p].R_bps / 1e6:.3f} Mb/s"
                                    for p in sorted(set(self.ports) - set(resumed)))
        log.info("%s: synchronised, %s (routes %s, weight classes %s)", self.switch.name, how,
                 _changes(routes), "not in the program" if classes is None else _changes(classes))
        self.synchronised_once = True

    def _resume(self) -> dict[int, float]:
        """Take over the R of each RCP port from the stamps the switch holds (rate_of_stamps); returns the
        ports resumed and their R."""
        weights = self.class_weights
        cells = [dp.rate_cell(p, k) for p in sorted(self.ports) for k in range(len(weights))]
        stamps = self.driver.read_stamps_kbps(cells)
        resumed = {}
        for port, ps in sorted(self.ports.items()):
            R = rate_of_stamps([stamps[dp.rate_cell(port, k)] for k in range(len(weights))], weights, ps.C_bps,
                               gamma=self.params.gamma, R_min_bps=self.params.R_min_bps)
            if R is not None:
                ps.R_bps, ps.d0_measured = R, False
                resumed[port] = R
        return resumed

    def stamps_bps(self, ps: PortState) -> list[float]:
        """The rate stamped into each weight class's packets on this port: min(gamma C, w_k R)."""
        return [stamp_rate(ps.R_bps, w, ps.C_bps, gamma=self.params.gamma) for w in self.class_weights]

    def _stamps(self, states) -> dict[int, int]:
        return {dp.rate_cell(ps.port, k): _kbps(bps) for ps in states for k, bps in enumerate(ps.stamps_bps)}

    def police_thresholds(self, ps: PortState) -> list[tuple[int, int]]:
        """Each weight class's (allowance, limit) on this port, from the largest stamp of the last epoch + d0;
        (0, 0) with policing off."""
        p = self.params
        if not p.police:
            return [(0, 0)] * len(self.class_weights)
        R_max = max((R for _, R in ps.R_history), default=ps.R_bps)
        out = []
        for w in self.class_weights:
            S_max = stamp_rate(R_max, w, ps.C_bps, gamma=p.gamma)
            allowance = police_allowance(S_max, self.driver.police_epoch_s, margin=p.police_margin,
                                         frame_bytes=p.queue_packet_bytes)
            out.append((allowance, police_limit(allowance, S_max, slack_s=p.police_slack_s,
                                                burst_bytes=p.police_burst_packets * p.queue_packet_bytes)))
        return out

    def first_grants(self, ps: PortState) -> dp.SynGrants:
        """Before the feedforward's first interval: no SYN capped, sizes counted against the grant of R."""
        p = self.params
        P = rcp_grant_packets(min(p.gamma * ps.C_bps, ps.R_bps), ps.d0_s, p.queue_packet_bytes * 8)
        return dp.SynGrants(0, (dp.RATE_NONE,) * dp.SYN_RATES, dp.RATE_NONE, P, P // 2)

    def next_grants(self, ps: PortState, now: float, long_arrivals: int, y: float) -> dp.SynGrants:
        """The next interval's SYN stamps and counting (dp.SynGrants), with R and y as of now.

        A long flow's SYN (one that lasts more than half a round trip at its grant) takes the next stamp
        of the sequence that runs over the last round trip (rcp_window_syn_rates): the flows that joined in
        it hold their grants and do not show in y yet. A short flow's SYN takes the first flow's share of
        now: it is gone before it could crowd the link. P, what a flow's size counts up to, is what a flow
        sends in its first round trip at the window's first grant."""
        p, window = self.params, ps.syn_window
        window.append((now, long_arrivals, ps.R_bps, y))
        _keep_one_round_trip(window, now, ps.d0_s)
        _, base_w, R_w, y_w = window[0]
        m = counter_delta(long_arrivals, base_w, dp.ARRIVALS_BITS)
        # The window's R, unless R has fallen more than tenfold since (a crowd arrived): then the sequence
        # would grant from a link that is no longer there.
        R_w = min(R_w, 10 * ps.R_bps)
        long_rates = rcp_window_syn_rates(R_w, ps.C_bps, y_w, m, dp.SYN_RATES, gamma=p.gamma)
        P = rcp_grant_packets(rcp_syn_rates(R_w, ps.C_bps, y_w, 1, gamma=p.gamma)[0], ps.d0_s,
                              p.queue_packet_bytes * 8)
        short = rcp_syn_rates(min(p.gamma * ps.C_bps, ps.R_bps), ps.C_bps, y, 1, gamma=p.gamma)[0]
        return dp.SynGrants(long_arrivals % (1 << dp.ARRIVALS_BITS), tuple(_kbps(r) for r in long_rates), _kbps(short),
                         P, P // 2)

    def _police(self, states) -> dict[int, tuple[int, int]]:
        return {dp.rate_cell(ps.port, k): pair for ps in states for k, pair in enumerate(ps.police)}

    def _refresh_cells(self, ps: PortState) -> None:
        ps.stamps_bps, ps.police = self.stamps_bps(ps), self.police_thresholds(ps)

    def step(self, deadline: float | None = None) -> list[dict]:
        """Read every RCP port's counters in one pass, update R, write it back.

        The interval's time is between the instants the switch answered two reads (CounterRead.at);
        `deadline`, when the step runs on a schedule, is when it should have started."""
        started = self.clock()
        read = self.driver.read_counters(sorted(self.ports), self.clock)
        read_s = self.clock() - started
        records, updated = [], []
        for port, ps in self.ports.items():
            record = self._update_port(ps, read.ports[port], read.at)
            if record is not None:
                records.append(record)
                updated.append(ps)
        if updated:
            self.driver.write_rates_kbps(self._stamps(updated))
            if self.params.police:
                self.driver.write_police(self._police(updated))
            if self.params.feedforward:
                self.driver.write_syn_grants({ps.port: ps.grants for ps in updated})
            if self.couples_tcp:
                self.driver.write_classic_drop({ps.port: ps.classic_drop for ps in updated})
        timing = {"loop_s": self.clock() - started, "read_s": read_s, "answer_s": read.at - started,
                  "late_s": None if deadline is None else started - deadline}
        for record in records:
            record.update(timing)
            self.emit(record)
        return records

    def _update_port(self, ps: PortState, c: PortCounters, now: float) -> dict | None:
        if ps.last is None:
            ps.last, ps.last_time = c, now
            return None
        elapsed = now - ps.last_time
        T = self.port_T_s(ps)
        if elapsed <= 0 or elapsed < T - self.period_s / 2:     # not this port's turn: its counts go on
            return None
        d = self.driver
        d_bytes = counter_delta(c.input_bytes, ps.last.input_bytes, d.counter_bits)
        d_packets = counter_delta(c.input_packets, ps.last.input_packets, d.counter_bits)
        d_rtt_sum = counter_delta(c.rtt_sum_us, ps.last.rtt_sum_us, d.rtt_sum_bits)
        d_rtt_count = counter_delta(c.rtt_count, ps.last.rtt_count, d.counter_bits)
        # What policing dropped arrived but never reaches the link: it is not load (else R would fall for
        # every flow to make room for the excess of the flow that ignores it).
        d_policed_bytes = counter_delta(c.policed_bytes, ps.last.policed_bytes, d.counter_bits)
        d_policed_packets = counter_delta(c.policed_packets, ps.last.policed_packets, d.counter_bits)
        load_bytes, load_packets = max(d_bytes - d_policed_bytes, 0), max(d_packets - d_policed_packets, 0)
        p = self.params
        # y in the unit the queue drains: slots on a port shaped in packets per second, else bytes.
        slot_bytes = ps.slot_bytes(d.queue_rate_unit)
        y_bytes = load_bytes * 8 / elapsed
        y = y_bytes if slot_bytes is None else load_packets * slot_bytes * 8 / elapsed
        if d_rtt_count > 0:
            ps.last_rtt_s = d_rtt_sum / d_rtt_count / 1e6
        if d_rtt_count > 0 and not ps.d0_measured:
            ps.d0_s, ps.d0_measured = ps.last_rtt_s, True
        elif d_rtt_count > 0 or (p.d0_estimator == "ns2" and ps.last_rtt_s is not None):
            ps.d0_s = p.next_d0(ps.d0_s, ps.last_rtt_s, elapsed, ps.R_bps, ps.C_bps)
        q = c.queue_depth * (d.queue_unit_bytes or p.queue_packet_bytes) * 8
        ps.queue_reads.append(q)
        q_law = persistent_queue(ps.queue_reads)
        w_min = min(self.class_weights)
        R_prev = ps.R_bps
        ps.R_bps = rcp_rate(R_prev, elapsed, ps.d0_s, ps.C_bps, y, q_law, alpha=p.alpha, beta=p.beta,
                            gamma=p.gamma, q0=p.q0_bytes * 8, R_min=p.R_min_bps, w_min=w_min)
        ps.R_sent.append((now, R_prev))
        _keep_one_round_trip(ps.R_sent, now, ps.d0_s)
        if p.overload_floor:       # never above R_prev: it bounds a fall, it raises nothing
            floor = rcp_overload_floor(ps.R_sent[0][1], ps.C_bps, y, q_law, ps.d0_s, gamma=p.gamma)
            ps.R_bps = max(ps.R_bps, min(floor, R_prev))
        # The flows that arrived and are ending, each weighed by the share of a round trip it lasts: the
        # committed sizes count min(size, P) per flow, P the grant the interval counted them with.
        P = ps.grants.grant_packets
        arrivals = counter_delta(c.committed_arrivals, ps.last.committed_arrivals, dp.ARRIVALS_BITS) / P
        departures = counter_delta(c.committed_departures, ps.last.committed_departures, dp.ARRIVALS_BITS) / P
        if p.feedforward:
            ps.R_bps = rcp_feedforward(ps.R_bps, R_prev, ps.C_bps, arrivals, departures, gamma=p.gamma,
                                       R_min=p.R_min_bps, w_min=w_min)
            ps.grants = self.next_grants(ps, now, c.long_arrivals, y)
        ps.last, ps.last_time = c, now
        if self.couples_tcp:
            ps.classic_drop = classic_drop_probability(ps.R_bps, ps.d0_s, p.queue_packet_bytes * 8,
                                                       c=p.tcp_response)
        if p.police:
            # the senders follow the R they heard up to one RTT ago, and a queue that built up when R fell
            # delays what they sent at the old R by up to its drain time (d0, a moving average, lags it):
            # keep one epoch plus d0 plus that of R
            ps.R_history.append((now, ps.R_bps))
            keep_s = self.driver.police_epoch_s + ps.d0_s + ps.queue_drain_s(p.queue_packet_bytes)
            while ps.R_history and ps.R_history[0][0] < now - keep_s:
                ps.R_history.popleft()
        self._refresh_cells(ps)
        police = ps.police if p.police else None
        return {"time": self.wall_clock(), "switch": self.switch.name, "port": ps.port,
                "C_bps": ps.C_bps, "R_bps": ps.R_bps, "y_bps": y, "q_bytes": q / 8, "q_law_bytes": q_law / 8,
                "R_heard_bps": ps.R_sent[0][1],
                "d0_s": ps.d0_s, "T_s": T, "period_s": elapsed, "rtt_samples": d_rtt_count,
                "y_unit": "bytes" if slot_bytes is None else "slots", "slot_bytes": slot_bytes,
                "y_bytes_bps": y_bytes, "input_packets": d_packets, "input_bytes": d_bytes,
                "stamps_bps": ps.stamps_bps,
                "policed_packets": d_policed_packets, "policed_bytes": d_policed_bytes,
                "arrivals": arrivals, "departures": departures, "grant_packets": P,
                "syn_rates_bps": [r * 1000 for r in ps.grants.long_kbps] if p.feedforward else None,
                "short_rate_bps": ps.grants.short_kbps * 1000 if p.feedforward else None,
                "police_allowance_bytes": None if police is None else [a for a, _ in police],
                "police_limit_bytes": None if police is None else [limit for _, limit in police],
                "classic_drop_p": ps.classic_drop if self.couples_tcp else None}

    def run(self, stop: threading.Event, backoff_s: tuple[float, float] = (0.1, 2.0)) -> None:
        """Repeat ``step`` every T until ``stop`` is set; survive switch restarts.

        Each interval starts at an absolute deadline (the previous one + T), so the time a step takes
        and the sleep's own lateness do not add up from interval to interval. The schedule's phase is
        random (first_jitter), as ns-2 randomises each queue's first timer."""
        self._prepare_thread()
        delay = backoff_s[0]
        deadline = self.clock() + self._first_delay()
        while not stop.is_set():
            try:
                if not self.connected:
                    self.resync()
                    delay = backoff_s[0]
                    deadline = self.clock() + self._first_delay()
                if stop.wait(max(0.0, deadline - self.clock())):
                    break
                self.step(deadline)
            except (SwitchUnavailable, CounterWentBackwards) as e:
                log.warning("%s: %s; resynchronising in %.1f s", self.switch.name, e, delay)
                self.connected = False
                self.driver.close()
                stop.wait(delay)
                delay = min(delay * 2, backoff_s[1])
                continue
            deadline += self.period_s
            if deadline < self.clock():      # overran: start a new schedule instead of bursting to catch up
                deadline = self.clock()

    def _first_delay(self) -> float:
        """When the first step of a schedule comes: Normal(T, first_jitter T), within [0, 2T]."""
        T = self.period_s
        return min(max(random.gauss(T, self.params.first_jitter * T), 0.0), 2 * T)

    def _prepare_thread(self) -> None:
        """Real-time priority for this thread, and no full garbage collection walking the process's
        older objects (in an experiment, everything topo/ loaded) in the middle of a period."""
        gc.freeze()
        if self.switch_interval_s is not None:
            sys.setswitchinterval(min(sys.getswitchinterval(), self.switch_interval_s))
        if self.rt_priority is None:
            return
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(self.rt_priority))   # 0: this thread
        except (PermissionError, OSError) as e:
            log.warning("%s: no real-time priority for the control loop (%s); its period may stretch "
                        "when the cores are busy", self.switch.name, e)


def _changes(changes: dict[str, int] | None) -> str:
    """A table's reconciliation in words: "unchanged", or what was added, modified and deleted."""
    done = [f"{n} {what}" for what, n in (changes or {}).items() if n]
    return ", ".join(done) if done else "unchanged"


def _kbps(bps: float) -> int:
    return max(1, round(bps / 1000))

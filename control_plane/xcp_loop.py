"""The XCP router's control loop: every control interval d (the average RTT of the port's XCP traffic) it
reads each port's sums, computes phi, h, xi_p and xi_n (p4rcp/xcp_law.py) and writes the coefficients that
the data plane's per-packet feedback uses (docs/xcp.md, "The per-interval law").

The driver gives, per port, monotonic counters (input bytes y, sum x, sum rtt x, sum s) and the smallest
queue since its last read, and takes (xi_p, xi_n) and the interval's feedback totals: topo/ns3/driver.py over
the ns-3 model's XcpQueueDisc, and XcpCellsDriver over a P4 switch's XCP registers
(p4src/targets/v1model/xcp.p4) through the Thrift driver that RCP's loop uses; XcpLoop.run steps a real switch
in real time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from control_plane.driver import SwitchUnavailable, XcpCells
from p4rcp import dataplane as dp
from p4rcp.topology import Route, Switch
from p4rcp.xcp_law import xcp_average_rtt, xcp_coefficients

log = logging.getLogger("control_plane")

# d before the first interval with XCP packets (ns-2's xcpq.cc starts its interval at 0.1 s as well).
INITIAL_D_S = 0.1
# The shortest control interval: a floor against a burst of bogus tiny RTTs.
MIN_D_S = 0.001


@dataclass(frozen=True)
class XcpCounters:
    input_bytes: int        # frame bytes that arrived for the port, before any drop
    sum_x_s: float          # sum of x = rtt s / cwnd over the XCP packets that left, seconds
    sum_rtt_x_s2: float     # sum of rtt x, seconds^2
    sum_s_bytes: int        # sum of their frame bytes
    min_queue_bytes: int    # the smallest queue since the last read (the persistent queue Q)
    queue_bytes: int        # the queue at the read


class XcpDriver(Protocol):
    sets_queues: bool

    def connect(self) -> None: ...
    def close(self) -> None: ...
    def install_routes(self, routes: list[Route]) -> None: ...
    def set_queue(self, port: int, rate_pps: int | None, depth_pkts: int) -> None: ...
    def read_xcp(self, port: int) -> XcpCounters: ...
    def write_xcp(self, port: int, xi_p: float, xi_n: float, positive_total: float, negative_total: float) -> None: ...


class XcpSwitch(Protocol):
    """A P4 switch running the XCP router: control_plane.bmv2_thrift.Bmv2ThriftDriver."""
    sets_queues: bool
    queue_unit_bytes: int | None

    def connect(self) -> None: ...
    def close(self) -> None: ...
    def install_routes(self, routes: list[Route]) -> object: ...
    def set_queue(self, port: int, rate_pps: int | None, depth_pkts: int) -> None: ...
    def read_xcp_cells(self, ports: list[int]) -> dict[int, XcpCells]: ...
    def write_xcp_cells(self, cells: dict[int, dp.XcpControl | None]) -> None: ...


class XcpCellsDriver:
    """XcpDriver over a P4 switch's XCP cells: the sums, modulo 2^64 in the data plane's units, become
    monotonic totals in seconds and bytes (counted from the first read: the loop takes deltas), the queues
    bytes (a switch that counts packets, bmv2, counts a data frame each), and the coefficients the fixed-point
    cells of p4rcp/dataplane.py. An input count that goes back means the switch restarted: SwitchUnavailable,
    and the run resynchronises."""

    def __init__(self, switch: XcpSwitch, frame_bytes: int):
        self.switch = switch
        self.sets_queues = switch.sets_queues
        self.queue_unit_bytes = switch.queue_unit_bytes or frame_bytes
        self._raw: dict[int, XcpCells] = {}
        self._totals: dict[int, list[int]] = {}

    def connect(self) -> None:
        self._raw, self._totals = {}, {}
        self.switch.connect()

    def close(self) -> None:
        self.switch.close()

    def install_routes(self, routes: list[Route]) -> None:
        self.switch.install_routes(routes)

    def set_queue(self, port: int, rate_pps: int | None, depth_pkts: int) -> None:
        self.switch.set_queue(port, rate_pps, depth_pkts)

    def read_xcp(self, port: int) -> XcpCounters:
        [cells] = self.switch.read_xcp_cells([port]).values()
        last = self._raw.get(port)
        if last is not None and cells.input_bytes < last.input_bytes:
            self._raw.pop(port)
            raise SwitchUnavailable(f"port {port}: the input count went back from {last.input_bytes} to "
                                    f"{cells.input_bytes}: the switch restarted")
        wrap = 1 << dp.XCP_SUM_BITS
        counts = (cells.input_bytes, cells.sum_x_ns, cells.sum_rtt_x_us_ns, cells.sum_s_bytes)
        totals = self._totals.setdefault(port, [0] * len(counts))
        if last is not None:
            before = (last.input_bytes, last.sum_x_ns, last.sum_rtt_x_us_ns, last.sum_s_bytes)
            for i, (new, old) in enumerate(zip(counts, before)):
                totals[i] += (new - old) % wrap
        self._raw[port] = cells
        input_bytes, sum_x_ns, sum_rtt_x, sum_s = totals
        # No departure since the last restart: the queue is the one the last departure left.
        Q = min(cells.min_queue, cells.queue_depth)
        return XcpCounters(input_bytes=input_bytes, sum_x_s=sum_x_ns * 1e-9, sum_rtt_x_s2=sum_rtt_x * 1e-15,
                           sum_s_bytes=sum_s, min_queue_bytes=Q * self.queue_unit_bytes,
                           queue_bytes=cells.queue_depth * self.queue_unit_bytes)

    def write_xcp(self, port: int, xi_p: float, xi_n: float, positive_total: float, negative_total: float) -> None:
        self.switch.write_xcp_cells({port: dp.XcpControl.of(xi_p, xi_n, positive_total, negative_total)})


@dataclass
class XcpPort:
    port: int
    C: float                       # bytes/s of frames
    d: float = INITIAL_D_S
    last: XcpCounters | None = None
    last_time: float = 0.0


class XcpLoop:
    """One switch's XCP ports. step() runs one control interval; period_s is the next one's length (the
    smallest d of the switch's ports: each port then sees intervals no longer than its own d)."""

    def __init__(self, switch: Switch, routes: list[Route], driver: XcpDriver, *, clock: Callable[[], float],
                 wall_clock: Callable[[], float], emit: Callable[[dict], None]):
        self.switch, self.driver, self.clock, self.wall_clock, self.emit = switch, driver, clock, wall_clock, emit
        self.routes = routes
        self.ports = {sp.number: XcpPort(sp.number, sp.capacity_bps / 8) for sp in switch.rcp_ports}
        self.program()

    def program(self) -> None:
        """Routes, queues, and no feedback until the first interval with counts; each port starts its counts
        again (a switch that restarted lost them)."""
        self.driver.install_routes(self.routes)
        if self.driver.sets_queues:
            for sp in self.switch.ports.values():
                self.driver.set_queue(sp.number, sp.queue_rate_pps, sp.queue_depth_pkts)
        for state in self.ports.values():
            state.last = None
            self.driver.write_xcp(state.port, 0.0, 0.0, 0.0, 0.0)

    @property
    def period_s(self) -> float:
        return min(state.d for state in self.ports.values())

    def set_capacity(self, port: int, C_bps: float) -> None:
        self.ports[port].C = C_bps / 8

    def step(self, deadline: float | None = None) -> None:
        now = self.clock()
        for state in self.ports.values():
            counters = self.driver.read_xcp(state.port)
            last, T = state.last, now - state.last_time
            state.last, state.last_time = counters, now
            if last is None or T <= 0:
                continue
            sum_x = counters.sum_x_s - last.sum_x_s
            sum_rtt_x = counters.sum_rtt_x_s2 - last.sum_rtt_x_s2
            sum_s = counters.sum_s_bytes - last.sum_s_bytes
            y = (counters.input_bytes - last.input_bytes) / T
            if sum_x > 0:
                state.d = max(xcp_average_rtt(sum_rtt_x, sum_x), MIN_D_S)
            # The sums are over the last T; the coefficients serve the next d, whose packets' sums are d / T
            # of these if the traffic stays.
            k = xcp_coefficients(state.d, state.C, y, counters.min_queue_bytes, sum_x * state.d / T,
                                 sum_s * state.d / T)
            # The totals are for an interval of d; the next one lasts period_s (the switch's smallest d).
            share = min(1.0, self.period_s / state.d)
            self.driver.write_xcp(state.port, k.xi_p, k.xi_n, k.positive_total * share, k.negative_total * share)
            # The keys the report reads from every control loop (time, C_bps, y_bps, q_bytes, period_s), then XCP's.
            self.emit({"time": self.wall_clock(), "switch": self.switch.name, "port": state.port,
                       "C_bps": state.C * 8, "y_bps": y * 8, "q_bytes": counters.queue_bytes, "period_s": T,
                       "d_s": state.d, "Q_bytes": counters.min_queue_bytes, "phi_bytes": k.phi, "h_bytes": k.h,
                       "xi_p": k.xi_p, "xi_n": k.xi_n})

    def run(self, stop: threading.Event, backoff_s: tuple[float, float] = (0.1, 2.0)) -> None:
        """Step every period_s of self.clock until `stop` is set, over a driver that connects (XcpCellsDriver): each
        interval starts at an absolute deadline, and a switch lost (down, restarted) is connected to and
        programmed again, with backoff."""
        delay = backoff_s[0]
        deadline = self.clock() + self.period_s
        connected = True
        while not stop.is_set():
            try:
                if not connected:
                    self.driver.connect()
                    self.program()
                    connected, delay = True, backoff_s[0]
                    deadline = self.clock() + self.period_s
                if stop.wait(max(0.0, deadline - self.clock())):
                    break
                self.step()
            except SwitchUnavailable as e:
                log.warning("%s: %s; programming it again in %.1f s", self.switch.name, e, delay)
                connected = False
                self.driver.close()
                stop.wait(delay)
                delay = min(delay * 2, backoff_s[1])
                continue
            deadline += self.period_s
            if deadline < self.clock():      # overran: a new schedule rather than a burst of steps
                deadline = self.clock()

"""The XCP router's control loop: every control interval d (the average RTT of the port's XCP traffic) it
reads each port's sums, computes phi, h, xi_p and xi_n (p4rcp/xcp_law.py) and writes the coefficients that
the data plane's per-packet feedback uses (docs/xcp.md, "The per-interval law").

The driver gives, per port, monotonic counters (input bytes y, sum x, sum rtt x, sum s) and the smallest
queue since its last read, and takes (xi_p, xi_n): topo/ns3/driver.py over the ns-3 model's XcpQueueDisc.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from p4rcp.topology import Route, Switch
from p4rcp.xcp_law import xcp_average_rtt, xcp_coefficients

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

    def install_routes(self, routes: list[Route]) -> None: ...
    def set_queue(self, port: int, rate_pps: int | None, depth_pkts: int) -> None: ...
    def read_xcp(self, port: int) -> XcpCounters: ...
    def write_xcp(self, port: int, xi_p: float, xi_n: float) -> None: ...


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
        driver.install_routes(routes)
        if driver.sets_queues:
            for sp in switch.ports.values():
                driver.set_queue(sp.number, sp.queue_rate_pps, sp.queue_depth_pkts)
        self.ports = {sp.number: XcpPort(sp.number, sp.capacity_bps / 8) for sp in switch.rcp_ports}
        for p in self.ports:
            driver.write_xcp(p, 0.0, 0.0)

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
            self.driver.write_xcp(state.port, k.xi_p, k.xi_n)
            # The keys the report reads from every control loop (time, C_bps, y_bps, q_bytes, period_s), then XCP's.
            self.emit({"time": self.wall_clock(), "switch": self.switch.name, "port": state.port,
                       "C_bps": state.C * 8, "y_bps": y * 8, "q_bytes": counters.queue_bytes, "period_s": T,
                       "d_s": state.d, "Q_bytes": counters.min_queue_bytes, "phi_bytes": k.phi, "h_bytes": k.h,
                       "xi_p": k.xi_p, "xi_n": k.xi_n})

"""What the control loop needs from a switch, whatever runtime reaches it.

One implementation today (bmv2_thrift.Bmv2ThriftDriver); the interface is
kept narrow so that a P4Runtime driver (Tofino, Stratum) can stand beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from p4rcp.topology import Route


class SwitchUnavailable(ConnectionError):
    """The switch cannot be reached now (down, restarting, connection lost)."""


@dataclass(frozen=True)
class PortCounters:
    """One port's data-plane state as read in one pass."""
    input_bytes: int
    rtt_sum_us: int
    rtt_count: int
    queue_depth_pkts: int


class Driver(Protocol):
    counter_bits: int   # width of the monotonic counters, for wrap-safe deltas

    def connect(self) -> None: ...

    def close(self) -> None: ...

    def read_counters(self, ports: list[int]) -> dict[int, PortCounters]: ...

    def write_rates_kbps(self, rates: dict[int, int]) -> None: ...

    def install_routes(self, routes: list[Route]) -> None: ...

    def set_queue(self, port: int, rate_pps: int | None, depth_pkts: int) -> None: ...

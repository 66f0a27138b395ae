"""What the control loop needs from a switch, whatever runtime reaches it.

Two implementations: bmv2_thrift.Bmv2ThriftDriver and p4runtime.P4RuntimeDriver;
the interface is kept narrow so that both fit it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from p4rcp.dataplane import SynGrants
from p4rcp.topology import Route

# How a target's output queues drain: bmv2 serves a packet rate (set_queue_rate, packets per second),
# so every frame takes one slot whatever its size; Tofino's traffic manager and SUME's output queues
# serve a bit rate. The control loop counts y in the same unit (docs/control_plane.md, "The loop").
QueueRateUnit = Literal["packets", "bytes"]


class SwitchUnavailable(ConnectionError):
    """The switch cannot be reached now (down, restarting, connection lost)."""


@dataclass(frozen=True)
class PortCounters:
    """One port's data-plane state as read in one pass (monotonic counts, except the queue depth)."""
    input_bytes: int
    input_packets: int
    rtt_sum_us: int
    rtt_count: int
    queue_depth: int             # in the target's unit: Driver.queue_unit_bytes (packets where that is None)
    policed_bytes: int = 0       # part of the input that policing dropped (docs/design.md, "Policing")
    policed_packets: int = 0
    # The feedforward's counts (32-bit registers, wrap): SYNs of long flows (size above the long threshold),
    # and the sizes, each capped at P, of every SYN and of every DATA flagged ENDING (docs/protocol.md).
    long_arrivals: int = 0
    committed_arrivals: int = 0
    committed_departures: int = 0


@dataclass(frozen=True)
class XcpCells:
    """One XCP port's cells as the data plane holds them (p4rcp/dataplane.py, "The XCP router"): the input
    counter's bytes and the sums, each modulo 2^64; the smallest queue since its last restart
    (XCP_MIN_QUEUE_NONE: no departure since) and the queue the last departure left, in the queue's unit."""
    input_bytes: int
    sum_x_ns: int
    sum_rtt_x_us_ns: int
    sum_s_bytes: int
    min_queue: int
    queue_depth: int


@dataclass(frozen=True)
class CounterRead:
    """The counts of one read and when the switch took them.

    `at` is the reading of the caller's clock when the switch's first answer arrived: the switch reads
    its counts as it answers, so this bounds that instant from above, without the client's own work
    after it (turning the answers into numbers) and with every delay before it (the caller waking up
    late, the switch's thread getting a core late). docs/control_plane.md, "Timing"."""
    at: float
    ports: dict[int, PortCounters]


class Driver(Protocol):
    counter_bits: int                 # width of the counter externs (input, RTT count, policed), for wrap-safe deltas
    rtt_sum_bits: int                 # width of the RTT-sum register
    queue_rate_unit: QueueRateUnit    # what set_queue's rate counts
    queue_unit_bytes: int | None      # bytes of one unit of the queue depth; None: packets (a data frame each)
    sets_queues: bool                 # set_queue works (bmv2); else the target's own configuration shapes ports
    police_epoch_s: float             # the target's policing epoch (p4rcp.dataplane.POLICE_EPOCH_S)
    features: frozenset[str]          # what the program has of p4rcp.dataplane.ALL_FEATURES; the rest it left out

    def connect(self) -> None: ...

    def close(self) -> None: ...

    def read_counters(self, ports: list[int], clock: Callable[[], float]) -> CounterRead: ...

    def write_rates_kbps(self, rates: dict[int, int]) -> None:
        """The stamp (kb/s) of each (port, weight class) cell, keyed by p4rcp.dataplane.rate_cell(port, class)."""

    def write_police(self, params: dict[int, tuple[int, int]]) -> None:
        """Each cell's policing (allowance bytes per epoch, limit bytes); (0, 0) turns it off there."""

    def write_syn_grants(self, grants: dict[int, SynGrants]) -> None:
        """Per port: how its SYNs are stamped and their sizes counted this interval."""

    def write_classic_drop(self, probabilities: dict[int, float]) -> None:
        """Per port: the probability with which a TCP packet routed there is dropped (0: never)."""

    def read_stamps_kbps(self, cells: list[int]) -> dict[int, int]:
        """The stamp each of these (port, class) cells holds now, kb/s (RATE_NONE: none): what a controller
        started against a running switch resumes from."""

    def install_weight_classes(self, ports: list[int], classes: dict[int, int]) -> dict[str, int]:
        """weight_classifier for these (RCP) ports: every DSCP to its class's cell, class 0 where unmapped.
        Reconciled with what the switch holds, never cleared first (a forwarding switch keeps classifying);
        returns how many entries were added, modified and deleted."""

    def install_routes(self, routes: list[Route]) -> dict[str, int]:
        """routing_v4 reconciled to these routes, as install_weight_classes."""

    def set_queue(self, port: int, rate_pps: int | None, depth_pkts: int) -> None: ...

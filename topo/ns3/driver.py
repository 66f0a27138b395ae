"""control_plane's Driver over a simulated switch: the same ControlLoop that programs bmv2 over Thrift
reads the RcpQueueDisc counters of the switch's RCP ports and writes their R, in simulated time.

ns-3's links serialise bytes, so the queues drain bytes (queue_rate_unit "bytes") and y is counted in the
bytes of Ethernet frames, the unit of C (docs/protocol.md, "Units").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from control_plane.driver import CounterRead, PortCounters
from control_plane.xcp_loop import XcpCounters
from p4rcp import dataplane as dp
from p4rcp.topology import Route

if TYPE_CHECKING:
    from topo.ns3.network import SimNetwork


class Ns3Driver:
    """One simulated switch. It cannot become unreachable, so connect and close do nothing.

    The model stamps one rate per port and has the feedforward's counts and SYN stamps, but no weight
    classes or policing (the engine refuses schemes that use them, topo/ns3/engine.py refusal), so those
    writes accept only "off"."""
    counter_bits = 64
    rtt_sum_bits = 64         # RcpQueueDisc keeps 64 bits (the v1model register has 32)
    queue_rate_unit = "bytes"
    queue_unit_bytes = None   # QueueDepthPackets counts packets
    sets_queues = True
    police_epoch_s = dp.POLICE_EPOCH_S["v1model"]     # the router it stands in for (no policing here)
    features = dp.ALL_FEATURES

    def __init__(self, network: SimNetwork, switch: str):
        self.network, self.switch = network, switch

    def connect(self) -> None:
        pass

    def close(self) -> None:
        pass

    def read_counters(self, ports: list[int], clock: Callable[[], float]) -> CounterRead:
        counts = {}
        for port in ports:
            disc = self.network.rcp_disc(self.switch, port)
            counts[port] = PortCounters(input_bytes=disc.InputBytes(), input_packets=disc.InputPackets(),
                                        rtt_sum_us=disc.RttSumUs(), rtt_count=disc.RttCount(),
                                        queue_depth=disc.QueueDepthPackets(), long_arrivals=disc.LongArrivals(),
                                        committed_arrivals=disc.CommittedArrivals(),
                                        committed_departures=disc.CommittedDepartures())
        return CounterRead(at=clock(), ports=counts)

    def write_rates_kbps(self, rates: dict[int, int]) -> None:
        """Cells of weight class 0 only (the loop writes no others without dscp_weights). RATE_NONE (no
        stamp) is the model's R = 0; the unclassified cell, for ports without RCP, has no queue disc here."""
        for cell, kbps in rates.items():
            if cell == dp.UNCLASSIFIED_CELL:
                continue
            port, weight_class = divmod(cell, dp.NUM_WEIGHT_CLASSES)
            if weight_class:
                raise ValueError(f"the ns-3 router model has no weight classes (cell {cell})")
            self.network.rcp_disc(self.switch, port).SetRateKbps(0 if kbps == dp.RATE_NONE else kbps)

    def read_stamps_kbps(self, cells: list[int]) -> dict[int, int]:
        """What the simulated router stamps: class 0 of an RCP port holds its R (the model's 0 is none), every
        other cell none. A simulation starts with its routers, so a loop finds nothing to resume."""
        topology = self.network.topology.switch(self.switch)
        out = {}
        for cell in cells:
            port, weight_class = divmod(cell, dp.NUM_WEIGHT_CLASSES)
            rate = (self.network.rcp_disc(self.switch, port).GetRateKbps()
                    if weight_class == 0 and port in topology.ports and topology.ports[port].is_rcp else 0)
            out[cell] = rate or dp.RATE_NONE
        return out

    def write_police(self, params: dict[int, tuple[int, int]]) -> None:
        if any(pair != (0, 0) for pair in params.values()):
            raise ValueError("the ns-3 router model has no policing")

    def write_syn_grants(self, grants: dict[int, dp.SynGrants]) -> None:
        """Each port's dp.SynGrants (RATE_NONE, no cap, is the model's SYN_RATE_NONE). A port without RCP has no
        RcpQueueDisc and nothing to cap: the loop's first write, to every port, skips it."""
        for port, g in grants.items():
            if not self.network.topology.switch(self.switch).ports[port].is_rcp:
                if g != dp.SynGrants.none():
                    raise ValueError(f"SYN stamps for port {port} of {self.switch}, which has no RCP")
                continue
            disc = self.network.rcp_disc(self.switch, port)
            disc.SetArrivalsBase(g.base)
            for k, kbps in enumerate(g.long_kbps, start=1):
                disc.SetSynRateKbps(k, kbps)
            disc.SetShortRateKbps(g.short_kbps)
            disc.SetGrantPackets(g.grant_packets, g.long_packets)

    def write_classic_drop(self, probabilities: dict[int, float]) -> None:
        """Each RCP port's drop probability for TCP packets (RcpQueueDisc.SetClassicDrop)."""
        for port, p in probabilities.items():
            self.network.rcp_disc(self.switch, port).SetClassicDrop(p)

    def read_xcp(self, port: int) -> XcpCounters:
        """An XCP port's counters (topo/ns3/model/xcp-queue-disc.h); reading takes the smallest queue."""
        disc = self.network.rcp_disc(self.switch, port)
        return XcpCounters(input_bytes=int(disc.InputBytes()), sum_x_s=float(disc.SumX()),
                           sum_rtt_x_s2=float(disc.SumRttX()), sum_s_bytes=int(disc.SumS()),
                           min_queue_bytes=int(disc.TakeMinQueueBytes()), queue_bytes=int(disc.QueueBytes()))

    def write_xcp(self, port: int, xi_p: float, xi_n: float, positive_total: float, negative_total: float) -> None:
        self.network.rcp_disc(self.switch, port).SetCoefficients(xi_p, xi_n, positive_total, negative_total)

    def install_weight_classes(self, ports: list[int], classes: dict[int, int]) -> dict[str, int]:
        if classes:
            raise ValueError("the ns-3 router model has no weight classes")
        return {}

    def install_routes(self, routes: list[Route]) -> dict[str, int]:
        """Once per run, into a router that has none."""
        self.network.install_routes(self.switch, routes)
        return {"added": len(routes), "modified": 0, "deleted": 0}

    def set_queue(self, port: int, rate_pps: int | None, depth_pkts: int) -> None:
        self.network.set_port(self.switch, port, rate_pps, depth_pkts)

"""An experiment's topology (p4rcp.topology's Topology) as an ns-3 network: one node per host and switch,
one point-to-point link per Link, the same addresses, propagation delays and loss, the bottleneck
ports' rates and queue limits, RcpQueueDisc on every RCP port. The control plane installs the switches'
routes and queue settings through topo/ns3/driver.py, as it programs bmv2.

Rates: C counts Ethernet frames (docs/protocol.md, "Units"), ns-3's point-to-point links serialise PPP
frames (2 bytes of header against Ethernet's 14). A link's rate is scaled so that a full data frame takes
exactly the time it takes at C; smaller frames (SYN, FIN, ACKs) take 12 bytes' time less than on Ethernet.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from p4rcp.topology import ETHERNET_HEADER_BYTES, Route, Topology

PPP_HEADER_BYTES = 2
# Links that Mininet leaves unshaped (veth pairs: receivers' links, the acknowledgements' direction of a
# bottleneck, senders without an access rate) run at this multiple of the fastest bottleneck: fast
# enough never to queue, a rate all the same since every ns-3 link has one.
UNSHAPED_SPEEDUP = 10
# Addresses of the switches' ends of the links; the hosts keep the topology's.
SWITCH_ADDRESSES = ipaddress.ip_network("192.168.0.0/16")
# A sender NIC's queue: the Mininet hosts' (topo/mininet/network.py, ACCESS_QUEUE_FRAMES).
ACCESS_QUEUE_FRAMES = 1000
RTT_SAMPLES = ("departure", "arrival")          # RcpQueueDisc's RttSamples: p4rcp's, ns-2's
# RcpQueueDisc's QueueSample: p4rcp's (deq_qdepth), an older p4rcp's (enq_qdepth), ns-2's
QUEUE_SAMPLES = ("departure-depth", "enqueue-depth", "at-read")


@dataclass
class Port:
    device: object          # ns3::PointToPointNetDevice
    interface: int          # IPv4 interface index on the node
    peer: object            # ns3::Ipv4Address of the other end
    disc: object            # its queue disc: p4rcp::RcpQueueDisc on RCP ports


@dataclass(frozen=True)
class RouterOptions:
    """Where RcpQueueDisc differs from ns-2's rcp.cc, as options (topo/ns3/model/rcp-queue-disc.h)."""
    rtt_samples: str = "departure"
    queue_sample: str = "departure-depth"

    def __post_init__(self):
        if self.rtt_samples not in RTT_SAMPLES:
            raise ValueError(f"rtt_samples must be one of {', '.join(RTT_SAMPLES)}, got {self.rtt_samples!r}")
        if self.queue_sample not in QUEUE_SAMPLES:
            raise ValueError(f"queue_sample must be one of {', '.join(QUEUE_SAMPLES)}, got {self.queue_sample!r}")


class SimNetwork:
    def __init__(self, ns, p4rcp, topology: Topology, router: RouterOptions = RouterOptions()):
        self.ns, self.p4rcp, self.topology, self.router = ns, p4rcp, topology, router
        self.nodes = {}
        self.ports: dict[tuple[str, int], Port] = {}
        self.host_queues = {}           # sender host -> its NIC's queue disc
        self._addresses = SWITCH_ADDRESSES.hosts()
        self._build()

    def now(self) -> float:
        return self.ns.Simulator.Now().GetSeconds()

    def link_rate(self, frame_bps: float) -> float:
        """The point-to-point rate at which data frames take what they take at frame_bps."""
        frame = self.topology.data_frame_bytes
        return frame_bps * (frame - ETHERNET_HEADER_BYTES + PPP_HEADER_BYTES) / frame

    @property
    def unshaped_bps(self) -> float:
        t = self.topology
        return UNSHAPED_SPEEDUP * max(t.switch(s).ports[p].capacity_bps for s, p in t.bottlenecks)

    def _build(self) -> None:
        ns, t = self.ns, self.topology
        stack = ns.InternetStackHelper()
        for name in [*t.hosts, *t.switches]:
            node = ns.CreateObject[ns.Node]()
            stack.Install(node)
            self.nodes[name] = node
        for k, link in enumerate(t.links):
            if link.a in t.hosts:
                self._access_link(link, stream=k)
            else:
                self._trunk(link)

    def _switch_address(self):
        return self.ns.Ipv4Address(str(next(self._addresses)))

    def _access_link(self, link, stream: int) -> None:
        """A host's link to its switch: the host's NIC rate and queue, the delay both ways, loss on the
        host's direction. The host's default route goes to its switch."""
        ns, p4rcp, t = self.ns, self.p4rcp, self.topology
        host = t.hosts[link.a]
        nic_bps = host.access_mbps * 1e6 if host.access_mbps is not None else self.unshaped_bps
        devices = p4rcp.ConnectPointToPoint(self.nodes[host.name], self.nodes[link.b], self.link_rate(nic_bps),
                                            self.link_rate(self.unshaped_bps), link.delay_ms / 1000)
        host_if = p4rcp.AddInterface(self.nodes[host.name], devices.Get(0), ns.Ipv4Address(host.ip))
        self.host_queues[host.name] = p4rcp.InstallHostQueueDisc(devices.Get(0), ACCESS_QUEUE_FRAMES)
        switch_address = self._switch_address()
        switch_if = p4rcp.AddInterface(self.nodes[link.b], devices.Get(1), switch_address)
        p4rcp.SetDefaultRoute(self.nodes[host.name], switch_address, host_if)
        port = t.switch(link.b).ports[link.b_port]
        self.ports[(link.b, link.b_port)] = Port(devices.Get(1), switch_if, ns.Ipv4Address(host.ip),
                                                 p4rcp.InstallFifoQueueDisc(devices.Get(1), port.queue_depth_pkts))
        if link.loss_pct:
            p4rcp.SetReceiveLoss(devices.Get(1), link.loss_pct / 100, stream)

    def _trunk(self, link) -> None:
        """A switch-to-switch link: an RCP port shapes the a -> b direction at C (p4rcp.topology, trunk)."""
        p4rcp, t = self.p4rcp, self.topology
        a_port, b_port = t.switch(link.a).ports[link.a_port], t.switch(link.b).ports[link.b_port]
        a_bps = a_port.capacity_bps if a_port.is_rcp else self.unshaped_bps
        devices = p4rcp.ConnectPointToPoint(self.nodes[link.a], self.nodes[link.b], self.link_rate(a_bps),
                                            self.link_rate(self.unshaped_bps), link.delay_ms / 1000)
        a_address, b_address = self._switch_address(), self._switch_address()
        a_if = p4rcp.AddInterface(self.nodes[link.a], devices.Get(0), a_address)
        b_if = p4rcp.AddInterface(self.nodes[link.b], devices.Get(1), b_address)
        if a_port.is_rcp:
            a_disc = p4rcp.InstallRcpQueueDisc(devices.Get(0), a_port.queue_depth_pkts, self.router.rtt_samples,
                                               self.router.queue_sample)
        else:
            a_disc = p4rcp.InstallFifoQueueDisc(devices.Get(0), a_port.queue_depth_pkts)
        self.ports[(link.a, link.a_port)] = Port(devices.Get(0), a_if, b_address, a_disc)
        self.ports[(link.b, link.b_port)] = Port(devices.Get(1), b_if, a_address,
                                                 p4rcp.InstallFifoQueueDisc(devices.Get(1), b_port.queue_depth_pkts))

    # What the control plane programs (topo/ns3/driver.py).

    def install_routes(self, switch: str, routes: list[Route]) -> None:
        node = self.nodes[switch]
        for route in routes:
            port = self.ports[(switch, route.port)]
            destination = self.ns.Ipv4Address(route.prefix.split("/")[0])
            self.p4rcp.AddHostRoute(node, destination, port.peer, port.interface)

    def set_port(self, switch: str, port: int, rate_pps: int | None, depth_pkts: int) -> None:
        """A shaped port's rate (packets per second of data frames, as bmv2's set_queue_rate) and depth."""
        p = self.ports[(switch, port)]
        if rate_pps is not None:
            self.p4rcp.SetLinkRate(p.device, self.link_rate(rate_pps * self.topology.data_frame_bytes * 8.0))
        self.p4rcp.SetQueueLimit(p.disc, depth_pkts)

    def rcp_disc(self, switch: str, port: int):
        return self.ports[(switch, port)].disc

    def dropped(self, switch: str, port: int) -> int:
        return int(self.p4rcp.QueueDiscDropped(self.ports[(switch, port)].disc))

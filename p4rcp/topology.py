"""Topologies: a TOML file of parameters expands into a concrete graph.

A file names a ``kind`` (``dumbbell``, ``parking_lot``) and its parameters;
``load_topology`` returns a :class:`Topology` with every host, switch port,
link, route and RCP port spelled out. Mininet (``topo/``) builds the network
from it and the control plane (``control_plane/``) programs each switch from
it, so the two can never disagree.

Bottlenecks are shaped inside bmv2 (``set_queue_rate`` in packets per second)
so that the queue forms where the P4 program sees it. The capacity C given to
the control plane is that packet rate times ``data_frame_bytes``, the size of
a full data frame of the hosts' transport: exactly the shaped rate for data.
Their queues hold at least one bandwidth-delay product by default, as the RCP
papers size them (``queue_packets = "bdp"``).

A sender's access link (its NIC) runs at ``access_speedup`` times the fastest
bottleneck, as hosts in the papers' test beds have NICs faster than the
bottleneck but not unbounded: without it a sender that overshoots (PCC's
start-up doubles its rate for a round trip after it passes C) offers bmv2
more frames per second than its receive thread can read.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from p4rcp.tables import number, unknown_keys

# 14 (Ethernet) + 20 (IPv4) + 8 (UDP) + 16 (RCP) + 20 (host DATA header, hosts/src/transport/wire.rs) + 1000 (MSS).
DATA_HEADER_BYTES = 78
ETHERNET_HEADER_BYTES = 14     # hosts' MTU = data_frame_bytes - this, for every scheme
DEFAULT_DATA_FRAME_BYTES = DATA_HEADER_BYTES + 1000
DEFAULT_QUEUE_PACKETS = 64    # bmv2's own default: unshaped ports, and the least a shaped one gets
FIRST_THRIFT_PORT = 9090


class TopologyError(ValueError):
    """A topology file that cannot describe a network."""


@dataclass(frozen=True)
class Host:
    name: str
    ip: str            # without prefix length
    mac: str
    switch: str
    port: int          # switch port the host is attached to
    delay_ms: float    # one-way propagation delay of the access link
    loss_pct: float    # random loss on the access link (host egress)
    access_mbps: float | None = None   # the access link's rate, host egress; None: unlimited


@dataclass
class SwitchPort:
    number: int
    peer: str                       # host or switch name
    mac: str
    capacity_bps: float | None = None   # set on RCP ports only
    queue_rate_pps: int | None = None   # None: unshaped
    queue_depth_pkts: int = DEFAULT_QUEUE_PACKETS

    @property
    def is_rcp(self) -> bool:
        return self.capacity_bps is not None


@dataclass
class Switch:
    name: str
    thrift_port: int
    ports: dict[int, SwitchPort] = field(default_factory=dict)

    @property
    def rcp_ports(self) -> list[SwitchPort]:
        return [p for p in self.ports.values() if p.is_rcp]


@dataclass(frozen=True)
class Link:
    a: str
    a_port: int | None   # None on the host side
    b: str
    b_port: int
    delay_ms: float = 0.0
    loss_pct: float = 0.0


@dataclass(frozen=True)
class Route:
    prefix: str          # "10.0.0.2/32"
    port: int
    src_mac: str
    dst_mac: str


@dataclass
class Topology:
    name: str
    kind: str
    hosts: dict[str, Host]
    switches: dict[str, Switch]
    links: list[Link]
    data_frame_bytes: int
    senders: list[str]
    receivers: list[str]
    params: dict
    bottlenecks: list[tuple[str, int]]   # (switch, port) of each shaped link, in the senders' direction
    source: dict = field(default_factory=dict)   # the parameters it was built from: build_topology(source)

    @property
    def mss_bytes(self) -> int:
        """Application bytes in a full data frame: goodput at capacity is C * mss_bytes / data_frame_bytes."""
        return self.data_frame_bytes - DATA_HEADER_BYTES

    def payload_bps(self, frame_bps: float) -> float:
        """Application goodput of full data frames sent at frame_bps (a capacity, a fair share)."""
        return frame_bps * self.mss_bytes / self.data_frame_bytes

    def path(self, sender: str, receiver: str) -> list[tuple[str, int]]:
        """The shaped links (switch, port) a flow from sender to receiver crosses, in order."""
        dst = f"{self.hosts[receiver].ip}/32"
        here, links = self.hosts[sender].switch, []
        for _ in self.switches:
            port = next(r.port for r in self.routes(here) if r.prefix == dst)
            if (here, port) in self.bottlenecks:
                links.append((here, port))
            peer = self.switch(here).ports[port].peer
            if peer == receiver:
                return links
            here = peer
        raise TopologyError(f"no loop-free path from {sender} to {receiver}")

    def switch(self, name: str) -> Switch:
        try:
            return self.switches[name]
        except KeyError:
            raise TopologyError(f"topology {self.name!r} has no switch {name!r}; "
                                f"it has {', '.join(sorted(self.switches))}") from None

    def routes(self, switch_name: str) -> list[Route]:
        """One /32 route per host, along a shortest path (hops) from this switch."""
        switch = self.switch(switch_name)
        first_port = self._first_hop_ports(switch_name)
        routes = []
        for host in self.hosts.values():
            if host.switch == switch_name:
                port = switch.ports[host.port]
                routes.append(Route(f"{host.ip}/32", port.number, port.mac, host.mac))
                continue
            out = first_port.get(host.switch)
            if out is None:
                raise TopologyError(f"no path from {switch_name} to {host.name}")
            port = switch.ports[out]
            neighbour = self.switches[port.peer]
            peer_port = next(p for p in neighbour.ports.values() if p.peer == switch_name)
            routes.append(Route(f"{host.ip}/32", port.number, port.mac, peer_port.mac))
        return routes

    def _first_hop_ports(self, start: str) -> dict[str, int]:
        """Breadth-first search over switches: destination switch -> port out of start."""
        first: dict[str, int] = {}
        queue = deque()
        for port in self.switches[start].ports.values():
            if port.peer in self.switches and port.peer not in first:
                first[port.peer] = port.number
                queue.append(port.peer)
        while queue:
            here = queue.popleft()
            for port in self.switches[here].ports.values():
                if port.peer in self.switches and port.peer != start and port.peer not in first:
                    first[port.peer] = first[here]
                    queue.append(port.peer)
        return first


class _Builder:
    """Accumulates hosts, switches and links with consistent addressing."""

    def __init__(self, name: str, kind: str, params: dict, data_frame_bytes: int, queue_packets: int | str):
        self.name, self.kind, self.params = name, kind, params
        self.data_frame_bytes = data_frame_bytes
        self.queue_packets = queue_packets
        self.hosts: dict[str, Host] = {}
        self.switches: dict[str, Switch] = {}
        self.links: list[Link] = []
        self.senders: list[str] = []
        self.receivers: list[str] = []
        self.bottlenecks: list[tuple[str, int]] = []

    def switch(self, name: str) -> Switch:
        index = len(self.switches) + 1
        sw = Switch(name, FIRST_THRIFT_PORT + index - 1)
        self.switches[name] = sw
        return sw

    def _add_port(self, sw: Switch, peer: str) -> SwitchPort:
        number = len(sw.ports) + 1
        sw_index = list(self.switches).index(sw.name) + 1
        port = SwitchPort(number, peer, f"00:aa:00:00:{sw_index:02x}:{number:02x}")
        sw.ports[number] = port
        return port

    def host(self, name: str, sw: Switch, delay_ms: float, loss_pct: float) -> Host:
        index = len(self.hosts) + 1
        port = self._add_port(sw, name)
        host = Host(name, f"10.0.{index // 250}.{index % 250 + 1}", f"00:00:00:00:{index // 256:02x}:{index % 256:02x}",
                    sw.name, port.number, delay_ms, loss_pct)
        self.hosts[name] = host
        self.links.append(Link(name, None, sw.name, port.number, delay_ms, loss_pct))
        return host

    def trunk(self, a: Switch, b: Switch, rate_mbps: float | None, rtt_ms: float = 0.0) -> None:
        """A switch-to-switch link; rate_mbps shapes the a -> b direction (the
        senders' data) and makes it an RCP port, whose queue holds one
        bandwidth-delay product at rtt_ms (the longest base RTT crossing it)
        unless the topology sets queue_packets. The b -> a direction carries
        the acknowledgements and stays unshaped: bmv2 shapes in packets per
        second, and ACKs come at the data packet rate."""
        pa, pb = self._add_port(a, b.name), self._add_port(b, a.name)
        if rate_mbps is not None:
            pps = round(rate_mbps * 1e6 / (8 * self.data_frame_bytes))
            if pps <= 0:
                raise TopologyError(f"bottleneck rate {rate_mbps} Mb/s is below one packet per second")
            pa.queue_rate_pps = pps
            pa.capacity_bps = pps * self.data_frame_bytes * 8.0
            pa.queue_depth_pkts = (bdp_packets(pps, rtt_ms) if self.queue_packets == "bdp"
                                   else self.queue_packets)
            self.bottlenecks.append((a.name, pa.number))
        self.links.append(Link(a.name, pa.number, b.name, pb.number))

    def build(self) -> Topology:
        return Topology(self.name, self.kind, self.hosts, self.switches, self.links,
                        self.data_frame_bytes, self.senders, self.receivers, self.params, self.bottlenecks)


def _dumbbell(b: _Builder, p: dict) -> None:
    """N senders on s1, N receivers on s2, one shaped link s1-s2.

    rtt_ms[i] is pair i's base RTT; the delay is put on the sender's access
    link (netem delays egress, so each direction of the link adds it once).
    """
    pairs = _positive_int(p, "pairs")
    rtts = _positive_floats(p, "rtt_ms", pairs, f"{pairs} positive values (or one for all)", default=40)
    loss = _number(p, "loss_pct", default=0.0, minimum=0, below=100)
    s1, s2 = b.switch("s1"), b.switch("s2")
    for i in range(pairs):
        b.senders.append(b.host(f"h{i + 1}", s1, rtts[i] / 2.0, loss).name)
    for i in range(pairs):
        b.receivers.append(b.host(f"r{i + 1}", s2, 0.0, 0.0).name)
    b.trunk(s1, s2, _positive_float(p, "bottleneck_mbps"), max(rtts))


def _parking_lot(b: _Builder, p: dict) -> None:
    """A chain of `bottlenecks` shaped links s1 -> s2 -> ... (link i from s_i
    to s_i+1, rate bottleneck_mbps[i], or one rate for all). Sender h_i sits
    on s_i and receiver r_i on s_i+1, so a flow from h_i to r_j crosses links
    i to j: h1 -> r1 one link, h1 -> rN all of them."""
    n = _positive_int(p, "bottlenecks")
    rates = _positive_floats(p, "bottleneck_mbps", n, f"one positive rate or {n}")
    rtt = _positive_float({"rtt_ms": p.get("rtt_ms", 40)}, "rtt_ms")
    switches = [b.switch(f"s{i + 1}") for i in range(n + 1)]
    for left, right, rate in zip(switches, switches[1:], rates):
        b.trunk(left, right, rate, rtt)
    for i in range(n):
        b.senders.append(b.host(f"h{i + 1}", switches[i], rtt / 2.0, 0.0).name)
    for i in range(n):
        b.receivers.append(b.host(f"r{i + 1}", switches[i + 1], 0.0, 0.0).name)


def bdp_packets(rate_pps: float, rtt_ms: float) -> int:
    """One bandwidth-delay product in packets, and never below bmv2's default queue."""
    return max(math.ceil(rate_pps * rtt_ms / 1000), DEFAULT_QUEUE_PACKETS)


KINDS = {"dumbbell": _dumbbell, "parking_lot": _parking_lot}
# Every kind's parameters; a topology file or an experiment's [topology_params] may set no other.
COMMON_PARAMETERS = frozenset({"kind", "data_frame_bytes", "queue_packets", "access_speedup"})
KIND_PARAMETERS = {"dumbbell": frozenset({"pairs", "rtt_ms", "bottleneck_mbps", "loss_pct"}),
                   "parking_lot": frozenset({"bottlenecks", "bottleneck_mbps", "rtt_ms"})}


def parameters(kind: str) -> frozenset[str]:
    """The keys a topology of this kind takes."""
    return COMMON_PARAMETERS | KIND_PARAMETERS.get(kind, frozenset())


def _number(p: dict, key: str, **bounds) -> float:
    try:
        return number(p, key, "topology", **bounds)
    except ValueError as e:
        raise TopologyError(str(e).removeprefix("topology: ")) from None


def _positive_int(p: dict, key: str) -> int:
    value = p.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise TopologyError(f"{key} must be a positive integer, got {value!r}")
    return value


def _positive_float(p: dict, key: str) -> float:
    value = p.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise TopologyError(f"{key} must be a positive number, got {value!r}")
    return float(value)


def _positive_floats(p: dict, key: str, n: int, need: str, default=None) -> list[float]:
    """One positive number for all n, or a list of n of them; `need` says so in the error."""
    value = p.get(key, default)
    values = [value] * n if not isinstance(value, list) else value
    if len(values) != n or not all(not isinstance(v, bool) and isinstance(v, (int, float)) and 0 < v < math.inf
                                   for v in values):
        raise TopologyError(f"{key} needs {need}, got {value!r}")
    return [float(v) for v in values]


def build_topology(params: dict, name: str = "topology") -> Topology:
    source = dict(params)
    params = dict(params)
    kind = params.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        raise TopologyError(f"{name}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    unknown = unknown_keys(params, parameters(kind), f"{name} ({kind})")
    if unknown:
        raise TopologyError(unknown)
    params.pop("kind")
    frame = params.pop("data_frame_bytes", DEFAULT_DATA_FRAME_BYTES)
    if isinstance(frame, bool) or not isinstance(frame, int) or not DATA_HEADER_BYTES < frame <= 9000:
        raise TopologyError(f"{name}: data_frame_bytes must be an integer in ({DATA_HEADER_BYTES}, 9000], got {frame!r}")
    queue = params.pop("queue_packets", "bdp")
    if queue != "bdp" and (isinstance(queue, bool) or not isinstance(queue, int) or queue <= 0):
        raise TopologyError(f"{name}: queue_packets must be a positive integer or \"bdp\", got {queue!r}")
    speedup = params.pop("access_speedup", None)
    if speedup is not None and (isinstance(speedup, bool) or not isinstance(speedup, (int, float))
                                or not 1 <= speedup < math.inf):
        raise TopologyError(f"{name}: access_speedup must be a number >= 1 (an access link slower than the "
                            f"bottleneck would be the bottleneck, unseen by RCP), got {speedup!r}")
    builder = _Builder(name, kind, params, frame, queue)
    KINDS[kind](builder, params)
    topology = builder.build()
    topology.source = source
    if speedup is not None:
        fastest_bps = max(topology.switch(s).ports[p].capacity_bps for s, p in topology.bottlenecks)
        for sender in topology.senders:
            topology.hosts[sender] = dataclasses.replace(topology.hosts[sender],
                                                         access_mbps=speedup * fastest_bps / 1e6)
    return topology


def load_topology(path: str | Path, **overrides) -> Topology:
    """Read a topology file; keyword overrides replace its parameters."""
    path = Path(path)
    try:
        params = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise TopologyError(f"topology file {path} does not exist") from None
    except tomllib.TOMLDecodeError as e:
        raise TopologyError(f"topology file {path}: {e}") from None
    params.update(overrides)
    return build_topology(params, name=path.stem)

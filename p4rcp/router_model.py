"""The router of docs/protocol.md in Python, frame by frame: where each frame goes, with which bytes, and what
it adds to the router's counts. The fuzz test (ptf_tests/fuzz.py) holds bmv2 to it packet by packet.

It reads frames as bytes (no Scapy), from the specification alone: "Which datagrams are RCP", "What a
router does per packet", "What a router does with everything else". Where the table there says a runt or
truncated frame is dropped, "the headers it announces" are the ones the router reads: the Ethernet header;
the 20-byte IPv4 header of an IPv4 frame; the UDP or TCP header of an unfragmented datagram; and of a UDP
datagram on port 6577 whose length field leaves room for the RCP header, its first byte (version and type),
and all 16 bytes when that byte says it is a forward RCP packet (DATA, SYN or REF of version 1), and then
the 12 bytes of the XCP header when its flags hold FLAG_XCP and the UDP length leaves room for it. Bytes
beyond those (a payload shorter than the lengths say, Ethernet padding) are not read and pass unchanged.

Policing is not modelled: a model with policing parameters refuses to run (ValueError).
"""

from __future__ import annotations

import ipaddress
import struct
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from p4rcp import dataplane as dp
from p4rcp.protocol import (DATA, FLAG_ENDING, FLAG_XCP, RCP_HEADER_LEN, RCP_MAX_RTT_US, RCP_UDP_PORT, RCP_VERSION,
                            REF, SYN, XCP_HEADER_LEN)
from p4rcp.topology import Route
from p4rcp.xcp_law import xcp_charged_feedback

ETHERTYPE_IPV4 = 0x0800
IPV4_HEADER = 20
UDP_HEADER = 8
TCP_HEADER = 20
PROTO_TCP, PROTO_UDP = 6, 17
MASK32 = 0xFFFFFFFF
MASK64 = (1 << 64) - 1


@dataclass
class PortCounts:
    """One output port's counts, monotonic but for what XCP has left (docs/dataplane.md, "Registers, counters and
    tables")."""
    input_packets: int = 0
    input_bytes: int = 0
    rtt_sum_us: int = 0          # 32 bits, wraps
    rtt_count: int = 0
    long_arrivals: int = 0       # 32 bits each, wrap
    committed_arrivals: int = 0
    committed_departures: int = 0
    xcp_sum_x: int = 0           # 64 bits each, wrap (docs/xcp.md, "The XCP router in P4")
    xcp_sum_rtt_x: int = 0
    xcp_sum_s: int = 0
    xcp_positive_left: int = 0   # what is left of the interval's totals (RouterModel.xcp's) as packets use it
    xcp_negative_left: int = 0


@dataclass(frozen=True)
class Forwarded:
    port: int
    frame: bytes


def ones_sum(data: bytes) -> int:
    """The 16-bit ones'-complement sum of data (padded to an even length), end-around carries folded."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def ipv4_checksum(header: bytes) -> int:
    """The header checksum of a 20-byte IPv4 header (its checksum field taken as 0)."""
    return ~ones_sum(header[:10] + b"\0\0" + header[12:20]) & 0xFFFF


def udp_checksum_after_stamp(checksum: int, old: int, new: int) -> int:
    """The UDP checksum after a 32-bit field of the datagram went from old to new: RFC 1624, eq. 3, HC' =
    ~(~HC + ~m + m'); a datagram sent without one (0) keeps none; a result of 0 is sent as 0xFFFF (RFC 768)."""
    if checksum == 0:
        return 0
    terms = (~checksum & 0xFFFF, ~old >> 16 & 0xFFFF, ~old & 0xFFFF, new >> 16, new & 0xFFFF)
    total = sum(terms)
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    result = ~total & 0xFFFF
    return result or 0xFFFF


@dataclass
class RouterModel:
    """One router: its routes, the control plane's cells (stamps by (port, class) cell, the weight classes,
    each port's SynGrants, the XCP port's dp.XcpControl where XCP is on) as the control
    plane wrote them, and the counts packets made.
    Stamps are kb/s, RATE_NONE (or absent) for none; the model holds what the cells mean, not their
    encoding."""
    routes: list[Route]
    stamps: dict[int, int] = field(default_factory=dict)
    classes: dict[tuple[int, int], int] = field(default_factory=dict)       # (port, DSCP) -> cell
    syn_grants: dict[int, dp.SynGrants] = field(default_factory=dict)
    police: dict[int, tuple[int, int]] = field(default_factory=dict)
    xcp: dict[int, dp.XcpControl] = field(default_factory=dict)
    counts: dict[int, PortCounts] = field(default_factory=dict)
    ingress_packets: dict[int, int] = field(default_factory=dict)
    outcomes: Counter = field(default_factory=Counter)     # what happened to the frames, by kind: a coverage

    def __post_init__(self):
        if any(limit for _, limit in self.police.values()):
            raise ValueError("the router model does not model policing: give every cell a limit of 0")
        for port, control in self.xcp.items():
            counts = self.port(port)
            counts.xcp_positive_left, counts.xcp_negative_left = control.positive_left, control.negative_left
        self._routes = sorted(((ipaddress.ip_network(r.prefix), r) for r in self.routes),
                              key=lambda nr: nr[0].prefixlen, reverse=True)

    def port(self, p: int) -> PortCounts:
        return self.counts.setdefault(p, PortCounts())

    def route(self, dst: bytes) -> Route | None:
        address = ipaddress.IPv4Address(dst)
        return next((r for net, r in self._routes if address in net), None)

    def stamp(self, port: int, dscp: int) -> int:
        cell = self.classes.get((port, dscp), dp.UNCLASSIFIED_CELL)
        return self.stamps.get(cell, dp.RATE_NONE)

    def process(self, frame: bytes, in_port: int = 0) -> Forwarded | None:
        """What the router does with one frame: the frame it sends and where, or None (dropped)."""
        self.ingress_packets[in_port] = self.ingress_packets.get(in_port, 0) + 1
        outcome, forwarded = self._process(frame)
        self.outcomes[outcome] += 1
        return forwarded

    def _process(self, frame: bytes) -> tuple[str, Forwarded | None]:
        if len(frame) < 14 or struct.unpack_from("!H", frame, 12)[0] != ETHERTYPE_IPV4:
            return "dropped: a runt or not IPv4", None
        ip = 14
        if len(frame) < ip + IPV4_HEADER:
            return "dropped: IPv4 header cut short", None
        version_ihl, tos, ttl, proto = frame[ip], frame[ip + 1], frame[ip + 8], frame[ip + 9]
        if version_ihl != 0x45:
            return "dropped: IPv4 version not 4, or IHL not 5", None
        header = frame[ip:ip + IPV4_HEADER]
        if struct.unpack_from("!H", header, 10)[0] != ipv4_checksum(header):
            return "dropped: bad IPv4 header checksum", None
        flags_frag = struct.unpack_from("!H", header, 6)[0]
        fragment = bool(flags_frag & 0x2000) or flags_frag & 0x1FFF != 0
        l4 = ip + IPV4_HEADER
        rcp = xcp = None                                   # offsets of a forward RCP header and its XCP header
        if not fragment and proto == PROTO_TCP and len(frame) < l4 + TCP_HEADER:
            return "dropped: TCP header cut short", None
        if not fragment and proto == PROTO_UDP:
            if len(frame) < l4 + UDP_HEADER:
                return "dropped: UDP header cut short", None
            sport, dport, length = struct.unpack_from("!HHH", frame, l4)
            if RCP_UDP_PORT in (sport, dport) and length >= UDP_HEADER + RCP_HEADER_LEN:
                start = l4 + UDP_HEADER
                if len(frame) < start + 1:
                    return "dropped: RCP header's first byte missing", None
                version, kind = frame[start] >> 4, frame[start] & 0x0F
                if version == RCP_VERSION and kind in (DATA, SYN, REF):
                    if len(frame) < start + RCP_HEADER_LEN:
                        return "dropped: forward RCP header cut short", None
                    rcp = start
                    if frame[start + 1] & FLAG_XCP and length >= UDP_HEADER + RCP_HEADER_LEN + XCP_HEADER_LEN:
                        if len(frame) < start + RCP_HEADER_LEN + XCP_HEADER_LEN:
                            return "dropped: XCP header cut short", None
                        xcp = start + RCP_HEADER_LEN
        if ttl <= 1:
            return "dropped: TTL 0 or 1", None
        route = self.route(header[16:20])
        if route is None:
            return "dropped: no route", None
        out = bytearray(frame)
        out[0:6], out[6:12] = bytes.fromhex(route.dst_mac.replace(":", "")), bytes.fromhex(route.src_mac.replace(":", ""))
        out[ip + 8] = ttl - 1
        struct.pack_into("!H", out, ip + 10, ipv4_checksum(bytes(out[ip:ip + IPV4_HEADER])))
        counts = self.port(route.port)
        counts.input_packets += 1
        counts.input_bytes += len(frame)
        outcome = "routed, not a forward RCP packet"
        if rcp is not None:
            outcome = self._rcp(out, l4, rcp, route.port, tos >> 2, counts)
        if xcp is not None:
            outcome += self._xcp(out, l4, rcp, xcp, route.port, struct.unpack_from("!H", header, 2)[0], counts)
        return outcome, Forwarded(route.port, bytes(out))

    def _rcp(self, out: bytearray, l4: int, rcp: int, port: int, dscp: int, counts: PortCounts) -> str:
        """A forward RCP packet leaving `port`: the feedforward's counts, the RTT sample, the stamp."""
        kind, flags = out[rcp] & 0x0F, out[rcp + 1]
        size = struct.unpack_from("!H", out, rcp + 2)[0]
        rate, rtt = struct.unpack_from("!II", out, rcp + 4)
        grants = self.syn_grants.get(port, dp.SynGrants.at_reset())
        committed = min(size, grants.grant_packets)
        stamp = self.stamp(port, dscp)
        capped = False
        if kind == SYN:
            counts.committed_arrivals = (counts.committed_arrivals + committed) & MASK32
            if size > grants.long_packets:
                counts.long_arrivals = (counts.long_arrivals + 1) & MASK32
                k = min((counts.long_arrivals - grants.base - 1) & MASK32, dp.SYN_RATES - 1)
                syn = grants.long_kbps[k]
            else:
                syn = grants.short_kbps
            capped = syn < stamp
            stamp = min(stamp, syn)
        elif kind == DATA and flags & FLAG_ENDING:
            counts.committed_departures = (counts.committed_departures + committed) & MASK32
        sampled = 0 < rtt <= RCP_MAX_RTT_US
        if sampled:
            counts.rtt_sum_us = (counts.rtt_sum_us + rtt) & MASK32
            counts.rtt_count += 1
        stamped = rate > stamp
        if stamped:
            checksum = struct.unpack_from("!H", out, l4 + 6)[0]
            struct.pack_into("!H", out, l4 + 6, udp_checksum_after_stamp(checksum, rate, stamp))
            struct.pack_into("!I", out, rcp + 4, stamp)
        return (f"forward RCP, {'stamped' if stamped else 'not stamped'}{' by its SYN stamp' if stamped and capped else ''}"
                f", {'an' if sampled else 'no'} RTT sample")


    def _xcp(self, out: bytearray, l4: int, rcp: int, xcp: int, port: int, total_len: int, counts: PortCounts) -> str:
        """A forward XCP packet leaving `port`, after RCP's work: the sums and H_feedback lowered to the router's
        feedback (p4rcp.dataplane.xcp_router_feedback), when it carries an RTT and x and XCP is on there (the
        port has coefficients in self.xcp)."""
        rtt = struct.unpack_from("!I", out, rcp + 8)[0]
        x, feedback = struct.unpack_from("!Ii", out, xcp + 4)
        if not (0 < rtt <= RCP_MAX_RTT_US and x > 0):
            return ", XCP without an RTT or x"
        if port not in self.xcp:
            return ", XCP off on its port"
        s = total_len + 14
        counts.xcp_sum_x = (counts.xcp_sum_x + x) & MASK64
        counts.xcp_sum_rtt_x = (counts.xcp_sum_rtt_x + rtt * x) & MASK64
        counts.xcp_sum_s = (counts.xcp_sum_s + s) & MASK64
        control = self.xcp[port]
        p, n = dp.xcp_router_feedback(control.xi_p, control.xi_n, rtt, x, s, counts.xcp_positive_left,
                                      counts.xcp_negative_left)
        # in whole bytes, as the data plane: the rule keeps integers integers
        charged_p, charged_n = xcp_charged_feedback(p, n, feedback, counts.xcp_negative_left)
        counts.xcp_positive_left -= charged_p
        counts.xcp_negative_left -= charged_n
        ours = p - n
        if ours >= feedback:
            return ", XCP counted, feedback kept"
        lowered = max(ours, dp.XCP_FEEDBACK_MIN)
        checksum = struct.unpack_from("!H", out, l4 + 6)[0]
        struct.pack_into("!H", out, l4 + 6, udp_checksum_after_stamp(checksum, feedback & MASK32, lowered & MASK32))
        struct.pack_into("!i", out, xcp + 8, lowered)
        return ", XCP counted, feedback lowered"


def process_all(model: RouterModel, frames: Iterable[bytes], in_port: int = 0) -> list[Forwarded | None]:
    return [model.process(f, in_port) for f in frames]

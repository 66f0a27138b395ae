"""Fuzzing the router: random and structurally fuzzed frames through bmv2, between well-formed RCP flows, each
checked against the Python router of docs/protocol.md (p4rcp/router_model.py).

python -m ptf_tests.fuzz [--packets 50000] [--seed 1] [--scapy 5000]

Every frame enters port 0. The well-formed flows (DATA, SYN, REF and ENDING DATA of a few flows, two weight
classes) go to port 2 and are the only traffic routed there; the fuzzed frames go anywhere else, or nowhere.
What is checked:
- every frame the switch sends, port by port and in order, is the one the model sends, byte for byte, and
  nothing else leaves the switch;
- every count of every port (input packets and bytes, RTT samples and their sum, long SYNs, the committed
  sizes of SYNs and ENDING packets) is the model's, and port 2's are exactly what the well-formed frames alone give, so R, which
  the control plane computes from them, is too;
- the cells the control plane writes (stamps, SYN grants, policing, XCP's coefficients) are as written, and
  the policing sketch, off, stays empty.

The fuzzed frames: Scapy's fuzz() of Ethernet/IPv4/UDP/RCP and of Ethernet/IPv4/TCP (every field not set
random, lengths and checksums computed), and, because Scapy's fuzz() costs about 2.7 ms a frame on these
machines, p4rcp's own structural fuzzer for the bulk: each header field drawn at random, with the values
that decide the router's branches over-represented (every RCP version and type, rates and RTTs at and
around their bounds, TTLs 0-2, IHL and version, fragments, UDP lengths around the RCP header's, checksums
right, wrong or 0), frames cut short at random, and random bytes behind an Ethernet header.
"""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import random
import socket
import struct
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from control_plane.bmv2_thrift import Bmv2ThriftDriver
from control_plane.simple_switch import SimpleSwitch
from p4rcp import dataplane as dp
from p4rcp.protocol import DATA, FLAG_ENDING, FLAG_XCP, RCP_MAX_RTT_US, RCP_UDP_PORT, REF, SYN
from p4rcp.router_model import PROTO_TCP, PROTO_UDP, Forwarded, PortCounts, RouterModel, ipv4_checksum, ones_sum
from p4rcp.toolchain import BUILD_JSON
from p4rcp.topology import Route
from p4rcp.veth import VethPairs, capture_socket, free_tcp_port

PORTS = (0, 1, 2, 3)
SWITCH_MAC = {p: f"00:aa:00:00:00:0{p}" for p in PORTS}
HOST_MAC = {p: f"00:00:00:00:00:0{p}" for p in PORTS}
ROUTES = [Route(f"10.0.{p}.0/24", p, SWITCH_MAC[p], HOST_MAC[p]) for p in PORTS]
FLOW_PORT = 2                     # the well-formed flows' port; nothing fuzzed is routed there
FLOW_NET = ipaddress.ip_network("10.0.2.0/24")
GOLD_DSCP = 10                    # weight class 1
STAMPS = {dp.rate_cell(0): 3000, dp.rate_cell(2, 0): 5000, dp.rate_cell(2, 1): 1250, dp.rate_cell(3, 0): 7000,
          dp.rate_cell(3, 1): 1750}                           # port 1: none (RCP off there)
SYN_GRANTS = {2: dp.SynGrants(0, (4000, 3000, 2000, 1000, 900, 800, 700, 600), 450, 100, 50),
              3: dp.SynGrants(0, (6500, 3200, 1600, 800, 400, 200, 100, 50), 300, 80, 40)}
# XCP on ports 0 and 3 with these coefficient cells (positive and negative feedback), off on ports 1 and 2; port
# 3's totals run out within a run, port 0's do not
XCP_CELLS = {0: dp.XcpControl.of(3e8, 4e3, dp.XCP_LEFT_MAX, dp.XCP_LEFT_MAX),
             3: dp.XcpControl.of(4e10, 0, 200_000, 0)}
MAX_FRAME = 1514
WINDOW = 256                      # frames sent and not yet counted by the switch's ingress
QUEUE_DEPTH = 100_000             # every port's egress queue: nothing is lost waiting for egress
DRAIN_S = 10.0                    # for the last frames to come out
WELL_FORMED_EVERY = 4             # one well-formed frame after every 3 fuzzed ones
MAC = {p: bytes.fromhex(m.replace(":", "")) for p, m in SWITCH_MAC.items()}
RATE_EDGES = (0, 1, 2, 599, 600, 601, 1249, 1250, 1251, 2999, 3000, 3001, 4999, 5000, 5001, 6999, 7000, 7001,
              0x7FFFFFFF, 0x80000000, dp.RATE_NONE - 1, dp.RATE_NONE)
RTT_EDGES = (0, 1, 2, RCP_MAX_RTT_US - 1, RCP_MAX_RTT_US, RCP_MAX_RTT_US + 1, 1 << 24, 0x7FFFFFFF, 0xFFFFFFFF)


def weight_classes() -> dict[tuple[int, int], int]:
    """(port, DSCP) -> cell: GOLD_DSCP to class 1, every other DSCP to class 0, on every port."""
    return {(p, d): dp.rate_cell(p, 1 if d == GOLD_DSCP else 0) for p in PORTS for d in range(dp.NUM_DSCP)}


def model() -> RouterModel:
    return RouterModel(ROUTES, stamps=dict(STAMPS), classes=weight_classes(),
                       syn_grants=dict(SYN_GRANTS), xcp=dict(XCP_CELLS))


def udp_checksum(src: bytes, dst: bytes, udp: bytes) -> int:
    pseudo = src + dst + struct.pack("!BBH", 0, PROTO_UDP, len(udp))
    value = ~ones_sum(pseudo + udp[:6] + b"\0\0" + udp[8:]) & 0xFFFF
    return value or 0xFFFF


def ipv4(rng: random.Random, proto: int, payload: bytes, dst: bytes, *, fuzz: bool, src: bytes | None = None,
         tos: int | None = None) -> bytes:
    """A 20-byte IPv4 header and its payload; with `fuzz`, every field may be off."""
    version_ihl, ttl, flags_frag, total = 0x45, 64, 0, 20 + len(payload)
    tos = rng.randrange(256) if tos is None else tos
    if fuzz:
        # each field off now and then, so that most frames still reach the router's later branches
        if rng.random() < 0.08:
            version_ihl = rng.choice((0x44, 0x46, 0x4F, 0x40, 0x55, 0x65, 0x05, rng.randrange(256)))
        ttl = rng.choice((0, 1, 2, 255)) if rng.random() < 0.2 else rng.randrange(2, 256)
        if rng.random() < 0.25:
            flags_frag = rng.choice((0x2000, rng.randrange(1, 0x2000), rng.randrange(65536)))
        elif rng.random() < 0.3:
            flags_frag = 0x4000                                     # DF: not a fragment
        if rng.random() < 0.2:
            total = rng.randrange(65536)
    src = struct.pack("!I", rng.randrange(1 << 32)) if src is None else src
    header = bytearray(struct.pack("!BBHHHBBH4s4s", version_ihl, tos, total, rng.randrange(65536), flags_frag, ttl,
                                   proto, 0, src, dst))
    struct.pack_into("!H", header, 10, rng.randrange(65536) if fuzz and rng.random() < 0.08
                     else ipv4_checksum(bytes(header)))
    return bytes(header) + payload


def rcp_header(rng: random.Random, *, version=1, kind=DATA, flags=0, rate=None, rtt=None, size=None) -> bytes:
    """An RCP header; a rate or RTT not given is at or around a bound, in range, or any 32-bit value; a size
    not given is mostly 0, else any 16-bit value."""
    if size is None:
        size = rng.randrange(65536) if rng.random() < 0.2 else 0
    if rate is None:
        rate = rng.choice((rng.choice(RATE_EDGES), rng.randrange(8000), rng.randrange(1 << 32)))
    if rtt is None:
        rtt = rng.choice((rng.choice(RTT_EDGES), rng.randrange(1, RCP_MAX_RTT_US + 1), rng.randrange(1 << 32)))
    return struct.pack("!BBHIII", version << 4 | kind, flags, size, rate, rtt, rng.randrange(1 << 32))


def udp(rng: random.Random, src: bytes, dst: bytes, sport: int, dport: int, payload: bytes, *, fuzz: bool) -> bytes:
    length = 8 + len(payload)
    if fuzz and rng.random() < 0.15:
        length = rng.choice((0, 7, 8, 9, 23, 24, 25, rng.randrange(65536)))
    datagram = bytearray(struct.pack("!HHHH", sport, dport, length, 0) + payload)
    roll = rng.random()
    checksum = 0 if fuzz and roll < 0.15 else rng.randrange(65536) if fuzz and roll < 0.25 \
        else udp_checksum(src, dst, bytes(datagram))
    struct.pack_into("!H", datagram, 6, checksum)
    return bytes(datagram)


def ethernet(payload: bytes, ethertype: int = 0x0800, src: bytes = b"\0\0\0\0\0\x01") -> bytes:
    return MAC[0] + src + struct.pack("!H", ethertype) + payload


def fuzz_destination(rng: random.Random) -> bytes:
    """Any address but the well-formed flows' subnet: mostly the other ports' subnets, sometimes none routed."""
    while True:
        address = (ipaddress.IPv4Address(f"10.0.{rng.choice((0, 1, 3))}.{rng.randrange(256)}") if rng.random() < 0.85
                   else ipaddress.IPv4Address(rng.randrange(1 << 32)))
        if address not in FLOW_NET:
            return address.packed


def structural(rng: random.Random) -> bytes:
    """One frame of p4rcp's structural fuzzer."""
    dst = fuzz_destination(rng)
    src = struct.pack("!I", rng.randrange(1 << 32))
    kind = rng.random()
    body = rng.randbytes(rng.choice((0, 1, 15, 16, 17, rng.randrange(64), rng.randrange(1400))))
    if kind < 0.1:                                      # random bytes behind an Ethernet header
        ethertype = 0x0800 if rng.random() < 0.7 else rng.randrange(65536)
        frame = ethernet(rng.randbytes(rng.randrange(0, 200)), ethertype)
    elif kind < 0.75:                                    # UDP, often RCP: every version and type
        deep = rng.random() < 0.5                        # IPv4 and UDP right: the RCP header's fields alone fuzzed
        version = 1 if rng.random() < 0.75 else rng.randrange(16)
        rcp = rcp_header(rng, version=version, kind=rng.randrange(16) if rng.random() < 0.3 else rng.choice((0, 0, 2, 6, 1)),
                         flags=rng.choice((0, FLAG_ENDING, FLAG_XCP, FLAG_XCP | FLAG_ENDING, rng.randrange(256))))
        sport, dport = rng.choice(((40000, RCP_UDP_PORT), (40000, RCP_UDP_PORT), (RCP_UDP_PORT, 40001),
                                   (RCP_UDP_PORT, RCP_UDP_PORT), (rng.randrange(65536), rng.randrange(65536))))
        payload = rcp + body if rng.random() < 0.9 else rcp[:rng.randrange(16)]
        frame = ethernet(ipv4(rng, PROTO_UDP, udp(rng, src, dst, sport, dport, payload, fuzz=not deep), dst,
                              fuzz=not deep, src=src))
        if deep:
            return frame[:MAX_FRAME]
    elif kind < 0.92:                                    # TCP with random fields
        tcp = rng.randbytes(20) + body
        frame = ethernet(ipv4(rng, PROTO_TCP, tcp, dst, fuzz=True))
    else:                                                # another IP protocol
        frame = ethernet(ipv4(rng, rng.randrange(256), body, dst, fuzz=True))
    if rng.random() < 0.1:                               # cut short anywhere past the Ethernet header
        frame = frame[:rng.randrange(14, len(frame) + 1)]
    return frame[:MAX_FRAME]


def scapy_fuzzed(rng: random.Random, tcp: bool) -> bytes:
    """Scapy's fuzz(): every field left unset random, lengths and checksums computed."""
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw, fuzz

    from p4rcp.protocol import RCP
    dst = str(ipaddress.IPv4Address(fuzz_destination(rng)))
    # a third with every IPv4 field random (mostly not version 4); the others version 4 without options, so
    # that the fuzzed fields behind reach the router's later branches
    ip = IP(dst=dst) if rng.random() < 1 / 3 else IP(dst=dst, version=4, ihl=5)
    top = Ether(dst=SWITCH_MAC[0], src=HOST_MAC[0], type=0x0800) / ip
    inner = TCP() if tcp else UDP(dport=RCP_UDP_PORT) / (RCP(version=1) if rng.random() < 0.5 else RCP())
    frame = bytes(fuzz(top / inner / Raw(rng.randbytes(rng.randrange(0, 64)))))
    return frame[:MAX_FRAME]


@dataclass
class Flows:
    """Well-formed RCP flows to port 2: a SYN, DATA (a REF now and then), a LAST DATA, then a new flow."""
    rng: random.Random
    seq: dict[int, int] = field(default_factory=dict)

    def next(self) -> bytes:
        flow = self.rng.randrange(4)
        n = self.seq.get(flow, 0)
        self.seq[flow] = (n + 1) % 40
        kind, flags = (SYN, 0) if n == 0 else (DATA, FLAG_ENDING) if n == 39 else (REF, 0) if n % 13 == 0 else (DATA, 0)
        size = (40 if flow < 2 else 400) if kind == SYN or flags else 0      # short and long flows
        dscp = GOLD_DSCP if flow % 2 else 0
        dst = ipaddress.IPv4Address(f"10.0.2.{flow + 2}").packed
        src = ipaddress.IPv4Address(f"10.0.0.{flow + 2}").packed
        rcp = rcp_header(self.rng, kind=kind, flags=flags, rate=self.rng.choice((10**6, 4500, 1250, 800)),
                         rtt=0 if kind == SYN else self.rng.randrange(20_000, 60_000), size=size)
        payload = rcp + self.rng.randbytes(24 if kind != DATA else 1020)
        datagram = udp(self.rng, src, dst, 40000 + flow, RCP_UDP_PORT, payload, fuzz=False)
        return ethernet(ipv4(self.rng, PROTO_UDP, datagram, dst, fuzz=False, src=src, tos=dscp << 2))


def frames(total_fuzzed: int, scapy: int, seed: int) -> list[tuple[bool, bytes]]:
    """(well-formed?, frame) in sending order: the fuzzed frames, a well-formed one after every
    WELL_FORMED_EVERY - 1 of them."""
    rng = random.Random(seed)
    random.seed(seed)                 # Scapy's random values come from the random module
    flows = Flows(random.Random(seed + 1))
    out = []
    for i in range(total_fuzzed):
        if i < scapy:
            frame = scapy_fuzzed(rng, tcp=i % 3 == 0)
        else:
            frame = structural(rng)
        out.append((False, frame))
        if i % (WELL_FORMED_EVERY - 1) == WELL_FORMED_EVERY - 2:
            out.append((True, flows.next()))
    return out


def addressed_to_the_flows(frame: bytes) -> bool:
    """Whatever its headers say otherwise, a frame whose destination address bytes are in the flows' subnet."""
    return len(frame) >= 34 and ipaddress.IPv4Address(frame[30:34]) in FLOW_NET


class Receiver(threading.Thread):
    """Every frame the switch sends out of one port (its host side), in order."""

    def __init__(self, iface: str):
        super().__init__(daemon=True)
        self.sock = capture_socket(iface)
        self.sock.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)       # SO_RCVBUFFORCE: 64 MiB
        self.sock.settimeout(0.2)
        self.frames: list[bytes] = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                data, address = self.sock.recvfrom(65536)
            except socket.timeout:
                continue
            if address[2] != socket.PACKET_OUTGOING:
                self.frames.append(data)

    def dropped(self) -> int:
        """Frames the kernel dropped for want of room in the socket's buffer (PACKET_STATISTICS)."""
        _, drops = struct.unpack("II", self.sock.getsockopt(263, 6, 8))
        return drops


@dataclass
class Result:
    fuzzed: int
    well_formed: int
    forwarded: int
    mismatches: list[str]
    seconds: float

    def summary(self) -> str:
        return (f"{self.fuzzed} fuzzed frames and {self.well_formed} well-formed ones in {self.seconds:.1f} s "
                f"({(self.fuzzed + self.well_formed) / self.seconds:.0f} frames/s), {self.forwarded} forwarded: "
                f"{len(self.mismatches)} mismatches against the model")


def switch_counts(driver: Bmv2ThriftDriver) -> dict[int, PortCounts]:
    rtt_sum = driver.read_register(dp.REG_RTT_SUM)
    ff = [driver.read_register(name) for name in (dp.REG_LONG_ARRIVALS, dp.REG_COMMITTED_ARRIVALS,
                                                  dp.REG_COMMITTED_DEPARTURES)]
    xcp = [driver.read_register(name) for name in (*dp.XCP_SUMS, *XCP_LEFT)]
    out = {}
    for p in (*PORTS, dp.DROP_PORT):
        inputs = driver.read_counter(dp.COUNTER_INPUT, p)
        out[p] = PortCounts(input_packets=inputs.packets, input_bytes=inputs.bytes, rtt_sum_us=rtt_sum[p] % (1 << 32),
                            rtt_count=driver.read_counter(dp.COUNTER_RTT_COUNT, p).packets,
                            long_arrivals=ff[0][p] % (1 << 32), committed_arrivals=ff[1][p] % (1 << 32),
                            committed_departures=ff[2][p] % (1 << 32),
                            **{f: xcp[i][p] % (1 << 64) for i, f in enumerate(XCP_SUM_FIELDS + XCP_LEFT_FIELDS)})
    return out


XCP_SUM_FIELDS = ("xcp_sum_x", "xcp_sum_rtt_x", "xcp_sum_s")      # PortCounts' fields of dp.XCP_SUMS
# what is left of XCP's totals: compared as they stand after the run, not as a difference
XCP_LEFT = (dp.REG_XCP_POSITIVE_LEFT, dp.REG_XCP_NEGATIVE_LEFT)
XCP_LEFT_FIELDS = ("xcp_positive_left", "xcp_negative_left")
CONTROL_CELLS = (dp.REG_RATE, dp.REG_SYN_RATE, dp.REG_ARRIVALS_BASE, dp.REG_SHORT_RATE, dp.REG_GRANT_PACKETS,
                 dp.REG_LONG_PACKETS, dp.REG_POLICE, *dp.REG_POLICE_ROWS, dp.REG_XCP_XI_P, dp.REG_XCP_XI_N,
                 dp.REG_XCP_ON, dp.REG_CLASSIC_DROP)


def program(driver: Bmv2ThriftDriver, stamps: dict[int, int]) -> None:
    """The switch as a control plane leaves it: routes, deep queues, weight classes, stamps, SYN stamps, XCP's
    coefficients."""
    driver.install_routes(ROUTES)
    for p in PORTS:
        driver.set_queue(p, None, QUEUE_DEPTH)
    driver.write_rates_kbps({**stamps, dp.UNCLASSIFIED_CELL: dp.RATE_NONE})
    driver.write_police({dp.rate_cell(p, k): (0, 0) for p in PORTS for k in range(2)})
    driver.write_syn_grants(SYN_GRANTS)
    driver.install_weight_classes(list(PORTS), {GOLD_DSCP: 1})
    driver.write_xcp_cells({p: XCP_CELLS.get(p) for p in PORTS})
    driver.wait_for_writes()


def run(veths: VethPairs, thrift_port: int, fuzzed: int, scapy: int, seed: int,
        switch_stamps: dict[int, int] = STAMPS) -> Result:
    """Send the frames through a switch running on veths (switch side port p = veths.switch_side[p]). The
    model's stamps are STAMPS; `switch_stamps` other than those show that a switch that does not do what the
    model says is caught."""
    plan = frames(fuzzed, scapy, seed)
    expected_model, alone = model(), model()
    expected: dict[int, list[bytes]] = {p: [] for p in PORTS}
    source: dict[bytes, int] = {}
    for i, (well_formed, frame) in enumerate(plan):
        if not well_formed and addressed_to_the_flows(frame):
            raise AssertionError(f"fuzzed frame {i} is addressed to the flows' subnet")
        out = expected_model.process(frame)
        if well_formed:
            alone.process(frame)
        if isinstance(out, Forwarded):
            if (out.port == FLOW_PORT) != well_formed:
                raise AssertionError(f"frame {i} (well-formed: {well_formed}) is routed to port {out.port}")
            expected[out.port].append(out.frame)
            source.setdefault(out.frame, i)
    driver = Bmv2ThriftDriver(thrift_port)
    driver.connect()
    receivers = {p: Receiver(veths.host_side[p]) for p in PORTS}
    try:
        program(driver, switch_stamps)
        cells_before = {name: driver.read_register(name) for name in CONTROL_CELLS}
        counts_before = switch_counts(driver)
        ingress_before = driver.read_ingress_packets(0)
        for r in receivers.values():
            r.start()
        started = time.monotonic()
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as sender:
            sender.bind((veths.host_side[0], 0))
            counted = 0
            for i, (_, frame) in enumerate(plan):
                while i - counted >= WINDOW:       # the switch's ingress keeps up: nothing overruns its input
                    counted = driver.read_ingress_packets(0) - ingress_before
                sender.send(frame)
        forwarded = sum(len(v) for v in expected.values())
        end = time.monotonic() + DRAIN_S
        while time.monotonic() < end and (driver.read_ingress_packets(0) - ingress_before < len(plan)
                                          or sum(len(r.frames) for r in receivers.values()) < forwarded):
            time.sleep(0.05)
        time.sleep(0.3)                                     # anything extra would show
        seconds = time.monotonic() - started
        mismatches = compare(expected, {p: r.frames for p, r in receivers.items()}, source, plan)
        mismatches += [f"port {p}'s socket dropped {r.dropped()} frames: the check is incomplete"
                       for p, r in receivers.items() if r.dropped()]
        ingress = driver.read_ingress_packets(0) - ingress_before
        if ingress != len(plan):
            mismatches.append(f"the switch's ingress counted {ingress} of the {len(plan)} frames sent")
        counts_after = switch_counts(driver)
        for p in (*PORTS, dp.DROP_PORT):
            got = _delta(counts_after[p], counts_before[p])
            want = _without_left(expected_model.counts.get(p, PortCounts()))
            if got != want:
                mismatches.append(f"port {p}'s counts: the switch {got}, the model {want}")
            got_left = [getattr(counts_after[p], f) for f in XCP_LEFT_FIELDS]
            want_left = [getattr(expected_model.counts.get(p, PortCounts()), f) for f in XCP_LEFT_FIELDS]
            if got_left != want_left:
                mismatches.append(f"port {p}'s XCP totals left: the switch {got_left}, the model {want_left}")
        if (_delta(counts_after[FLOW_PORT], counts_before[FLOW_PORT])
                != _without_left(alone.counts.get(FLOW_PORT, PortCounts()))):
            mismatches.append(f"port {FLOW_PORT}'s counts are not the well-formed frames' alone")
        for name, before in cells_before.items():
            after = driver.read_register(name)
            changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
            if changed:
                mismatches.append(f"{name}: cells {changed[:8]} changed ({len(changed)} in all)")
    finally:
        for r in receivers.values():
            r.stop.set()
            r.join(2)
            r.sock.close()
        driver.close()
    return Result(fuzzed=sum(not w for w, _ in plan), well_formed=sum(w for w, _ in plan), forwarded=forwarded,
                  mismatches=mismatches, seconds=seconds)


def _without_left(counts: PortCounts) -> PortCounts:
    return dataclasses.replace(counts, **dict.fromkeys(XCP_LEFT_FIELDS, 0))


def _delta(after: PortCounts, before: PortCounts) -> PortCounts:
    """The counts the run made; what is left of XCP's totals is no count (0 here)."""
    return PortCounts(after.input_packets - before.input_packets, after.input_bytes - before.input_bytes,
                      (after.rtt_sum_us - before.rtt_sum_us) % (1 << 32), after.rtt_count - before.rtt_count,
                      *((a - b) % (1 << 32) for a, b in ((after.long_arrivals, before.long_arrivals),
                                                          (after.committed_arrivals, before.committed_arrivals),
                                                          (after.committed_departures, before.committed_departures))),
                      *((getattr(after, f) - getattr(before, f)) % (1 << 64) for f in XCP_SUM_FIELDS))


def compare(expected: dict[int, list[bytes]], got: dict[int, list[bytes]], source: dict[bytes, int],
            plan: list[tuple[bool, bytes]]) -> list[str]:
    """Per port, the frames the switch sent against the model's, in order; each difference named with the
    frame sent that made it."""
    problems = []
    for p in PORTS:
        want, have = expected[p], got[p]
        if want == have:
            continue
        missing = Counter(want) - Counter(have)
        extra = Counter(have) - Counter(want)
        for frame in list(missing)[:5]:
            i = source[frame]
            problems.append(f"port {p}: frame {i} (sent {plan[i][1].hex()}) should have left as {frame.hex()}")
        for frame in list(extra)[:5]:
            problems.append(f"port {p}: an unexpected frame left: {frame.hex()}")
        if not missing and not extra:
            problems.append(f"port {p}: the frames left in another order")
        problems.append(f"port {p}: {sum(missing.values())} frames missing, {sum(extra.values())} unexpected, "
                        f"of {len(want)} expected")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ptf_tests.fuzz", description=__doc__.split("\n\n")[1])
    ap.add_argument("--packets", type=int, default=50_000, help="fuzzed frames (default %(default)s)")
    ap.add_argument("--scapy", type=int, default=5_000, help="of which from Scapy's fuzz() (default %(default)s)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default=str(BUILD_JSON))
    args = ap.parse_args(argv)
    if not 0 <= args.scapy <= args.packets:
        ap.error("--scapy must be between 0 and --packets")
    thrift_port = free_tcp_port()
    with VethPairs(len(PORTS), tag="fz") as veths, \
         SimpleSwitch(args.json, dict(enumerate(veths.switch_side)), thrift_port):
        result = run(veths, thrift_port, args.packets, args.scapy, args.seed)
    print(result.summary())
    for line in result.mismatches[:40]:
        print("  " + line)
    return 1 if result.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())

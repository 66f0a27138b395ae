"""Shared PTF plumbing: the switch over Thrift, the routes, packet builders.

Port i of the switch leads to subnet 10.0.i.0/24 (next hop MAC HOST_MAC[i]).
Every test starts with RCP set up on every port as the control loop leaves it
(weight_classifier entries for every DSCP, all in class 0, and the unclassified
cell's stamp RATE_NONE) but with no stamp (R = RATE_NONE), no policing, no SYN
stamps (RATE_NONE), the policing sketch and the arrivals empty; tearDown puts it
back.
Counters are monotonic, so tests assert deltas between snapshots, on every port
(and on the drop port's cell, which nothing may count into).
"""

import copy

import ptf
from ptf import testutils
from ptf.base_tests import BaseTest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from control_plane.bmv2_thrift import Bmv2ThriftDriver
from p4rcp import dataplane as dp
from p4rcp.police import Flow
from p4rcp.protocol import DATA, FLAG_ENDING, RCP, RCP_UDP_PORT, SYN
from p4rcp.topology import Route

PORTS = (0, 1, 2, 3)
SWITCH_MAC = {p: f"00:aa:00:00:00:0{p}" for p in PORTS}
HOST_MAC = {p: f"00:00:00:00:00:0{p}" for p in PORTS}
ROUTES = [Route(f"10.0.{p}.0/24", p, SWITCH_MAC[p], HOST_MAC[p]) for p in PORTS]
DROP_PORT = 511
# The monotonic counts, by what they count: (counter extern, field) or register.
INPUT_BYTES, INPUT_PACKETS, RTT_SUM, RTT_COUNT = "input bytes", "input packets", "RTT sum", "RTT count"
POLICED_BYTES, POLICED_PACKETS = "policed bytes", "policed packets"
LONG_ARRIVALS, COMMITTED_ARRIVALS, COMMITTED_DEPARTURES = "long arrivals", "committed arrivals", "committed departures"
COUNTS = (INPUT_BYTES, INPUT_PACKETS, RTT_SUM, RTT_COUNT, POLICED_BYTES, POLICED_PACKETS, LONG_ARRIVALS,
          COMMITTED_ARRIVALS, COMMITTED_DEPARTURES)


def host_ip(port, n=2):
    return f"10.0.{port}.{n}"


def udp_packet(in_port=0, out_port=2, sport=40000, dport=RCP_UDP_PORT, payload=b"p4rcp" * 20, ttl=64, dscp=0,
               src=None, dst=None, **udp):
    return (Ether(src=HOST_MAC[in_port], dst=SWITCH_MAC[in_port])
            / IP(src=src or host_ip(in_port), dst=dst or host_ip(out_port), ttl=ttl, id=1, tos=dscp << 2)
            / UDP(sport=sport, dport=dport, **udp) / Raw(payload))


def rcp_packet(in_port=0, out_port=2, type=DATA, rate_kbps=8000, rtt_us=30000, feedback_kbps=0,
               payload=b"p4rcp" * 20, **kw):
    pkt = udp_packet(in_port, out_port, payload=b"", **kw)
    pkt[UDP].remove_payload()
    return pkt / RCP(type=type, rate_kbps=rate_kbps, rtt_us=rtt_us, feedback_kbps=feedback_kbps) / Raw(payload)


def routed(pkt, out_port, **rcp_fields):
    """What pkt looks like after the router: next-hop MACs, TTL - 1, new IPv4
    checksum; RCP fields changed as given, with Scapy's UDP checksum (the
    ground truth) unless the datagram carried none."""
    exp = copy.deepcopy(pkt)
    exp[Ether].src, exp[Ether].dst = SWITCH_MAC[out_port], HOST_MAC[out_port]
    exp[IP].ttl -= 1
    exp[IP].chksum = None
    if rcp_fields:
        for name, value in rcp_fields.items():
            setattr(exp[RCP], name, value)
        if exp[UDP].chksum != 0:
            exp[UDP].chksum = None
    return Ether(bytes(exp))


def flow_counts(pkt, out_port, grants: dp.SynGrants, copies=1):
    """The feedforward's counts a forwarded packet moves under the port's `grants`: a SYN adds min(size, P) to
    the committed arrivals, and 1 to the long arrivals when its size is above the long threshold; DATA
    flagged ENDING adds min(size, P) to the committed departures."""
    if RCP not in pkt:
        return {}
    committed = min(pkt[RCP].size, grants.grant_packets) * copies
    if pkt[RCP].type == SYN:
        return {(COMMITTED_ARRIVALS, out_port): committed,
                (LONG_ARRIVALS, out_port): copies if pkt[RCP].size > grants.long_packets else 0}
    if pkt[RCP].type == DATA and pkt[RCP].flags & FLAG_ENDING:
        return {(COMMITTED_DEPARTURES, out_port): committed}
    return {}


def flow_of(pkt) -> Flow:
    """The policing flow (UDP 5-tuple) of a packet."""
    return Flow(pkt[IP].src, pkt[IP].dst, pkt[UDP].sport, pkt[UDP].dport)


class RcpTest(BaseTest):
    def setUp(self):
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()
        self.switch = Bmv2ThriftDriver(int(testutils.test_param_get("thrift_port")))
        self.switch.connect()
        self.switch.install_routes(ROUTES)
        self.clean()

    def tearDown(self):
        self.clean()
        self.switch.close()
        BaseTest.tearDown(self)

    def clean(self):
        """RCP on every port, no stamp, no weights, no policing, an empty sketch (the cells as the control loop
        writes them at resync: control_plane/loop.py)."""
        self.switch.write_rates_kbps({**{dp.rate_cell(p, k): dp.RATE_NONE for p in PORTS
                                         for k in range(dp.NUM_WEIGHT_CLASSES)}, dp.UNCLASSIFIED_CELL: dp.RATE_NONE})
        self.switch.write_police({dp.rate_cell(p, k): (0, 0) for p in PORTS for k in range(dp.NUM_WEIGHT_CLASSES)})
        self.grants = {p: dp.SynGrants.none() for p in PORTS}
        self.switch.write_syn_grants(self.grants)
        self.set_weight_classes({})
        self.switch.write_classic_drop({p: 0.0 for p in PORTS})
        for row in (*dp.REG_POLICE_ROWS, dp.REG_LONG_ARRIVALS, dp.REG_COMMITTED_ARRIVALS,
                    dp.REG_COMMITTED_DEPARTURES):
            self.switch.reset_register(row)     # (after the writes: the switch has applied them)

    # One helper per table and register the control plane writes.

    def set_weight_classes(self, classes):
        """weight_classifier: {dscp: class} on every port, class 0 for every other DSCP."""
        self.switch.install_weight_classes(list(PORTS), classes)

    def set_rates(self, rates_kbps, weight_class=0):
        """rcp_rate: {port: kb/s} for one weight class; applied when this returns (the control plane does not
        wait for its writes; a test must, before it sends)."""
        self.switch.write_rates_kbps({dp.rate_cell(p, weight_class): r for p, r in rates_kbps.items()})
        self.switch.wait_for_writes()

    def set_police(self, port, allowance, limit, weight_class=0):
        """The policing allowance and limit of (port, class) (rcp_police), applied when this returns."""
        self.switch.write_police({dp.rate_cell(port, weight_class): (allowance, limit)})
        self.switch.wait_for_writes()

    def set_syn_grants(self, port, grants: dp.SynGrants):
        """A port's SYN stamps, P and long threshold (control_plane.driver.SynGrants), applied when this
        returns."""
        self.grants[port] = grants
        self.switch.write_syn_grants({port: grants})
        self.switch.wait_for_writes()

    def police_cell(self, row, index):
        """A sketch cell as (epoch, bytes)."""
        value = self.switch.read_register_cell(dp.REG_POLICE_ROWS[row], index) % (1 << 64)
        return value >> 32, value & 0xFFFFFFFF

    def snapshot(self):
        """The counts of every port (and of the drop port's cell), the queue-depth and rate registers."""
        cells = (*PORTS, DROP_PORT)
        inputs = {p: self.switch.read_counter(dp.COUNTER_INPUT, p) for p in cells}
        policed = {p: self.switch.read_counter(dp.COUNTER_POLICED, p) for p in cells}
        rtt_sum = self.switch.read_register(dp.REG_RTT_SUM)
        feedforward = {name: self.switch.read_register(reg) for name, reg in (
            (LONG_ARRIVALS, dp.REG_LONG_ARRIVALS), (COMMITTED_ARRIVALS, dp.REG_COMMITTED_ARRIVALS),
            (COMMITTED_DEPARTURES, dp.REG_COMMITTED_DEPARTURES))}
        return {INPUT_BYTES: {p: inputs[p].bytes for p in cells},
                INPUT_PACKETS: {p: inputs[p].packets for p in cells},
                RTT_SUM: {p: rtt_sum[p] for p in cells},
                RTT_COUNT: {p: self.switch.read_counter(dp.COUNTER_RTT_COUNT, p).packets for p in cells},
                POLICED_BYTES: {p: policed[p].bytes for p in cells},
                POLICED_PACKETS: {p: policed[p].packets for p in cells},
                **{name: {p: values[p] for p in cells} for name, values in feedforward.items()},
                dp.REG_QUEUE_DEPTH: self.switch.read_register(dp.REG_QUEUE_DEPTH),
                dp.REG_RATE: self.switch.read_register(dp.REG_RATE)}

    def send(self, port, pkt):
        testutils.send_packet(self, port, pkt)

    def assert_counter_deltas(self, before, after, expected):
        """expected: {(count, port): delta}; every other count of every port
        must be unchanged. Input (policed) bytes for a port without input
        (policed) packets mean one packet."""
        for name in COUNTS:
            for port, old in before[name].items():
                new = after[name][port]
                one_packet = ((name == INPUT_PACKETS and (INPUT_BYTES, port) in expected)
                              or (name == POLICED_PACKETS and (POLICED_BYTES, port) in expected))
                want = expected.get((name, port), 1 if one_packet else 0)
                self.assertEqual(new - old, want, f"{name}[{port}] changed by {new - old}, expected {want}")

    def forward_and_check(self, pkt, out_port, expected_pkt, rtt_us=None):
        """Send pkt in on port 0, expect expected_pkt on out_port only, and the
        counters of out_port to move by the packet's length (+ the RTT sample)."""
        before = self.snapshot()
        self.send(0, pkt)
        testutils.verify_packet(self, expected_pkt, out_port)
        testutils.verify_no_other_packets(self)
        deltas = {(INPUT_BYTES, out_port): len(pkt), **flow_counts(pkt, out_port, self.grants[out_port])}
        if rtt_us is not None:
            deltas[(RTT_SUM, out_port)] = rtt_us
            deltas[(RTT_COUNT, out_port)] = 1
        self.assert_counter_deltas(before, self.snapshot(), deltas)

    def drop_and_check(self, pkt):
        """pkt is dropped in ingress: no packet anywhere, no counter moves."""
        before = self.snapshot()
        self.send(0, pkt)
        testutils.verify_no_other_packets(self)
        self.assert_counter_deltas(before, self.snapshot(), {})

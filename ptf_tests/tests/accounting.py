"""The three additions: input packets and bytes (every packet), RTT sum and RTT count (valid samples of forward RCP packets)."""

from ptf import testutils
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether

from base import (HOST_MAC, INPUT_BYTES, INPUT_PACKETS, RTT_COUNT, RTT_SUM, SWITCH_MAC, RcpTest, host_ip,
                  rcp_packet, routed, udp_packet)
from p4rcp.protocol import RCP_MAX_RTT_US, REF, SYN


class RttSampleAccountingTest(RcpTest):
    """A DATA packet with a valid RTT adds its length, its RTT and 1, on its egress port only."""
    def runTest(self):
        for out_port in (1, 3):
            pkt = rcp_packet(out_port=out_port, rtt_us=41234)
            self.forward_and_check(pkt, out_port, routed(pkt, out_port), rtt_us=41234)


class RttBoundariesTest(RcpTest):
    """RTT 0 and RTT above the maximum are not samples; 1 and the maximum are."""
    def runTest(self):
        for rtt in (0, RCP_MAX_RTT_US + 1, 0xFFFFFFFF):
            pkt = rcp_packet(rtt_us=rtt)
            self.forward_and_check(pkt, 2, routed(pkt, 2))
        for rtt in (1, RCP_MAX_RTT_US):
            pkt = rcp_packet(type=SYN, rtt_us=rtt)
            self.forward_and_check(pkt, 2, routed(pkt, 2), rtt_us=rtt)


class RefIsSampledLikeDataTest(RcpTest):
    """A REF probe's RTT is a sample, on its egress port, as a DATA packet's."""
    def runTest(self):
        pkt = rcp_packet(type=REF, rtt_us=12345, payload=b"r" * 12)
        self.forward_and_check(pkt, 2, routed(pkt, 2), rtt_us=12345)


class ManySamplesAddUpTest(RcpTest):
    """Twenty packets: the sums are exact."""
    def runTest(self):
        before = self.snapshot()
        total_bytes = total_rtt = 0
        for i in range(20):
            pkt = rcp_packet(rtt_us=1000 + i, payload=b"x" * (10 * i))
            self.send(0, pkt)
            testutils.verify_packet(self, routed(pkt, 2), 2)
            total_bytes += len(pkt)
            total_rtt += 1000 + i
        self.assert_counter_deltas(before, self.snapshot(), {
            (INPUT_BYTES, 2): total_bytes, (INPUT_PACKETS, 2): 20, (RTT_SUM, 2): total_rtt, (RTT_COUNT, 2): 20})


class NonRcpTrafficCountsOnlyBytesTest(RcpTest):
    """Other UDP ports and TCP pass unchanged and count only as bytes, even with RCP on."""
    def runTest(self):
        self.set_rates({2: 100})
        pkt = rcp_packet(rate_kbps=9000, dport=6578, sport=6579)
        self.forward_and_check(pkt, 2, routed(pkt, 2))
        tcp = (Ether(src=HOST_MAC[0], dst=SWITCH_MAC[0]) / IP(src=host_ip(0), dst=host_ip(2))
               / TCP(sport=40000, dport=6577) / bytes(16))
        self.forward_and_check(tcp, 2, routed(tcp, 2))
        plain = udp_packet(dport=53)
        self.forward_and_check(plain, 2, routed(plain, 2))

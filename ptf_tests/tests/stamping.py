"""The RCP stamp: rate_kbps = min(rate_kbps, R[p]) on forward packets, with a correct UDP checksum."""

from ptf import testutils
from scapy.layers.inet import UDP
from scapy.layers.l2 import Ether

from base import RcpTest, rcp_packet, routed
from p4rcp import dataplane as dp
from p4rcp.protocol import ACK, DATA, FIN, FINACK, RCP, REF, REFACK, SYN, SYNACK

R = 5000


def udp_checksum_ok(frame: bytes) -> bool:
    """Recompute the UDP checksum as a receiving kernel would."""
    pkt = Ether(frame)
    sent = pkt[UDP].chksum
    pkt[UDP].chksum = None
    return sent == Ether(bytes(pkt))[UDP].chksum


class StampTest(RcpTest):
    def setUp(self):
        RcpTest.setUp(self)
        self.set_rates({2: R})

    def expect(self, pkt, **rcp_fields):
        self.forward_and_check(pkt, 2, routed(pkt, 2, **rcp_fields), rtt_us=pkt[RCP].rtt_us)


class RateAboveRIsStampedTest(StampTest):
    """DATA, SYN and REF asking more than R leave with R and a UDP checksum that verifies."""
    def runTest(self):
        for type_ in (DATA, SYN, REF):
            pkt = rcp_packet(type=type_, rate_kbps=8000)
            exp = routed(pkt, 2, rate_kbps=R)
            self.forward_and_check(pkt, 2, exp, rtt_us=30000)
            self.assertTrue(udp_checksum_ok(bytes(exp)))


class ReceivedChecksumVerifiesTest(StampTest):
    """The frame actually received carries the stamped rate and a valid UDP checksum."""
    def runTest(self):
        self.send(0, rcp_packet(rate_kbps=0xFFFFFFFF))
        result = testutils.dp_poll(self, port_number=2, timeout=2)
        self.assertIsInstance(result, self.dataplane.PollSuccess)
        got = Ether(result.packet)
        self.assertEqual(got[RCP].rate_kbps, R)
        self.assertTrue(udp_checksum_ok(result.packet))


class RateAtOrBelowRUnchangedTest(StampTest):
    """A rate equal to or below R passes unchanged."""
    def runTest(self):
        for rate in (R, R - 1, 1, 0):
            self.expect(rcp_packet(rate_kbps=rate))


class RcpOffPortUntouchedTest(RcpTest):
    """R = RATE_NONE means RCP is off on the port: no stamp, but counters still run."""
    def runTest(self):
        self.set_rates({2: dp.RATE_NONE, 3: R})
        pkt = rcp_packet(rate_kbps=8000)
        self.forward_and_check(pkt, 2, routed(pkt, 2), rtt_us=30000)


class PortWithoutClassesIsNotStampedTest(StampTest):
    """A port the control plane installed no weight classes for (not an RCP port) reads the drop port's
    cell, RATE_NONE: no stamp, whatever the other ports' R; counters still run."""
    def runTest(self):
        self.switch.install_weight_classes([0, 1, 3], {})
        pkt = rcp_packet(rate_kbps=8000)
        self.forward_and_check(pkt, 2, routed(pkt, 2), rtt_us=30000)


class ReverseTypesNeverStampedTest(StampTest):
    """ACK, SYNACK, FIN, FINACK and REFACK are never stamped and give no RTT sample, nor do unknown types."""
    def runTest(self):
        for type_ in (ACK, SYNACK, FIN, FINACK, REFACK, 8, 15):
            pkt = rcp_packet(type=type_, rate_kbps=8000, feedback_kbps=9000)
            self.forward_and_check(pkt, 2, routed(pkt, 2))


class ZeroChecksumStaysZeroTest(StampTest):
    """A datagram sent without a UDP checksum (0) is stamped and keeps 0."""
    def runTest(self):
        pkt = rcp_packet(rate_kbps=8000, chksum=0)
        exp = routed(pkt, 2, rate_kbps=R)
        self.assertEqual(exp[UDP].chksum, 0)
        self.forward_and_check(pkt, 2, exp, rtt_us=30000)


class ChecksumZeroResultSentAsFfffTest(StampTest):
    """When the updated checksum computes to 0 it is sent as 0xFFFF (RFC 768)."""
    def runTest(self):
        # Choose two payload bytes so that the stamped datagram's one's-complement
        # sum is 0xFFFF, i.e. its checksum computes to 0.
        stamped = rcp_packet(rate_kbps=R, payload=b"\x00\x00" + b"z" * 30)
        stamped[UDP].chksum = None
        c = Ether(bytes(stamped))[UDP].chksum
        word = 0xFFFF - (~c & 0xFFFF)
        payload = word.to_bytes(2, "big") + b"z" * 30
        pkt = rcp_packet(rate_kbps=8000, payload=payload)
        exp = routed(pkt, 2, rate_kbps=R)
        self.assertEqual(exp[UDP].chksum, 0xFFFF)
        self.forward_and_check(pkt, 2, exp, rtt_us=30000)
        self.assertTrue(udp_checksum_ok(bytes(exp)))


class StampOnlyOnTheEgressPortTest(RcpTest):
    """Each port stamps with its own R."""
    def runTest(self):
        self.set_rates({1: 1000, 2: 2000, 3: 3000})
        for port, r in ((1, 1000), (2, 2000), (3, 3000)):
            pkt = rcp_packet(out_port=port, rate_kbps=2500)
            exp = routed(pkt, port, rate_kbps=min(2500, r)) if r < 2500 else routed(pkt, port)
            self.forward_and_check(pkt, port, exp, rtt_us=30000)

"""Malformed input never corrupts state (docs/protocol.md, "What a router does with everything else")."""

from scapy.layers.inet import IP, UDP, IPOption_RR
from scapy.layers.l2 import Ether
from scapy.packet import Padding

from base import RcpTest, rcp_packet, routed, udp_packet
from p4rcp.protocol import RCP, RCP_HEADER_LEN


class MalformedTest(RcpTest):
    def setUp(self):
        RcpTest.setUp(self)
        self.set_rates({2: 1000})   # anything that got stamped would show

    def expect_untouched(self, pkt):
        """Routed byte-for-byte (but for L2 and TTL), bytes counted, no RTT sample."""
        self.forward_and_check(pkt, 2, routed(pkt, 2))


class ShortRcpDatagramTest(MalformedTest):
    """A datagram on port 6577 shorter than the RCP header is routed unchanged and is not RCP."""
    def runTest(self):
        for size in (0, 1, RCP_HEADER_LEN - 1):
            self.expect_untouched(udp_packet(payload=b"\x10" + b"\xff" * max(size - 1, 0) if size else b""))


class ShortDatagramWithPaddingTest(MalformedTest):
    """UDP length says 10 payload bytes; Ethernet padding behind it must not be read as an RCP header."""
    def runTest(self):
        pkt = udp_packet(payload=b"\x10" + b"\xff" * 9) / Padding(b"\x10" + b"\xff" * 40)
        pkt = Ether(bytes(pkt))
        self.assertEqual(pkt[UDP].len, 8 + 10)
        self.expect_untouched(pkt)


class WrongVersionTest(MalformedTest):
    """Versions other than 1 are routed unchanged, never stamped, never sampled."""
    def runTest(self):
        for version in (0, 2, 15):
            pkt = rcp_packet(rate_kbps=9000)
            pkt[RCP].version = version
            self.expect_untouched(Ether(bytes(pkt)))


class Ipv4OptionsDropTest(MalformedTest):
    """IPv4 with options (IHL > 5) is dropped, so never stamped."""
    def runTest(self):
        pkt = rcp_packet(rate_kbps=9000)
        pkt[IP].options = [IPOption_RR()]
        self.drop_and_check(Ether(bytes(pkt)))


class BadIhlDropTest(MalformedTest):
    """IHL < 5 and IP version != 4 are dropped."""
    def runTest(self):
        for field, value in (("ihl", 4), ("version", 6)):
            pkt = Ether(bytes(rcp_packet(rate_kbps=9000)))
            setattr(pkt[IP], field, value)
            pkt[IP].chksum = None
            self.drop_and_check(Ether(bytes(pkt)))


class RuntFrameDropTest(MalformedTest):
    """Frames shorter than the headers they announce are dropped without touching state."""
    def runTest(self):
        whole = bytes(rcp_packet(rate_kbps=9000))
        for cut in (14 + 10, 14 + 20 + 4, 14 + 20 + 8 + 8):   # inside IPv4, UDP, RCP
            self.drop_and_check(Ether(whole[:cut]))


class FragmentNotParsedTest(MalformedTest):
    """IPv4 fragments are routed but not read as RCP: a fragment need not hold the header."""
    def runTest(self):
        first = rcp_packet(rate_kbps=9000)
        first[IP].flags = "MF"
        self.expect_untouched(Ether(bytes(first)))
        later = rcp_packet(rate_kbps=9000)
        later[IP].frag = 100
        self.expect_untouched(Ether(bytes(later)))

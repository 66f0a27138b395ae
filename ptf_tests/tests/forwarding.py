"""IPv4 routing: next hop, TTL, IPv4 checksum, drops."""

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import ARP, Ether

from base import HOST_MAC, SWITCH_MAC, RcpTest, host_ip, routed, udp_packet


class ForwardingTest(RcpTest):
    """A UDP datagram leaves on the routed port with next-hop MACs, TTL - 1 and a valid IPv4 checksum."""
    def runTest(self):
        for out_port in (1, 2, 3):
            pkt = udp_packet(out_port=out_port, dport=5000)
            exp = routed(pkt, out_port)
            self.assertEqual(exp[IP].ttl, 63)
            self.forward_and_check(pkt, out_port, exp)


class TtlBoundaryTest(RcpTest):
    """TTL 2 leaves with 1; TTL 1 and 0 are dropped."""
    def runTest(self):
        pkt = udp_packet(ttl=2, dport=5000)
        self.forward_and_check(pkt, 2, routed(pkt, 2))
        for ttl in (1, 0):
            self.drop_and_check(udp_packet(ttl=ttl, dport=5000))


class NoRouteDropTest(RcpTest):
    """A destination without a route is dropped."""
    def runTest(self):
        pkt = udp_packet(dport=5000)
        pkt[IP].dst = "192.168.7.7"
        self.drop_and_check(pkt)


class BadIpv4ChecksumDropTest(RcpTest):
    """An IPv4 header with a wrong checksum is dropped."""
    def runTest(self):
        pkt = Ether(bytes(udp_packet(dport=5000)))
        pkt[IP].chksum ^= 0x00ff
        self.drop_and_check(pkt)


class NonIpv4DropTest(RcpTest):
    """ARP (and any non-IPv4 frame) is dropped: the topologies use static ARP."""
    def runTest(self):
        arp = Ether(src=HOST_MAC[0], dst="ff:ff:ff:ff:ff:ff") / ARP(psrc=host_ip(0), pdst=host_ip(2))
        self.drop_and_check(arp)


class TcpPassTest(RcpTest):
    """TCP is routed unchanged and counts only as bytes."""
    def runTest(self):
        pkt = (Ether(src=HOST_MAC[0], dst=SWITCH_MAC[0]) / IP(src=host_ip(0), dst=host_ip(3))
               / TCP(sport=6577, dport=6577, flags="PA") / (b"\x10" + b"\x00" * 40))
        self.forward_and_check(pkt, 3, routed(pkt, 3))

"""The coupled drop of classic traffic (classic.p4): a TCP packet routed to a port is dropped when a random
draw is below the port's cell, before rcp_input counts it; RCP and other UDP packets never meet it, and the
reset value 0 drops nothing."""

from ptf import testutils
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from base import HOST_MAC, INPUT_BYTES, SWITCH_MAC, RcpTest, host_ip, rcp_packet, routed, udp_packet
from p4rcp import dataplane as dp


def tcp_packet(in_port=0, out_port=2, sport=40000, dport=5001, flags="A", payload=b"tcp" * 30):
    return (Ether(src=HOST_MAC[in_port], dst=SWITCH_MAC[in_port])
            / IP(src=host_ip(in_port), dst=host_ip(out_port), ttl=64, id=1)
            / TCP(sport=sport, dport=dport, flags=flags) / Raw(payload))


class ClassicDropTest(RcpTest):
    def classic_dropped(self, port):
        return self.switch.read_counter(dp.COUNTER_CLASSIC_DROPPED, port).packets

    def set_drop(self, probabilities):
        self.switch.write_classic_drop(probabilities)
        self.switch.wait_for_writes()


class NoDropByDefaultTest(ClassicDropTest):
    """With the cells at their reset value, TCP is forwarded and counted in rcp_input like any packet."""
    def runTest(self):
        for flags in ("S", "A", "FA"):
            pkt = tcp_packet(flags=flags)
            self.forward_and_check(pkt, 2, routed(pkt, 2))
        self.assertEqual(self.classic_dropped(2), 0)


class CertainDropTest(ClassicDropTest):
    """Probability 1 on port 2: every TCP packet to port 2 is dropped and counted in rcp_classic_dropped, not in
    rcp_input; TCP to port 3, RCP and other UDP to port 2 pass."""
    def runTest(self):
        self.set_drop({2: 1.0})
        self.assertEqual(self.switch.read_register_cell(dp.REG_CLASSIC_DROP, 2) % (1 << 32), dp.CLASSIC_DROP_MAX)
        before = self.classic_dropped(2)
        for sport in range(40000, 40010):          # a draw of 2^32 - 1 passes: once in 4e9 packets
            self.drop_and_check(tcp_packet(sport=sport))
        self.assertEqual(self.classic_dropped(2) - before, 10)
        other = tcp_packet(out_port=3)
        self.forward_and_check(other, 3, routed(other, 3))
        rcp = rcp_packet(rtt_us=30000)
        self.forward_and_check(rcp, 2, routed(rcp, 2), rtt_us=30000)
        udp = udp_packet(dport=53)
        self.forward_and_check(udp, 2, routed(udp, 2))


class HalfDropTest(ClassicDropTest):
    """Probability 1/2: of 400 TCP packets about half are dropped (within 5 standard deviations), and every
    one is either forwarded (counted in rcp_input) or counted dropped."""
    def runTest(self):
        self.set_drop({2: 0.5})
        before = self.snapshot()
        dropped_before = self.classic_dropped(2)
        n, burst = 400, 20          # bursts the switch's queue and the test's socket take whole
        received = 0
        for first in range(0, n, burst):
            for i in range(first, first + burst):
                self.send(0, tcp_packet(sport=30000 + i))
            while isinstance(testutils.dp_poll(self, device_number=0, port_number=2, timeout=0.2),
                             self.dataplane.PollSuccess):
                received += 1
        dropped = self.classic_dropped(2) - dropped_before
        self.assertEqual(received + dropped, n)
        self.assertLess(abs(dropped - n / 2), 5 * (n * 0.25) ** 0.5, f"{dropped} of {n} dropped")
        after = self.snapshot()
        self.assertEqual(after[INPUT_BYTES][2] - before[INPUT_BYTES][2], received * len(tcp_packet()))

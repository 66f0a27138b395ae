"""The XCP router (xcp.p4): the per-port sums, H_feedback lowered to xi_p rtt x - xi_n rtt s (never raised) until
the interval's totals run out, the UDP checksum after it, and the smallest queue, against the data plane's model in p4rcp/dataplane.py and the
paper's equation in p4rcp/xcp_law.py."""

import math
import time
from fractions import Fraction

from ptf import testutils
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from base import PORTS, RTT_COUNT, RcpTest, routed, udp_packet
from p4rcp import dataplane as dp
from p4rcp.protocol import DATA, FLAG_XCP, RCP, REF, SYN, XCP
from p4rcp.xcp_law import xcp_packet_feedback
from stamping import udp_checksum_ok

# Coefficients of the order the law gives at 100 Mb/s and 20 ms: xi_p in bytes / s^2, xi_n in 1 / s.
XI_P, XI_N = 3e8, 20.0
RTT_US, X_NS, CWND = 20_000, 200_000, 150_000
I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1


def xcp_packet(out_port=2, type=DATA, rtt_us=RTT_US, x_ns=X_NS, feedback=I32_MAX, flags=FLAG_XCP, rate_kbps=8000,
               payload=b"p4rcp" * 20, **kw):
    pkt = udp_packet(0, out_port, payload=b"", **kw)
    pkt[UDP].remove_payload()
    return (pkt / RCP(type=type, flags=flags, rate_kbps=rate_kbps, rtt_us=rtt_us)
            / XCP(cwnd_bytes=CWND, x_ns=x_ns, feedback=feedback) / Raw(payload))


def with_feedback(pkt, out_port, feedback, **rcp_fields):
    """pkt after the router with H_feedback (and RCP fields) as given, with Scapy's UDP checksum."""
    exp = routed(pkt, out_port, **rcp_fields)
    exp[XCP].feedback = feedback
    if exp[UDP].chksum != 0:
        exp[UDP].chksum = None
    return Ether(bytes(exp))


class XcpTest(RcpTest):
    def setUp(self):
        RcpTest.setUp(self)
        self.set_xi({2: (XI_P, XI_N)})

    def tearDown(self):
        self.switch.write_xcp_cells({p: None for p in PORTS})
        self.switch.reset_register(dp.REG_XCP_MIN_QUEUE)
        RcpTest.tearDown(self)

    def set_xi(self, coefficients, positive_total=dp.XCP_LEFT_MAX, negative_total=dp.XCP_LEFT_MAX):
        """{port: (xi_p, xi_n)} into the coefficient registers with the interval's totals (by default more than
        any test uses up), XCP on there, applied when this returns."""
        self.write_cells({port: dp.XcpControl.of(xi_p, xi_n, positive_total, negative_total)
                          for port, (xi_p, xi_n) in coefficients.items()})

    def write_cells(self, cells):
        self.cells = {**getattr(self, "cells", {}), **cells}
        self.switch.write_xcp_cells(cells)
        self.switch.wait_for_writes()

    def sums(self):
        """{(register, port): value} of the XCP sums, as unsigned 64-bit numbers."""
        return {(name, p): v % (1 << dp.XCP_SUM_BITS) for name in dp.XCP_SUMS
                for p, v in enumerate(self.switch.read_register(name)) if p in (*PORTS, dp.DROP_PORT)}

    def router_feedback(self, pkt, port=2):
        """p_i - n_i with what is left as the test last wrote it."""
        control = self.cells[port]
        p, n = dp.xcp_router_feedback(control.xi_p, control.xi_n, pkt[RCP].rtt_us, pkt[XCP].x_ns, len(pkt),
                                      control.positive_left, control.negative_left)
        return p - n

    def pass_xcp(self, pkt, out_port=2, feedback=None, counted=True, **rcp_fields):
        """Forward pkt through out_port; expect H_feedback `feedback` (None: unchanged), the RCP counts as for any
        forward packet, and the XCP sums of out_port moved by the packet's terms when `counted`, else not."""
        before = self.sums()
        exp = with_feedback(pkt, out_port, pkt[XCP].feedback if feedback is None else feedback, **rcp_fields)
        rtt = pkt[RCP].rtt_us
        self.forward_and_check(pkt, out_port, exp, rtt_us=rtt if 0 < rtt < 1 << 23 else None)
        after = self.sums()
        want = {(dp.REG_XCP_SUM_X, out_port): pkt[XCP].x_ns, (dp.REG_XCP_SUM_RTT_X, out_port): rtt * pkt[XCP].x_ns,
                (dp.REG_XCP_SUM_S, out_port): len(pkt)} if counted else {}
        for key in before:
            self.assertEqual(after[key] - before[key], want.get(key, 0), f"{key} moved by {after[key] - before[key]}")
        if pkt[UDP].chksum != 0:
            self.assertTrue(udp_checksum_ok(bytes(exp)))
        return exp


class FeedbackLoweredTest(XcpTest):
    """A forward XCP packet (DATA, SYN, REF) asking more than the router gives leaves with the router's feedback
    xi_p rtt x - xi_n rtt s, which is the paper's equation to a byte; the port's sums move by x, rtt x and s."""
    def runTest(self):
        for type_ in (DATA, SYN, REF):
            pkt = xcp_packet(type=type_, feedback=1_000_000)
            fb = self.router_feedback(pkt)
            p, n = xcp_packet_feedback(XI_P, XI_N, RTT_US * 1e-6, X_NS * 1e-9, len(pkt))
            law = p - n
            self.assertGreater(fb, 0)
            self.assertAlmostEqual(fb, law, delta=1.0)
            self.pass_xcp(pkt, feedback=fb)


class FeedbackStopsAtTheIntervalsTotalsTest(XcpTest):
    """Positive and negative feedback each stop at what is left of the interval's totals: a packet gets its own
    until the rest is smaller, then the rest, then nothing; the registers show what is left."""
    def runTest(self):
        pkt = xcp_packet(feedback=1_000_000)
        self.set_xi({2: (XI_P, 0.0)})
        p = self.router_feedback(pkt)
        self.set_xi({2: (XI_P, 0.0)}, positive_total=p + p // 2, negative_total=0)
        for feedback in (p, p // 2, 0):
            self.pass_xcp(pkt, feedback=feedback)
        self.set_xi({2: (0.0, 500.0)})
        n = -self.router_feedback(pkt)
        self.set_xi({2: (0.0, 500.0)}, positive_total=0, negative_total=n + 7)
        for feedback in (-n, -7, 0):
            self.pass_xcp(pkt, feedback=feedback)
        self.assertEqual([self.switch.read_register(name)[2] for name in (dp.REG_XCP_POSITIVE_LEFT,
                                                                          dp.REG_XCP_NEGATIVE_LEFT)], [0, 0])


class FeedbackLimitedElsewhereTakesWhatThePacketGetsTest(XcpTest):
    """A packet that another router gave less (H below this router's p - n) takes from the totals only what it
    gets, H: p - H more negative feedback and H + (p - H) positive (xcp_law.xcp_charged_feedback, ns-2's
    corrected xcpq.cc), as far as the negative total allows."""
    def runTest(self):
        pkt = xcp_packet(feedback=10)
        self.set_xi({2: (XI_P, 0.0)})
        p = self.router_feedback(pkt)
        self.assertGreater(p, 10)
        self.set_xi({2: (XI_P, 0.0)}, positive_total=10 * p, negative_total=10 * p)
        self.pass_xcp(pkt)
        self.assertEqual([self.switch.read_register(name)[2] for name in (dp.REG_XCP_POSITIVE_LEFT,
                                                                          dp.REG_XCP_NEGATIVE_LEFT)],
                         [10 * p - p, 10 * p - (p - 10)])
        self.set_xi({2: (XI_P, 0.0)}, positive_total=10 * p, negative_total=5)
        self.pass_xcp(pkt)
        self.assertEqual([self.switch.read_register(name)[2] for name in (dp.REG_XCP_POSITIVE_LEFT,
                                                                          dp.REG_XCP_NEGATIVE_LEFT)],
                         [10 * p - (10 + 5), 0])


class FeedbackNeverRaisedTest(XcpTest):
    """A request below the router's feedback passes unchanged, and still counts in the sums."""
    def runTest(self):
        pkt = xcp_packet(feedback=10)
        self.assertGreater(self.router_feedback(pkt), 10)
        self.pass_xcp(pkt)
        pkt = xcp_packet(feedback=-5000)
        self.pass_xcp(pkt)


class NegativeFeedbackTest(XcpTest):
    """With xi_n dominating the router's feedback is negative: the sender is told to shrink its window, and the
    checksum follows the signed field (its unsigned word grows)."""
    def runTest(self):
        self.set_xi({2: (0.0, 500.0)})
        pkt = xcp_packet(feedback=200)
        fb = self.router_feedback(pkt)
        self.assertLess(fb, 0)
        p, n = xcp_packet_feedback(0.0, 500.0, RTT_US * 1e-6, X_NS * 1e-9, len(pkt))
        self.assertAlmostEqual(fb, p - n, delta=1.0)
        self.pass_xcp(pkt, feedback=fb)
        # a datagram sent without a checksum keeps none
        pkt = xcp_packet(feedback=200, chksum=0)
        self.pass_xcp(pkt, feedback=fb)


class FeedbackFloorTest(XcpTest):
    """Feedback below an i32 leaves as -2^31; a request already there stays."""
    def runTest(self):
        self.set_xi({2: (0.0, 400_000.0)})
        pkt = xcp_packet(rtt_us=(1 << 23) - 1, feedback=I32_MAX, payload=bytes(1400))
        self.assertLess(self.router_feedback(pkt), I32_MIN)
        self.pass_xcp(pkt, feedback=I32_MIN)
        self.pass_xcp(xcp_packet(rtt_us=(1 << 23) - 1, feedback=I32_MIN, payload=bytes(1400)))


class WideProductsTest(XcpTest):
    """At the header's limits (rtt 2^23 - 1 us, x 2^32 - 1 ns) the products exceed 64 bits: with coefficients
    whose two terms differ by rtt x (a 2^-9 byte) the switch gives p rounded down and n rounded up from the exact
    products."""
    def runTest(self):
        pkt = xcp_packet(rtt_us=(1 << 23) - 1, x_ns=0xFFFFFFFF, feedback=100)
        rtt, x, s = pkt[RCP].rtt_us, pkt[XCP].x_ns, len(pkt)
        for delta in (-1, 1):
            xi_p, xi_n = (s << 30) + delta, 0xFFFFFFFF << 30
            exact = math.floor(Fraction(xi_p * rtt * x, 1 << 64)) - math.ceil(Fraction(xi_n * rtt * s, 1 << 64))
            self.write_cells({2: dp.XcpControl(xi_p, xi_n, dp.XCP_LEFT_MAX, dp.XCP_LEFT_MAX)})
            self.assertEqual(self.router_feedback(pkt), exact)
            self.pass_xcp(pkt, feedback=exact)


class ZeroCoefficientsTest(XcpTest):
    """xi_p = xi_n = 0 (a port before its first interval) gives feedback 0: a positive request is lowered to 0,
    a negative one passes."""
    def runTest(self):
        self.set_xi({2: (0.0, 0.0)})
        self.pass_xcp(xcp_packet(feedback=3000), feedback=0)
        self.pass_xcp(xcp_packet(feedback=-3000))


class NotCountedTest(XcpTest):
    """Packets without a valid RTT (0 or 2^23 and above) or without x pass untouched by XCP, not counted; so does
    a packet without FLAG_XCP (the same 12 bytes are the hosts' then) and a flagged datagram too short for the
    header."""
    def runTest(self):
        for rtt in (0, 1 << 23, 0xFFFFFFFF):
            self.pass_xcp(xcp_packet(rtt_us=rtt, feedback=1_000_000), counted=False)
        self.pass_xcp(xcp_packet(x_ns=0, feedback=1_000_000), counted=False)
        plain = xcp_packet(flags=0, feedback=1_000_000)
        self.assertNotIn(XCP, Ether(bytes(plain)))
        before = self.sums()
        self.forward_and_check(plain, 2, routed(plain, 2), rtt_us=RTT_US)
        self.assertEqual(self.sums(), before)
        # flagged, but the datagram ends inside the header: RCP alone, byte for byte
        short = xcp_packet(feedback=1_000_000)
        short[UDP].remove_payload()
        short = short / RCP(flags=FLAG_XCP, rtt_us=RTT_US) / Raw(b"\x00" * 11)
        short[UDP].len, short[IP].len = None, None
        short = Ether(bytes(short))
        before = self.sums()
        self.forward_and_check(short, 2, routed(short, 2), rtt_us=RTT_US)
        self.assertEqual(self.sums(), before)


class PortWithoutXcpTest(XcpTest):
    """A port XCP's loop does not control (xcp_on 0: RCP's, the hosts', a switch no loop has written) leaves XCP
    packets as they came, whatever its coefficient cells hold, and counts nothing."""
    def runTest(self):
        self.switch.write_register(dp.REG_XCP_XI_N, 3, dp.xcp_xi_n_cell(500.0))
        self.pass_xcp(xcp_packet(out_port=3, feedback=1_000_000), out_port=3, counted=False)
        self.write_cells({2: None})
        self.pass_xcp(xcp_packet(feedback=1_000_000), counted=False)


class OwnPortTest(XcpTest):
    """A packet counts in the sums of its own output port and takes that port's coefficients."""
    def runTest(self):
        self.set_xi({3: (XI_P * 2, XI_N / 2)})
        pkt = xcp_packet(out_port=3, feedback=1_000_000)
        fb = self.router_feedback(pkt, port=3)
        self.assertNotEqual(fb, self.router_feedback(pkt, port=2))
        self.pass_xcp(pkt, out_port=3, feedback=fb)


class StampedAndLoweredTest(XcpTest):
    """An XCP packet is an RCP packet too: the RCP stamp and the XCP feedback change the same datagram, and its
    checksum verifies after both."""
    def runTest(self):
        self.set_rates({2: 5000})
        pkt = xcp_packet(feedback=1_000_000, rate_kbps=8000)
        self.pass_xcp(pkt, feedback=self.router_feedback(pkt), rate_kbps=5000)


class ReceivedFrameTest(XcpTest):
    """The frame actually received carries the router's feedback and a UDP checksum a receiver accepts."""
    def runTest(self):
        pkt = xcp_packet(feedback=-1)
        self.set_xi({2: (0.0, 100.0)})
        self.send(0, pkt)
        result = testutils.dp_poll(self, port_number=2, timeout=2)
        self.assertIsInstance(result, self.dataplane.PollSuccess)
        got = Ether(result.packet)
        self.assertEqual(got[XCP].feedback, self.router_feedback(pkt))
        self.assertTrue(udp_checksum_ok(result.packet))


class MinQueueTest(XcpTest):
    """The smallest queue a departure left behind: restarted by the control plane (all ones), it follows a
    draining queue down, reaches 0 when the port has drained, and stays as written while no packet leaves."""
    BURST, RATE_PPS = 30, 50

    def count(self):
        return self.switch.read_counter(dp.COUNTER_RTT_COUNT, 2).packets

    def runTest(self):
        before = self.snapshot()[RTT_COUNT][2]
        self.switch.write_register(dp.REG_XCP_MIN_QUEUE, 3, dp.XCP_MIN_QUEUE_NONE)
        self.switch.set_queue(2, self.RATE_PPS, 64)
        try:
            for i in range(self.BURST):
                self.send(0, xcp_packet(rtt_us=1000 + i))
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and self.count() < before + 5:
                time.sleep(0.01)
            # mid-drain: restart, let a few packets leave; the minimum is the queue the latest one left
            self.switch.write_register(dp.REG_XCP_MIN_QUEUE, 2, dp.XCP_MIN_QUEUE_NONE)
            time.sleep(3 / self.RATE_PPS)
            min_queue = self.switch.read_register_cell(dp.REG_XCP_MIN_QUEUE, 2)
            left = self.switch.read_register_cell(dp.REG_QUEUE_DEPTH, 2)
            self.assertLess(min_queue, self.BURST - 5)
            self.assertGreater(min_queue, 0)
            self.assertGreaterEqual(min_queue, left)    # the queue only shrinks while nothing arrives
            deadline = time.monotonic() + self.BURST / self.RATE_PPS + 2
            while time.monotonic() < deadline and self.count() < before + self.BURST:
                time.sleep(0.05)
            self.assertEqual(self.count(), before + self.BURST)
            self.assertEqual(self.switch.read_register_cell(dp.REG_XCP_MIN_QUEUE, 2), 0)
            # port 3 saw no departure since its restart
            self.assertEqual(self.switch.read_register_cell(dp.REG_XCP_MIN_QUEUE, 3), dp.XCP_MIN_QUEUE_NONE)
        finally:
            self.switch.set_queue(2, None, 64)
            self.dataplane.flush()

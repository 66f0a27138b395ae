"""The flow-count feedforward: SYNs counted and stamped by their order in the interval, departures counted.

Each interval the control plane writes rcp_arrivals_base[p] (the arrivals so far) and the stamps S_1 ..
S_SYN_RATES of the interval's 1st .. SYN_RATES-th SYN; later SYNs take the last. A SYN leaves with
min(its rate, R, S_k); a stamp of RATE_NONE caps nothing.
"""

from base import ARRIVALS, DEPARTURES, RcpTest, rcp_packet, routed
from p4rcp import dataplane as dp
from p4rcp.protocol import ACK, DATA, FIN, FLAG_LAST, RCP, REF, SYN

R = 8000
STAMPS = [1000 * k for k in range(1, dp.SYN_RATES + 1)]     # S_k = k Mb/s, all below R


class FeedforwardTest(RcpTest):
    def setUp(self):
        RcpTest.setUp(self)
        self.set_rates({2: R})

    def arrivals(self, port=2):
        return self.snapshot()[ARRIVALS][port]

    def syn_is_stamped(self, rate_kbps, stamp):
        pkt = rcp_packet(type=SYN, rate_kbps=rate_kbps)
        self.forward_and_check(pkt, 2, routed(pkt, 2, rate_kbps=stamp), rtt_us=pkt[RCP].rtt_us)


class SynsStampedInOrderTest(FeedforwardTest):
    """The k-th SYN of the interval leaves with S_k; SYNs beyond SYN_RATES take the last stamp."""
    def runTest(self):
        self.set_syn_rates(2, self.arrivals(), STAMPS)
        for k in range(1, dp.SYN_RATES + 3):
            self.syn_is_stamped(10 * R, STAMPS[min(k, dp.SYN_RATES) - 1])


class BaseStartsTheCountAgainTest(FeedforwardTest):
    """Writing the base (a new interval) makes the next SYN the first again; the count itself runs on."""
    def runTest(self):
        self.set_syn_rates(2, self.arrivals(), STAMPS)
        for k in (1, 2, 3):
            self.syn_is_stamped(10 * R, STAMPS[k - 1])
        arrivals = self.arrivals()
        self.assertEqual(arrivals, 3)
        self.set_syn_rates(2, arrivals, STAMPS)
        self.syn_is_stamped(10 * R, STAMPS[0])
        self.assertEqual(self.arrivals(), 4)


class StampIsAMinimumTest(FeedforwardTest):
    """A SYN asking less than S_k keeps its rate; an S_k above R leaves R."""
    def runTest(self):
        self.set_syn_rates(2, self.arrivals(), [500, 2 * R] + STAMPS[2:])
        self.syn_is_stamped(400, 400)
        self.syn_is_stamped(10 * R, R)


class NoneStampCapsNothingTest(FeedforwardTest):
    """Feedforward off (every S_k = RATE_NONE): a SYN is stamped with R alone, and still counted."""
    def runTest(self):
        self.set_syn_rates(2, self.arrivals(), [dp.RATE_NONE] * dp.SYN_RATES)
        self.syn_is_stamped(10 * R, R)
        self.syn_is_stamped(10 * R, R)


class OtherPortsKeepTheirOwnCountTest(FeedforwardTest):
    """A SYN to port 3 neither moves port 2's count nor reads port 2's stamps."""
    def runTest(self):
        self.set_rates({2: R, 3: R})
        self.set_syn_rates(2, self.arrivals(2), STAMPS)
        self.set_syn_rates(3, self.arrivals(3), [R // 2] * dp.SYN_RATES)
        pkt = rcp_packet(out_port=3, type=SYN, rate_kbps=10 * R)
        self.forward_and_check(pkt, 3, routed(pkt, 3, rate_kbps=R // 2), rtt_us=pkt[RCP].rtt_us)
        self.syn_is_stamped(10 * R, STAMPS[0])


class OnlyDataFlaggedLastDepartsTest(FeedforwardTest):
    """DATA with the LAST bit (whatever the other bits) counts a departure and is stamped as DATA; DATA
    without it, REF, and reverse packets carrying the bit count nothing (forward_and_check's expected
    counts say which)."""
    def runTest(self):
        self.set_syn_rates(2, self.arrivals(), STAMPS)
        before = self.snapshot()[DEPARTURES][2]
        for flags in (FLAG_LAST, FLAG_LAST | 0x80):
            pkt = rcp_packet(type=DATA, rate_kbps=10 * R)
            pkt[RCP].flags = flags
            self.forward_and_check(pkt, 2, routed(pkt, 2, rate_kbps=R), rtt_us=30000)
        for type_, flags in ((DATA, 0), (DATA, 0x02), (REF, FLAG_LAST)):
            pkt = rcp_packet(type=type_, rate_kbps=10 * R)
            pkt[RCP].flags = flags
            self.forward_and_check(pkt, 2, routed(pkt, 2, rate_kbps=R), rtt_us=30000)
        for type_ in (ACK, FIN):
            pkt = rcp_packet(type=type_, rate_kbps=10 * R)
            pkt[RCP].flags = FLAG_LAST
            self.forward_and_check(pkt, 2, routed(pkt, 2))
        self.assertEqual(self.snapshot()[DEPARTURES][2] - before, 2)

"""The feedforward: SYN and ENDING sizes counted up to P, long flows' SYNs counted and stamped by their order in
the interval, short flows' SYNs stamped with the short rate.

Each interval the control plane writes, per port, the long-arrivals count the interval starts from, the stamps
S_1 .. S_SYN_RATES of its 1st .. SYN_RATES-th long SYN (later ones take the last), the short SYNs' stamp, P and
the long threshold (control_plane.driver.SynGrants). A SYN leaves with min(its rate, R, its stamp); a stamp of
RATE_NONE caps nothing.
"""

from base import COMMITTED_ARRIVALS, COMMITTED_DEPARTURES, LONG_ARRIVALS, RcpTest, rcp_packet, routed
from p4rcp import dataplane as dp
from p4rcp.protocol import ACK, DATA, FIN, FLAG_ENDING, RCP, REF, SYN

R = 8000
STAMPS = tuple(1000 * k for k in range(1, dp.SYN_RATES + 1))     # S_k = k Mb/s, all below R
SHORT = 700
P, LONG = 200, 100          # sizes count up to 200 packets; above 100 a flow is long
LONG_SIZE, SHORT_SIZE = 1000, 40


class FeedforwardTest(RcpTest):
    def setUp(self):
        RcpTest.setUp(self)
        self.set_rates({2: R})

    def count(self, name, port=2):
        return self.snapshot()[name][port]

    def grant(self, port=2, stamps=STAMPS, short=SHORT):
        """Grants whose base is the port's long arrivals now: the next long SYN is the interval's first."""
        self.set_syn_grants(port, dp.SynGrants(self.count(LONG_ARRIVALS, port), tuple(stamps), short, P, LONG))

    def syn_is_stamped(self, rate_kbps, stamp, size=LONG_SIZE, port=2):
        pkt = rcp_packet(out_port=port, type=SYN, rate_kbps=rate_kbps)
        pkt[RCP].size = size
        self.forward_and_check(pkt, port, routed(pkt, port, rate_kbps=stamp), rtt_us=pkt[RCP].rtt_us)


class LongSynsStampedInOrderTest(FeedforwardTest):
    """The k-th long SYN of the interval leaves with S_k; long SYNs beyond SYN_RATES take the last stamp."""
    def runTest(self):
        self.grant()
        for k in range(1, dp.SYN_RATES + 3):
            self.syn_is_stamped(10 * R, STAMPS[min(k, dp.SYN_RATES) - 1])


class ShortSynsTakeTheShortRateAndLeaveTheRankTest(FeedforwardTest):
    """A SYN of a size up to the long threshold leaves with the short stamp and counts no long arrival, so the
    next long SYN is still the interval's first; sizes count up to P whichever the kind."""
    def runTest(self):
        self.grant()
        for size in (SHORT_SIZE, LONG, 1):
            self.syn_is_stamped(10 * R, SHORT, size=size)
        self.syn_is_stamped(10 * R, STAMPS[0], size=LONG + 1)
        self.syn_is_stamped(10 * R, STAMPS[1], size=0xFFFF)      # an unknown size is long, and counts P


class BaseStartsTheCountAgainTest(FeedforwardTest):
    """Writing the base (a new interval) makes the next long SYN the first again; the count itself runs on."""
    def runTest(self):
        self.grant()
        for k in (1, 2, 3):
            self.syn_is_stamped(10 * R, STAMPS[k - 1])
        self.assertEqual(self.count(LONG_ARRIVALS), 3)
        self.grant()
        self.syn_is_stamped(10 * R, STAMPS[0])
        self.assertEqual(self.count(LONG_ARRIVALS), 4)


class StampIsAMinimumTest(FeedforwardTest):
    """A SYN asking less than its stamp keeps its rate; a stamp above R leaves R."""
    def runTest(self):
        self.grant(stamps=(500, 2 * R) + STAMPS[2:], short=2 * R)
        self.syn_is_stamped(400, 400)
        self.syn_is_stamped(10 * R, R)
        self.syn_is_stamped(10 * R, R, size=SHORT_SIZE)


class NoneStampCapsNothingTest(FeedforwardTest):
    """Feedforward off (every stamp RATE_NONE): a SYN is stamped with R alone, and still counted."""
    def runTest(self):
        self.grant(stamps=(dp.RATE_NONE,) * dp.SYN_RATES, short=dp.RATE_NONE)
        self.syn_is_stamped(10 * R, R)
        self.syn_is_stamped(10 * R, R, size=SHORT_SIZE)


class OtherPortsKeepTheirOwnCountTest(FeedforwardTest):
    """A SYN to port 3 neither moves port 2's counts nor reads port 2's stamps."""
    def runTest(self):
        self.set_rates({2: R, 3: R})
        self.grant(2)
        self.grant(3, stamps=(R // 2,) * dp.SYN_RATES, short=R // 4)
        self.syn_is_stamped(10 * R, R // 2, port=3)
        self.syn_is_stamped(10 * R, R // 4, size=SHORT_SIZE, port=3)
        self.syn_is_stamped(10 * R, STAMPS[0])


class OnlyDataFlaggedEndingDepartsTest(FeedforwardTest):
    """DATA with the ENDING bit (whatever the other bits) adds its size up to P to the committed departures
    and is stamped as DATA; DATA without it, REF, and reverse packets carrying the bit count nothing
    (forward_and_check's expected counts say which)."""
    def runTest(self):
        self.grant()
        before = self.count(COMMITTED_DEPARTURES)
        for flags, size in ((FLAG_ENDING, 30), (FLAG_ENDING | 0x40, 5000)):
            pkt = rcp_packet(type=DATA, rate_kbps=10 * R)
            pkt[RCP].flags, pkt[RCP].size = flags, size
            self.forward_and_check(pkt, 2, routed(pkt, 2, rate_kbps=R), rtt_us=30000)
        for type_, flags in ((DATA, 0), (DATA, 0x02), (REF, FLAG_ENDING)):
            pkt = rcp_packet(type=type_, rate_kbps=10 * R)
            pkt[RCP].flags, pkt[RCP].size = flags, 50
            self.forward_and_check(pkt, 2, routed(pkt, 2, rate_kbps=R), rtt_us=30000)
        for type_ in (ACK, FIN):
            pkt = rcp_packet(type=type_, rate_kbps=10 * R)
            pkt[RCP].flags, pkt[RCP].size = FLAG_ENDING, 50
            self.forward_and_check(pkt, 2, routed(pkt, 2))
        self.assertEqual(self.count(COMMITTED_DEPARTURES) - before, 30 + P)
        self.assertEqual(self.count(COMMITTED_ARRIVALS), 0)

"""A switch that no control plane has written yet stamps no rate (docs/protocol.md, "What a router does per
packet"): its stamp cells are at their reset value, 0, which the program reads as RCP_RATE_NONE. Without that,
a switch that restarts, or one started by another tool, would stamp 0 kb/s into every RCP packet crossing it
and freeze its flows until a controller wrote."""

from base import ROUTES, RcpTest, rcp_packet, routed
from p4rcp import dataplane as dp
from p4rcp.protocol import DATA, FLAG_LAST, RCP, REF, SYN


class UnprogrammedTest(RcpTest):
    """The program loaded afresh (its own constant entries only, every register and counter 0), as a switch
    just started, then the route to port 2 and nothing else."""

    def setUp(self):
        RcpTest.setUp(self)
        self.switch.reload_program()
        self.switch.install_routes([r for r in ROUTES if r.port == 2])

    def expect_unstamped(self):
        for type_ in (DATA, SYN, REF):
            for rate in (8000, 1, dp.RATE_NONE - 1):
                pkt = rcp_packet(type=type_, rate_kbps=rate, rtt_us=30000)
                self.forward_and_check(pkt, 2, routed(pkt, 2), rtt_us=30000)
        last = rcp_packet(type=DATA, rate_kbps=8000, rtt_us=30000)
        last[RCP].flags = FLAG_LAST
        self.forward_and_check(last, 2, routed(last, 2), rtt_us=30000)


class UnprogrammedSwitchStampsNothingTest(UnprogrammedTest):
    """One route, no weight classes, no stamp written: every forward type leaves with the rate it came with
    (the unclassified cell is at its reset value); the counters run, SYNs are counted as arrivals and DATA
    flagged LAST as departures (forward_and_check)."""
    def runTest(self):
        self.assertEqual(self.switch.read_register(dp.REG_RATE)[dp.UNCLASSIFIED_CELL], 0)
        self.expect_unstamped()


class ClassifiedButUnstampedSwitchStampsNothingTest(UnprogrammedTest):
    """The weight classes installed but no stamp written yet (a controller that died between the two): the
    port's own cells, at their reset value, stamp nothing either, nor do its SYN stamps (the arrivals base at
    0 puts every SYN in the last SYN cell, also at its reset value)."""
    def runTest(self):
        self.set_weight_classes({10: 1})
        self.expect_unstamped()

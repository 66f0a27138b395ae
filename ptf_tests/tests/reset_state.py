"""A switch that no control plane has written yet stamps no rate (docs/reliability.md, "A switch no controller
has written stamps nothing"): its stamp cells are at their reset value, 0, which the program reads as
RCP_RATE_NONE. Without that, a switch that restarts, or one started by another tool, would stamp 0 kb/s into
every RCP packet crossing it and freeze its flows until a controller wrote."""

from base import PORTS, ROUTES, RcpTest, rcp_packet, routed
from p4rcp import dataplane as dp
from p4rcp.protocol import DATA, FLAG_ENDING, RCP, REF, SYN


class UnprogrammedTest(RcpTest):
    """The program loaded afresh (its own constant entries only, every register and counter 0), as a switch
    just started, then the route to port 2 and nothing else."""

    def setUp(self):
        RcpTest.setUp(self)
        self.switch.reload_program()
        # every cell at its reset value: no SYN capped, P = 0 (no size counted) and every sized SYN long
        self.grants = {p: dp.SynGrants.at_reset() for p in PORTS}
        self.switch.install_routes([r for r in ROUTES if r.port == 2])

    def expect_unstamped(self):
        for type_ in (DATA, SYN, REF):
            for rate, size in ((8000, 0), (1, 40), (dp.RATE_NONE - 1, 0xFFFF)):
                pkt = rcp_packet(type=type_, rate_kbps=rate, rtt_us=30000)
                pkt[RCP].size = size
                self.forward_and_check(pkt, 2, routed(pkt, 2), rtt_us=30000)
        ending = rcp_packet(type=DATA, rate_kbps=8000, rtt_us=30000)
        ending[RCP].flags, ending[RCP].size = FLAG_ENDING, 40
        self.forward_and_check(ending, 2, routed(ending, 2), rtt_us=30000)


class UnprogrammedSwitchStampsNothingTest(UnprogrammedTest):
    """One route, no weight classes, no stamp written: every forward type leaves with the rate it came with
    (the unclassified cell is at its reset value); the counters run, SYNs of any size above 0 are counted as
    long arrivals, and no size is committed, P being 0 (forward_and_check)."""
    def runTest(self):
        self.assertEqual(self.switch.read_register(dp.REG_RATE)[dp.UNCLASSIFIED_CELL], 0)
        self.expect_unstamped()


class ClassifiedButUnstampedSwitchStampsNothingTest(UnprogrammedTest):
    """The weight classes installed but no stamp written yet (a controller that died between the two): the
    port's own cells, at their reset value, stamp nothing either, nor do its SYN stamps (the arrivals base at
    0 puts every long SYN in the last SYN cell, and a SYN of size 0 reads the short stamp, all at their reset
    value)."""
    def runTest(self):
        self.set_weight_classes({10: 1})
        self.expect_unstamped()

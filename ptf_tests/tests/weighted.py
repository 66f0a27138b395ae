"""Weighted sharing: each packet is stamped with its (output port, weight class) cell, its class from its DSCP."""

from base import PORTS, ROUTES, RcpTest, rcp_packet, routed
from control_plane.loop import ControlLoop
from p4rcp import dataplane as dp
from p4rcp.params import RcpParams
from p4rcp.topology import Switch, SwitchPort

GOLD, SILVER, UNMAPPED = 46, 10, 20          # DSCP values
C_BPS = 10e6


class ClassStampTest(RcpTest):
    """DSCP 46 in class 2 and DSCP 10 in class 1 are stamped with their cells; DSCP 0 and a DSCP without an
    entry are class 0; a rate at or below the cell passes unchanged."""
    def runTest(self):
        self.set_weight_classes({GOLD: 2, SILVER: 1})
        for weight_class, kbps in ((0, 4000), (1, 2000), (2, 1000)):
            self.set_rates({2: kbps}, weight_class)
        for dscp, stamp in ((GOLD, 1000), (SILVER, 2000), (0, 4000), (UNMAPPED, 4000)):
            pkt = rcp_packet(rate_kbps=8000, dscp=dscp)
            self.forward_and_check(pkt, 2, routed(pkt, 2, rate_kbps=stamp), rtt_us=30000)
            low = rcp_packet(rate_kbps=stamp, dscp=dscp)
            self.forward_and_check(low, 2, routed(low, 2), rtt_us=30000)


class ClassesArePerPortTest(RcpTest):
    """The same class has its own stamp on each port."""
    def runTest(self):
        self.set_weight_classes({SILVER: 1})
        self.set_rates({1: 700, 2: 900, 3: 1100}, weight_class=1)
        self.set_rates({1: 5000, 2: 5000, 3: 5000}, weight_class=0)
        for port, stamp in ((1, 700), (2, 900), (3, 1100)):
            pkt = rcp_packet(out_port=port, rate_kbps=8000, dscp=SILVER)
            self.forward_and_check(pkt, port, routed(pkt, port, rate_kbps=stamp), rtt_us=30000)


class ControlLoopStampsTest(RcpTest):
    """What the control loop writes, through the switch: weights 1 and 1/4 (DSCP 46). With R = 4C (the law
    lets R rise to C / w_min) both classes are stamped C, the weight-1 class capped; with R = C/2 they are
    stamped C/2 and C/8; a DSCP without a weight is weight 1."""
    def runTest(self):
        ports = {p: SwitchPort(p, f"h{p}", r.src_mac, capacity_bps=C_BPS if p == 2 else None, queue_depth_pkts=64)
                 for p, r in zip(PORTS, ROUTES)}
        loop = ControlLoop(Switch("s1", 0, ports), ROUTES, self.switch, RcpParams(dscp_weights={str(GOLD): 0.25}),
                           rt_priority=None)
        for R, stamps in ((4 * C_BPS, (C_BPS, C_BPS)), (C_BPS / 2, (C_BPS / 2, C_BPS / 8))):
            loop.ports[2].R_bps = R
            loop.resync()          # installs the classes and writes every class's stamp from R
            self.switch.wait_for_writes()
            for dscp, stamp_bps in ((0, stamps[0]), (UNMAPPED, stamps[0]), (GOLD, stamps[1])):
                pkt = rcp_packet(rate_kbps=100_000, dscp=dscp)
                self.forward_and_check(pkt, 2, routed(pkt, 2, rate_kbps=round(stamp_bps / 1000)), rtt_us=30000)
        self.assertEqual(self.switch.read_stamps_kbps([dp.rate_cell(2, 1)]), {dp.rate_cell(2, 1): round(C_BPS / 8000)})

"""Policing: each flow's bytes per epoch against its (port, class) allowance and limit, in two rows of cells.

Rows are used in series (policing.p4): row 0 counts every packet; a packet over the limit there goes to
row 1, which counts what it lets through and drops the rest. The flows below are built with the data
plane's own hashes (p4rcp/police.py) to share cells; the tests read the cells to check those hashes.
"""

import time

from ptf import testutils

from base import (INPUT_BYTES, INPUT_PACKETS, POLICED_BYTES, POLICED_PACKETS, RTT_COUNT, RTT_SUM, RcpTest, flow_counts,
                  flow_of, host_ip, rcp_packet, routed, udp_packet)
from p4rcp import dataplane as dp
from p4rcp.police import Flow, row_indices
from p4rcp.protocol import ACK, FIN, REF, SYN

RTT = 30000
EPOCH_S = dp.POLICE_EPOCH_S["v1model"]


def data(sport=40000, dst_host=2, **kw):
    return rcp_packet(sport=sport, dst=host_ip(2, dst_host), rtt_us=RTT, **kw)


def sharing(flow: Flow, row: int, *, other_row_differs: bool = True, avoid=()) -> Flow:
    """A flow from the same host to port 2 whose cell in `row` is `flow`'s (and, by default, whose cell in the
    other row is not): searched over source ports and receivers."""
    want = row_indices(flow)
    for dst_host in range(2, 255):
        for sport in range(1024, 65536):
            other = Flow(flow.src, host_ip(2, dst_host), sport, flow.dport)
            if other == flow or other in avoid:
                continue
            got = row_indices(other)
            if got[row] == want[row] and (got[1 - row] != want[1 - row] or not other_row_differs):
                return other
    raise AssertionError(f"no flow shares row {row} with {flow}")


def packet_of(flow: Flow, **kw):
    return rcp_packet(src=flow.src, dst=flow.dst, sport=flow.sport, dport=flow.dport, rtt_us=RTT, **kw)


PROBE_DSCP, PROBE_CLASS = 63, 7         # the probe: a class policing never drops, whose cells show the epoch


class PolicingTest(RcpTest):
    def setUp(self):
        RcpTest.setUp(self)
        self.classes = {PROBE_DSCP: PROBE_CLASS}
        self.set_weight_classes(self.classes)
        self.set_police(2, allowance=10**9, limit=10**9, weight_class=PROBE_CLASS)
        self.probe = data(sport=50000, dscp=PROBE_DSCP)

    def map_dscp(self, dscp, weight_class):
        self.classes[dscp] = weight_class
        self.set_weight_classes(self.classes)

    def epoch_now(self):
        """The data plane's epoch when the probe just sent crossed it: the probe's cell once it changed (the
        probe packet itself is left on port 2's queue for the caller)."""
        before = self.cell(0, flow_of(self.probe))
        self.send(0, self.probe)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            now = self.cell(0, flow_of(self.probe))
            if now != before:
                return now[0]
        self.fail("the probe never reached its cell")

    def send_bursts(self, *bursts):
        """bursts: (packet, copies, forwarded[, sampled]). Every copy is sent back to back; then of each
        burst the first `forwarded` must come out on port 2 unchanged (with an RTT sample each if sampled,
        the default), the rest be policed: counted as input and as policed, no sample. Cell contents hold
        when the copies span at most one epoch boundary (then no cell is two epochs old and empties): the
        probe before and after says so, and a run that spanned more (a busy machine: the epoch is 16 ms)
        is done again from empty cells."""
        frames = [(bytes(pkt), n) for pkt, n, *_ in bursts]     # built once: the copies leave back to back
        for attempt in range(10):
            for row in dp.REG_POLICE_ROWS:
                self.switch.reset_register(row)
            self.dataplane.flush()
            before = self.snapshot()
            first = self.epoch_now()
            for frame, n in frames:
                for _ in range(n):
                    self.send(0, frame)
            last = self.epoch_now()
            if last - first <= 1:
                break
            time.sleep(0.5)                  # let the packets of this run out before the next
            self.dataplane.flush()
        else:
            self.fail("every run spanned more than one epoch boundary")
        deltas = {}
        for pkt, n, forwarded, *sampled in [(self.probe, 1, 1), *bursts, (self.probe, 1, 1)]:
            for _ in range(forwarded):
                testutils.verify_packet(self, routed(pkt, 2), 2)
            for key, value in (((INPUT_BYTES, 2), n * len(pkt)), ((INPUT_PACKETS, 2), n),
                               ((POLICED_BYTES, 2), (n - forwarded) * len(pkt)), ((POLICED_PACKETS, 2), n - forwarded)):
                deltas[key] = deltas.get(key, 0) + value
            for key, value in flow_counts(pkt, 2, self.grants[2], forwarded).items():
                deltas[key] = deltas.get(key, 0) + value
            if not sampled or sampled[0]:
                deltas[(RTT_SUM, 2)] = deltas.get((RTT_SUM, 2), 0) + forwarded * RTT
                deltas[(RTT_COUNT, 2)] = deltas.get((RTT_COUNT, 2), 0) + forwarded
        testutils.verify_no_other_packets(self)
        self.assert_counter_deltas(before, self.snapshot(), deltas)

    def cell(self, row, flow):
        return self.police_cell(row, row_indices(flow)[row])


class CompliantFlowPassesUntouchedTest(PolicingTest):
    """Within its allowance a flow passes unchanged; row 0 holds its bytes, row 1 is never used."""
    def runTest(self):
        pkt = data()
        self.set_police(2, allowance=1, limit=20 * len(pkt))
        self.send_bursts((pkt, 10, 10))
        flow = flow_of(pkt)
        self.assertIn(10 * len(pkt) - self.cell(0, flow)[1], (0, 1))      # 1 byte leaked at an epoch boundary
        self.assertEqual(self.cell(1, flow), (0, 0))


class FlowAboveItsLimitIsPolicedTest(PolicingTest):
    """With an allowance of 1 byte per epoch and a limit of 3.5 packets, a burst of 8: 3 pass row 0, 3 more
    pass row 1 (which sees only packets over the limit in row 0), the last 2 are dropped."""
    def runTest(self):
        pkt = data()
        self.set_police(2, allowance=1, limit=len(pkt) * 7 // 2)
        self.send_bursts((pkt, 8, 6))
        flow = flow_of(pkt)
        # Row 0 counts every packet (at an epoch boundary its bucket is capped at the limit, then counts on);
        # row 1 what it let through.
        self.assertIn(self.cell(0, flow)[1], range(len(pkt) * 7 // 2 + len(pkt), 8 * len(pkt) + 1))
        self.assertIn(self.cell(1, flow)[1], range(3 * len(pkt) - 2, 3 * len(pkt) + 1))


class FlowSharingRow0WithAHeavyFlowPassesTest(PolicingTest):
    """B shares its row-0 cell with A, which sends above its limit: B's packets find that cell over, go to
    row 1, where B's cell is its own, and pass. The cells are where p4rcp/police.py's hashes put them."""
    def runTest(self):
        a = data()
        heavy = flow_of(a)
        light = sharing(heavy, 0)
        b = packet_of(light)
        self.set_police(2, allowance=1, limit=len(a) * 7 // 2)
        self.send_bursts((a, 8, 6), (b, 2, 2))
        self.assertGreaterEqual(self.cell(0, light)[1], 2 * len(a))          # the shared cell: over the limit
        self.assertIn(2 * len(b) - self.cell(1, light)[1], (0, 1))           # B's own row-1 cell


class FlowSharingRow1WithAHeavyFlowPassesTest(PolicingTest):
    """D shares only its row-1 cell with A: its own row-0 cell is under the limit, so row 1 never sees it."""
    def runTest(self):
        a = data()
        heavy = flow_of(a)
        light = sharing(heavy, 1)
        self.set_police(2, allowance=1, limit=len(a) * 7 // 2)
        self.send_bursts((a, 8, 6), (packet_of(light), 2, 2))
        self.assertLessEqual(self.cell(1, heavy)[1], 3 * len(a))             # A's 3 only: D never reached row 1
        self.assertIn(2 * len(a) - self.cell(0, light)[1], (0, 1))


class FlowSharingBothCellsWithHeavyFlowsIsPolicedTest(PolicingTest):
    """The sketch's false positive: B shares its row-0 cell with heavy flow A and its row-1 cell with heavy
    flow A2. Both of B's cells are over, and B's packet is dropped though B sent one packet."""
    def runTest(self):
        a = data()
        heavy = flow_of(a)
        light = sharing(heavy, 0)
        heavy2 = sharing(light, 1, avoid={heavy})
        self.assertNotEqual(row_indices(heavy2)[0], row_indices(heavy)[0])
        self.set_police(2, allowance=1, limit=len(a) * 7 // 2)
        self.send_bursts((a, 8, 6), (packet_of(heavy2), 8, 6), (packet_of(light), 1, 0))


class EpochLeakTest(PolicingTest):
    """A cell's bucket leaks the allowance when a packet of the next epoch arrives: 4 packets, then one
    packet in the next epoch leaves 4 - 2 + 1 packets with an allowance of 2 packets. A cell older than the
    last epoch is empty: after 3 epochs the next packet leaves 1."""
    def runTest(self):
        pkt = data()
        flow = flow_of(pkt)
        size = len(pkt)
        self.set_police(2, allowance=2 * size, limit=9 * size // 2)
        probe = self.probe
        self.assertNotEqual(row_indices(flow_of(probe))[0], row_indices(flow)[0])
        for attempt in range(20):
            self.switch.reset_register(dp.REG_POLICE_ROWS[0])
            for _ in range(4):
                self.send(0, pkt)
            for _ in range(4):
                testutils.verify_packet(self, routed(pkt, 2), 2)
            epoch, nbytes = self.cell(0, flow)
            if nbytes != 4 * size:         # the burst straddled an epoch boundary: leaked in the middle
                continue
            # Find the start of the next epoch with the probe, then send at once.
            probes = 0
            while probes < 200:
                self.send(0, probe)
                probes += 1
                if self.cell(0, flow_of(probe))[0] != epoch:
                    break
            self.send(0, pkt)
            new_epoch, nbytes = self.cell(0, flow)
            for _ in range(probes):
                testutils.verify_packet(self, routed(probe, 2), 2)
            testutils.verify_packet(self, routed(pkt, 2), 2)
            if new_epoch == epoch + 1:
                self.assertEqual(nbytes, 3 * size)
                break
        else:
            self.fail("could not send a packet in the epoch after its cell's in 20 attempts")
        time.sleep(3 * EPOCH_S)
        self.send(0, pkt)
        testutils.verify_packet(self, routed(pkt, 2), 2)
        self.assertEqual(self.cell(0, flow)[1], size)
        testutils.verify_no_other_packets(self)


class OnlyDataAndRefArePolicedTest(PolicingTest):
    """With a limit below one packet every DATA and REF packet is dropped; a SYN, reverse RCP types and
    other UDP pass and leave the cells alone."""
    def runTest(self):
        self.set_police(2, allowance=1, limit=10)
        self.send_bursts((data(type=SYN), 2, 2), (data(type=ACK), 2, 2, False), (data(type=FIN), 2, 2, False),
                         (udp_packet(dport=53), 2, 2, False))
        self.assertEqual(self.cell(0, flow_of(data())), (0, 0))        # the DATA flow's 5-tuple: nothing counted
        self.send_bursts((data(), 1, 0), (data(type=REF, payload=b"r" * 12), 1, 0))


class LimitZeroTurnsPolicingOffTest(PolicingTest):
    """A limit of 0 (any allowance): no packet is policed, no cell written."""
    def runTest(self):
        pkt = data()
        self.set_police(2, allowance=1, limit=0)
        self.send_bursts((pkt, 20, 20))
        self.assertEqual(self.cell(0, flow_of(pkt)), (0, 0))


class EachClassHasItsOwnPolicingTest(PolicingTest):
    """Thresholds are per (port, weight class): DSCP 10 in class 1 is policed by class 1's, class 0 not."""
    def runTest(self):
        self.map_dscp(10, 1)
        silver, plain = data(dscp=10), data(dscp=0, sport=40001)
        self.set_police(2, allowance=1, limit=10, weight_class=1)
        self.set_police(2, allowance=10**6, limit=10**6, weight_class=0)
        self.send_bursts((silver, 1, 0), (plain, 3, 3))

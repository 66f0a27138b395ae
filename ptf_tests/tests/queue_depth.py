"""The queue-depth register under a burst, with the egress queue rate limited."""

import time

from ptf import testutils

from base import RcpTest, rcp_packet, routed
from p4rcp import dataplane as dp

BURST = 40
RATE_PPS = 50


class QueueDepthUnderBurstTest(RcpTest):
    """A burst into a 50 pkt/s queue shows a deep queue on that port only; a packet into the drained queue reads 0."""
    def runTest(self):
        before = self.snapshot()
        self.switch.set_queue(2, RATE_PPS, 64)
        try:
            for i in range(BURST):
                self.send(0, rcp_packet(rtt_us=1000 + i))
            # The burst enters the queue far faster than 50 pkt/s drain it.
            deepest = 0
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and deepest < BURST // 2:
                deepest = max(deepest, self.switch.read_register(dp.REG_QUEUE_DEPTH)[2])
                time.sleep(0.01)
            self.assertGreaterEqual(deepest, BURST // 2, "the queue-depth register never showed the burst")
            self.assertEqual(self.snapshot()[dp.REG_QUEUE_DEPTH][3], before[dp.REG_QUEUE_DEPTH][3])

            time.sleep(BURST / RATE_PPS + 0.5)          # drained
            self.dataplane.flush()
            pkt = rcp_packet(rtt_us=5)
            self.send(0, pkt)
            testutils.verify_packet(self, routed(pkt, 2), 2)
            self.assertEqual(self.switch.read_register(dp.REG_QUEUE_DEPTH)[2], 0)
        finally:
            self.switch.set_queue(2, None, 64)
            self.dataplane.flush()

"""The queue-depth register: the queue the last departing packet left behind (deq_qdepth)."""

import time

from base import RcpTest, rcp_packet
from p4rcp import dataplane as dp

BURST = 40
RATE_PPS = 50


class QueueDepthAfterDrainTest(RcpTest):
    """A burst into a 50 pkt/s queue shows a deep queue on that port only while it drains; once drained the
    register reads 0 with no packet after the burst (the depth a packet saw on enqueue stayed at the last
    arrival's value until another packet came)."""
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

            deadline = time.monotonic() + BURST / RATE_PPS + 2
            while time.monotonic() < deadline and self.switch.read_counter(dp.COUNTER_RTT_COUNT, 2).packets \
                    < before["RTT count"][2] + BURST:
                time.sleep(0.05)                                   # every packet of the burst has left
            self.assertEqual(self.switch.read_counter(dp.COUNTER_RTT_COUNT, 2).packets,
                             before["RTT count"][2] + BURST)
            self.assertEqual(self.switch.read_register(dp.REG_QUEUE_DEPTH)[2], 0)
            time.sleep(0.2)                                        # and it stays right while the port is quiet
            self.assertEqual(self.switch.read_register(dp.REG_QUEUE_DEPTH)[2], 0)
        finally:
            self.switch.set_queue(2, None, 64)
            self.dataplane.flush()

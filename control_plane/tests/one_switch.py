"""The bench the loops' integration tests share: one simple_switch with two ports, traffic paced into port 0
and leaving through port 1, whose queue is shaped to QUEUE_PPS (set_queue_rate), so that the queue forms
where the P4 program sees it."""

import socket
import threading
import time

from p4rcp.topology import Route, Switch, SwitchPort

QUEUE_PPS = 200
FRAME = 1000
C = QUEUE_PPS * FRAME * 8
RTT_US = 40_000


def one_switch(thrift_port: int) -> tuple[Switch, list[Route]]:
    """The switch as the loop knows it: port 1 the shaped bottleneck, and the routes both ways."""
    switch = Switch("s1", thrift_port, {
        0: SwitchPort(0, "h0", "00:aa:00:00:00:00"),
        1: SwitchPort(1, "h1", "00:aa:00:00:00:01", capacity_bps=C, queue_rate_pps=QUEUE_PPS, queue_depth_pkts=64)})
    routes = [Route("10.0.1.0/24", 1, "00:aa:00:00:00:01", "00:00:00:00:00:02"),
              Route("10.0.0.0/24", 0, "00:aa:00:00:00:00", "00:00:00:00:00:01")]
    return switch, routes


class PacedSender(threading.Thread):
    """Paces copies of one frame into a veth at a packet rate the test sets (pps; 0: silent)."""

    def __init__(self, iface: str, frame: bytes):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        self.sock.bind((iface, 0))
        self.frame = frame
        self.pps = 0.0
        self.stop = threading.Event()

    def run(self):
        next_send = time.monotonic()
        while not self.stop.is_set():
            pps = self.pps                  # read once: the test may set it to 0 meanwhile
            if pps <= 0:
                time.sleep(0.01)
                next_send = time.monotonic()
                continue
            self.sock.send(self.frame)
            next_send += 1.0 / pps
            time.sleep(max(0.0, next_send - time.monotonic()))

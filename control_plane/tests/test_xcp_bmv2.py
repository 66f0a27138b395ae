"""XCP's loop against a real simple_switch running the data plane (xcp.p4): traffic enters on port 0 and leaves
through port 1, shaped to QUEUE_PPS; the loop measures d and y from the switch's sums, and the feedback the
departing packets carry follows the load: positive below capacity, negative above it with a queue."""

import json
import socket
import threading
import time

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from control_plane.__main__ import main
from control_plane.bmv2_thrift import Bmv2ThriftDriver
from control_plane.simple_switch import SimpleSwitch
from control_plane.tests.one_switch import C, FRAME, QUEUE_PPS, RTT_US, PacedSender, one_switch
from control_plane.xcp_loop import XcpCellsDriver, XcpLoop
from p4rcp import dataplane as dp
from p4rcp.protocol import FLAG_XCP, RCP, XCP
from p4rcp.testing import BUILD_JSON, require_toolchain, wait_for
from p4rcp.toolchain import ROOT
from p4rcp.topology import load_topology
from p4rcp.veth import VethPairs, capture_socket, free_tcp_port

X_NS = 5_000_000                       # a flow of cwnd = rtt s / x: 8 frames per 40 ms
REQUEST = 2**31 - 1                    # the sender asks for everything


def xcp_frame() -> bytes:
    pkt = (Ether(src="00:00:00:00:00:01", dst="00:aa:00:00:00:00") / IP(src="10.0.0.2", dst="10.0.1.2")
           / UDP(sport=40000, dport=6577) / RCP(flags=FLAG_XCP, rate_kbps=10**6, rtt_us=RTT_US)
           / XCP(cwnd_bytes=8 * FRAME, x_ns=X_NS, feedback=REQUEST))
    return bytes(pkt / bytes(FRAME - len(pkt)))


class Receiver(threading.Thread):
    """The H_feedback of every XCP frame port 1 sends, with its arrival time."""

    def __init__(self, iface):
        super().__init__(daemon=True)
        self.sock = capture_socket(iface)
        self.sock.settimeout(0.1)
        self.feedback: list[tuple[float, int]] = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                frame = self.sock.recv(4096)
            except socket.timeout:
                continue
            pkt = Ether(frame)
            if XCP in pkt:
                self.feedback.append((time.monotonic(), pkt[XCP].feedback))

    def since(self, t):
        return [fb for at, fb in self.feedback if at > t]


@pytest.fixture
def network():
    require_toolchain("simple_switch")
    thrift_port = free_tcp_port()
    with VethPairs(2, tag="cx") as veths:
        switch = SimpleSwitch(BUILD_JSON, dict(enumerate(veths.switch_side)), thrift_port).start()
        sender, receiver = PacedSender(veths.host_side[0], xcp_frame()), Receiver(veths.host_side[1])
        sender.start()
        receiver.start()
        try:
            yield sender, receiver, thrift_port
        finally:
            for t in (sender, receiver):
                t.stop.set()
                t.join(2)
            switch.stop()


def test_the_feedback_follows_the_load(network):
    sender, receiver, thrift_port = network
    topo_switch, routes = one_switch(thrift_port)
    thrift = Bmv2ThriftDriver(thrift_port)
    driver = XcpCellsDriver(thrift, FRAME)
    driver.connect()
    records = []
    loop = XcpLoop(topo_switch, routes, driver, clock=time.monotonic, wall_clock=time.time, emit=records.append)
    stop = threading.Event()
    thread = threading.Thread(target=loop.run, args=(stop, (0.05, 0.5)), daemon=True)
    thread.start()
    probe = Bmv2ThriftDriver(thrift_port)
    probe.connect()
    try:
        # Half of C: spare bandwidth, positive feedback below the request; d is the packets' RTT.
        sender.pps = QUEUE_PPS / 2
        wait_for(lambda: len(records) > 20, 20, "the loop produced no intervals")
        assert loop.ports[1].d == pytest.approx(RTT_US / 1e6, rel=0.01)
        last = records[-10:]
        y_mean = sum(r["y_bps"] * r["period_s"] for r in last) / sum(r["period_s"] for r in last)
        assert y_mean == pytest.approx(C / 2, rel=0.3)
        assert all(r["phi_bytes"] > 0 for r in last)
        t = time.monotonic()
        wait_for(lambda: len(receiver.since(t)) > 10, 10, "no XCP frame left port 1")
        # every frame is lowered from the request; one that comes after the interval's positive total ran out
        # (the loop's interval ran late) gets 0 until the next interval refills it
        feedback = receiver.since(t)
        assert all(0 <= fb < REQUEST for fb in feedback), feedback
        assert sum(fb > 0 for fb in feedback) > len(feedback) / 2, feedback
        # the cells the loop wrote are the law's last coefficients, in the data plane's fixed point
        xi_p = probe.read_register_cell(dp.REG_XCP_XI_P, 1)
        assert xi_p > 0 and any(dp.xcp_xi_p_cell(r["xi_p"]) == xi_p for r in records[-5:])

        # 1.5 C: a standing queue and y > C, negative feedback to every packet
        sender.pps = QUEUE_PPS * 1.5
        wait_for(lambda: records[-1]["Q_bytes"] > 10 * FRAME, 10, "the loop never saw the persistent queue")
        wait_for(lambda: records[-1]["phi_bytes"] < 0, 10, "phi never turned negative under overload")
        t = time.monotonic() + 0.5             # past the frames queued before
        wait_for(lambda: len(receiver.since(t)) > 10, 10, "no XCP frame left port 1 under overload")
        assert all(fb < 0 for fb in receiver.since(t))
    finally:
        sender.pps = 0
        stop.set()
        thread.join(5)
        probe.close()
        driver.close()
    assert not thread.is_alive()


def test_the_entry_point_runs_xcp_on_a_topologys_switch(network, tmp_path, capsys):
    """python -m control_plane --router xcp: the switch programmed from the topology (and "synchronised" said, which
    a runner waits for), one record per XCP port and interval, the coefficients' cells written."""
    _, _, thrift_port = network
    topology = ROOT / "topo" / "topologies" / "dumbbell.toml"
    s1 = load_topology(topology).switch("s1")
    log = tmp_path / "control.jsonl"
    assert main(["--topology", str(topology), "--switch", "s1", "--thrift-port", str(thrift_port),
                 "--router", "xcp", "--duration", "0.5", "--log", str(log)]) == 0
    assert "s1: synchronised, XCP on ports" in capsys.readouterr().err
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert {r["port"] for r in records} == {p.number for p in s1.rcp_ports}
    assert all(r["switch"] == "s1" and r["xi_p"] == 0 == r["xi_n"] for r in records)   # no traffic, no feedback
    probe = Bmv2ThriftDriver(thrift_port)
    probe.connect()
    try:
        assert probe.install_routes(load_topology(topology).routes("s1")) == {"added": 0, "modified": 0,
                                                                              "deleted": 0}
    finally:
        probe.close()

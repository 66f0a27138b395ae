"""python -m control_plane as an operator runs it: its command line, and what it does when it or its switch
dies mid-run (docs/control_plane.md, "Robustness").

The switch is the dumbbell's s1 on veth pairs (ports 1 and 2 to the senders, 3 the bottleneck towards s2);
a sender offers RCP frames to r1 through port 3.
"""

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import fields
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from control_plane.__main__ import arguments_for, parse_args, rcp_params
from control_plane.bmv2_thrift import Bmv2ThriftDriver
from control_plane.simple_switch import SimpleSwitch
from p4rcp import dataplane as dp
from p4rcp.params import RcpParams
from p4rcp.protocol import RCP
from p4rcp.testing import BUILD_JSON, require_toolchain, wait_for
from p4rcp.toolchain import ROOT
from p4rcp.topology import load_topology
from p4rcp.veth import VethPairs, capture_socket, free_tcp_port

TOPOLOGY = ROOT / "topo" / "topologies" / "dumbbell.toml"
S1 = load_topology(TOPOLOGY).switch("s1")
PORT = S1.rcp_ports[0].number          # 3
C = S1.ports[PORT].capacity_bps


def test_every_rcp_parameter_goes_through_the_command_line():
    """arguments_for and rcp_params are inverses, for every field of RcpParams: a runner that starts the
    standalone controller loses none of an experiment's parameters."""
    changed = RcpParams(alpha=0.6, beta=0.2, gamma=0.95, q0_bytes=1500.0, R_min_bps=20e3, R_init_fraction=0.1,
                        d0_init_s=0.05, d0_estimator="ns2", d0_gain=0.2, T_max_s=0.005, queue_reads=1,
                        overload_floor=False, first_jitter=0.1,
                        queue_packet_bytes=1000, dscp_weights={10: 0.5, 46: 0.25}, police=True, police_margin=0.05,
                        police_slack_s=0.02, police_burst_packets=3.0, feedforward=False, tcp_coupling=False,
                        tcp_response=1.0)
    assert all(getattr(changed, f.name) != getattr(RcpParams(), f.name) for f in fields(RcpParams)), \
        "a field of RcpParams this test does not change: add it"
    for params in (RcpParams(), changed):
        args = parse_args(["--topology", "t", "--switch", "s1", *arguments_for(params)])
        _, back = rcp_params(args.preset, args.param, data_frame_bytes=1078)
        for f in fields(RcpParams):
            assert getattr(back, f.name) == pytest.approx(getattr(params, f.name)), f.name


def frame(rate_kbps: int) -> bytes:
    return bytes(Ether(src="00:00:00:00:00:01", dst=S1.ports[1].mac) / IP(src="10.0.0.2", dst="10.0.0.4")
                 / UDP(sport=40000, dport=6577) / RCP(rate_kbps=rate_kbps, rtt_us=40_000) / bytes(1000))


class Sender(threading.Thread):
    """RCP frames asking 1 Gb/s into port 1 towards r1, at half the bottleneck's packet rate."""

    def __init__(self, iface):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        self.sock.bind((iface, 0))
        self.stop = threading.Event()

    def run(self):
        data, interval = frame(10**6), 2 / S1.ports[PORT].queue_rate_pps
        while not self.stop.wait(interval):
            self.sock.send(data)


class Controller:
    """One `python -m control_plane` process; its stderr in a file of its own, its records in the shared log."""

    def __init__(self, tmp: Path, thrift_port: int, name: str):
        self.stderr = tmp / f"{name}.stderr"
        self.log = tmp / "control_s1.jsonl"
        with open(self.stderr, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "control_plane", "--topology", str(TOPOLOGY), "--switch", "s1",
                 "--thrift-port", str(thrift_port), "--log", str(self.log)], cwd=ROOT, stderr=err)
        self.started_unix_s = time.time()

    def text(self) -> str:
        return self.stderr.read_text(errors="replace")

    def wait_for(self, what: str, timeout: float = 30.0, count: int = 1) -> None:
        wait_for(lambda: self.text().count(what) >= count, timeout,
                  f"the controller never said {what!r} ({count}x):\n{self.text()[-3000:]}")

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def network(tmp_path):
    require_toolchain("simple_switch")
    thrift_port = free_tcp_port()
    with VethPairs(3, tag="sa") as veths:
        interfaces = {number: veths.switch_side[i] for i, number in enumerate(sorted(S1.ports))}
        switch = SimpleSwitch(BUILD_JSON, interfaces, thrift_port).start()
        sender = Sender(veths.host_side[0])
        sender.start()
        controllers = []
        try:
            yield switch, thrift_port, veths, lambda name: controllers.append(
                Controller(tmp_path, thrift_port, name)) or controllers[-1]
        finally:
            sender.stop.set()
            sender.join(2)
            for c in controllers:
                c.stop()
            switch.stop()


def _at_clamp(controller) -> bool:
    """R has climbed to C, its clamp: no later interval moves it."""
    records = controller.records()
    return bool(records) and records[-1]["R_bps"] >= C * (1 - 1e-9)


def _stamp(thrift_port: int) -> int:
    probe = Bmv2ThriftDriver(thrift_port)
    probe.connect()
    try:
        return probe.read_stamps_kbps([dp.rate_cell(PORT)])[dp.rate_cell(PORT)]
    finally:
        probe.close()


def _stamped_rate(iface: str) -> int:
    """The rate field of the next RCP frame leaving the bottleneck port."""
    with capture_socket(iface) as sock:
        sock.settimeout(2.0)
        while True:
            pkt = Ether(sock.recv(2048))
            if RCP in pkt:
                return pkt[RCP].rate_kbps


def test_a_killed_controller_leaves_the_last_R_stamped_and_its_successor_resumes_it(network):
    switch, thrift_port, veths, start = network
    first = start("first")
    first.wait_for("programmed it: port 3 R 0.750 Mb/s")       # a fresh switch: R starts at 0.05 C
    # at half the capacity R climbs to C, its clamp
    wait_for(lambda: _at_clamp(first), 20, "R never reached C")
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(5)
    R_before = first.records()[-1]["R_bps"]
    time.sleep(0.5)
    # no controller runs: the switch goes on stamping the last R it was given
    assert _stamp(thrift_port) == round(R_before / 1000)
    assert _stamped_rate(veths.host_side[2]) == round(R_before / 1000)
    second = start("second")
    second.wait_for(f"resumed the switch's state: port 3 R {R_before / 1e6:.3f} Mb/s (routes unchanged, "
                    "weight classes unchanged)")
    wait_for(lambda: len([r for r in second.records() if r["time"] > second.started_unix_s]) >= 2, 10,
              "the second controller produced no interval")
    after = [r for r in second.records() if r["time"] > second.started_unix_s][:2]
    assert all(abs(r["R_bps"] - R_before) <= 0.05 * R_before for r in after), (R_before, after)
    assert "programmed it" not in second.text()


def test_the_controller_reconnects_with_backoff_and_reprograms_a_restarted_switch(network):
    switch, thrift_port, veths, start = network
    controller = start("controller")
    controller.wait_for("synchronised")
    # at its clamp R stays put, so the R the restarted switch is given is the R it goes on stamping
    wait_for(lambda: _at_clamp(controller), 20, "R never reached C")
    switch.process.kill()                  # simple_switch dies ...
    switch.stop()
    for delay in ("0.1", "0.2", "0.4"):    # ... the controller retries, backing off
        controller.wait_for(f"resynchronising in {delay} s")
    R = controller.records()[-1]["R_bps"]
    switch.start()                         # ... and it comes back empty, on the same port
    controller.wait_for("synchronised", count=2)
    assert f"programmed it: port 3 R {R / 1e6:.3f} Mb/s (routes 4 added, weight classes 64 added)" in controller.text()
    assert _stamp(thrift_port) == round(R / 1000), "its own R, not the initial one"
    assert _stamped_rate(veths.host_side[2]) == round(R / 1000)
    controller.proc.send_signal(signal.SIGTERM)
    assert controller.proc.wait(10) == 0

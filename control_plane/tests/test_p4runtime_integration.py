"""The P4Runtime driver against bmv2's simple_switch_grpc, started without a program.

The driver pushes the pipeline and installs the routes over P4Runtime; bmv2's
P4Runtime server has no register access, which the driver must say, and with
the Thrift side driver the RCP loop then runs over both.
"""

import json
import socket
import subprocess
import sys
import threading
import time

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from control_plane.bmv2_thrift import Bmv2ThriftDriver
from control_plane.loop import ControlLoop
from control_plane.p4runtime import P4RuntimeDriver, P4RuntimeUnsupported
from control_plane.simple_switch import SimpleSwitch
from p4rcp.params import RcpParams
from p4rcp.protocol import RCP
from p4rcp.testing import require_toolchain
from p4rcp.toolchain import BUILD_JSON, BUILD_P4INFO, ROOT
from p4rcp.topology import Route, Switch, SwitchPort
from p4rcp.veth import VethPairs, capture_socket, free_tcp_port

ROUTES = [Route("10.0.1.0/24", 1, "00:aa:00:00:00:01", "00:00:00:00:00:02"),
          Route("10.0.0.0/24", 0, "00:aa:00:00:00:00", "00:00:00:00:00:01")]
RTT_US = 30_000


@pytest.fixture
def grpc_switch():
    require_toolchain("simple_switch_grpc")
    thrift_port, grpc_port = free_tcp_port(), free_tcp_port()
    with VethPairs(2, tag="pr") as veths:
        switch = SimpleSwitch(None, dict(enumerate(veths.switch_side)), thrift_port, device_id=1,
                              binary="simple_switch_grpc",
                              grpc_port=grpc_port).start()
        try:
            yield f"127.0.0.1:{grpc_port}", thrift_port, veths
        finally:
            switch.stop()


def _rcp_frame(rate_kbps: int) -> bytes:
    return bytes(Ether(src="00:00:00:00:00:01", dst="00:aa:00:00:00:00") / IP(src="10.0.0.2", dst="10.0.1.2")
                 / UDP(sport=40000, dport=6577) / RCP(rate_kbps=rate_kbps, rtt_us=RTT_US) / bytes(200))


def _send_and_receive(veths, frame: bytes) -> Ether:
    rx = capture_socket(veths.host_side[1])
    rx.settimeout(0.2)
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind((veths.host_side[0], 0))
    try:
        tx.send(frame)
        end = time.monotonic() + 5
        while time.monotonic() < end:
            try:
                pkt = Ether(rx.recv(4096))
            except TimeoutError:
                continue
            if RCP in pkt:
                return pkt
        raise AssertionError("the frame did not come out of port 1")
    finally:
        rx.close()
        tx.close()


def test_pipeline_and_routes_over_p4runtime_registers_refused_on_bmv2(grpc_switch):
    address, _, veths = grpc_switch
    driver = P4RuntimeDriver(address, BUILD_P4INFO, BUILD_JSON)
    driver.connect()          # the switch runs no program: this pushes ours
    try:
        driver.install_routes(ROUTES)
        # again: reconciled with what the switch holds (P4Runtime reads answer canonical values), no change
        assert driver.install_routes(ROUTES) == {"added": 0, "modified": 0, "deleted": 0}
        assert sorted(driver.read_routes(), key=lambda r: r.prefix) == sorted(ROUTES, key=lambda r: r.prefix)
        out = _send_and_receive(veths, _rcp_frame(10**6))
        assert out[Ether].dst == "00:00:00:00:00:02" and out[IP].ttl == 63
        assert driver.read_ingress_packets(0) >= 1
        with pytest.raises(P4RuntimeUnsupported, match="does not implement"):
            driver.read_counters([1], time.monotonic)
        with pytest.raises(P4RuntimeUnsupported, match="does not implement"):
            driver.write_rates_kbps({1: 1000})
    finally:
        driver.close()


def test_rcp_loop_over_p4runtime_with_registers_over_thrift(grpc_switch):
    address, thrift_port, veths = grpc_switch
    C = 5_000_000
    switch = Switch("s1", thrift_port, {
        0: SwitchPort(0, "h0", "00:aa:00:00:00:00"),
        1: SwitchPort(1, "h1", "00:aa:00:00:00:01", capacity_bps=C, queue_rate_pps=500, queue_depth_pkts=64)})
    driver = P4RuntimeDriver(address, BUILD_P4INFO, BUILD_JSON, side=Bmv2ThriftDriver(thrift_port))
    records = []
    loop = ControlLoop(switch, ROUTES, driver, RcpParams(d0_init_s=0.03), emit=records.append)
    stop = threading.Event()
    thread = threading.Thread(target=loop.run, args=(stop, (0.05, 0.5)), daemon=True)
    thread.start()
    try:
        end = time.monotonic() + 10
        while len(records) < 20:
            assert time.monotonic() < end, "the loop produced no intervals over P4Runtime + Thrift"
            time.sleep(0.05)
        # An idle link: R climbs from its initial 5% of C, and the switch stamps the R it was given.
        R_kbps = _stamped_rate(veths)
        assert 0.05 * C / 1000 <= R_kbps <= C / 1000
        probe = Bmv2ThriftDriver(thrift_port)    # its own connection: the loop's is the loop thread's
        probe.connect()
        assert probe.read_counters([1], time.monotonic).ports[1].rtt_count >= 1
        probe.close()
    finally:
        stop.set()
        thread.join(5)
        driver.close()
    assert not thread.is_alive()
    assert all(r["R_bps"] >= loop.params.R_min_bps for r in records)


def _stamped_rate(veths) -> int:
    """The rate stamped into a packet that asks for more than any R."""
    out = _send_and_receive(veths, _rcp_frame(10**7))
    stamped = out[RCP].rate_kbps
    assert stamped < 10**7, "the packet left with the rate it asked for: no R in the switch"
    return stamped


def test_command_line_runs_the_loop_over_p4runtime(grpc_switch, tmp_path):
    address, thrift_port, _ = grpc_switch
    log = tmp_path / "control.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "control_plane", "--topology", str(ROOT / "topo" / "topologies" / "dumbbell.toml"),
         "--switch", "s1", "--p4runtime", address, "--device-config", str(BUILD_JSON),
         "--registers-over", "thrift", "--thrift-port", str(thrift_port), "--duration", "1.5", "--log", str(log)],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(records) > 50 and {r["switch"] for r in records} == {"s1"}

    # Without the Thrift side on bmv2: a clear refusal at start (register writes are the first thing its
    # P4Runtime server cannot do; queues are left to the target's configuration), not a crash or a retry loop.
    result = subprocess.run(
        [sys.executable, "-m", "control_plane", "--topology", str(ROOT / "topo" / "topologies" / "dumbbell.toml"),
         "--switch", "s1", "--p4runtime", address, "--duration", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "does not implement it over P4Runtime" in result.stderr, result.stderr

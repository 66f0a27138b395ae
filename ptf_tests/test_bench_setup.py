"""bench-dataplane measures what it says: with --features on every frame is classified into its weight class,
counted in its policing cell, never dropped, and stamped; with off, stamped and nothing else."""

import socket
import time

import psutil
import pytest
from scapy.layers.l2 import Ether

from control_plane.bmv2_thrift import Bmv2ThriftDriver
from p4rcp import dataplane as dp
from p4rcp.bmv2 import SimpleSwitch
from p4rcp.police import Flow, row_indices
from p4rcp.protocol import RCP
from p4rcp.testing import require_toolchain
from p4rcp.toolchain import BUILD_JSON
from p4rcp.topology import Route
from p4rcp.veth import VethPairs, free_tcp_port
from ptf_tests.bench_dataplane import _cpu_seconds, configure_rcp, frame

FRAMES = 20


@pytest.mark.parametrize("features", ["on", "off"])
def test_every_frame_pays_for_the_features_it_claims(features):
    require_toolchain("simple_switch")
    with VethPairs(2, tag="bs") as veths:
        port = free_tcp_port()
        with SimpleSwitch(BUILD_JSON, dict(enumerate(veths.switch_side)), port):
            driver = Bmv2ThriftDriver(port)
            driver.connect()
            driver.install_routes([Route("10.0.1.0/24", 1, "00:aa:00:00:00:01", "00:00:00:00:00:02")])
            configure_rcp(driver, features)
            rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))
            rx.bind((veths.host_side[1], 0))
            rx.settimeout(2)
            tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            tx.bind((veths.host_side[0], 0))
            data = frame()
            for _ in range(FRAMES):
                tx.send(data)
            stamps = []
            while len(stamps) < FRAMES:
                stamps.append(Ether(rx.recv(2048))[RCP].rate_kbps)
            assert stamps == [5000] * FRAMES
            time.sleep(0.1)
            assert driver.read_counter(dp.COUNTER_POLICED, 1).packets == 0
            pkt = Ether(data)
            flow = Flow(pkt["IP"].src, pkt["IP"].dst, pkt["UDP"].sport, pkt["UDP"].dport)
            cell = driver.read_register_cell(dp.REG_POLICE_ROWS[0], row_indices(flow)[0]) & 0xFFFFFFFF
            if features == "on":
                assert 0 < cell <= FRAMES * len(data)
            else:
                assert cell == 0
            driver.close()


def test_cpu_time_is_the_threads_scheduled_time():
    """The benchmark's CPU clock agrees with the process's own CPU clock over a busy spell of this process."""
    me = psutil.Process()
    cpu0, own0 = _cpu_seconds(me), time.process_time()
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    cpu, own = _cpu_seconds(me) - cpu0, time.process_time() - own0
    assert cpu == pytest.approx(own, rel=0.05)

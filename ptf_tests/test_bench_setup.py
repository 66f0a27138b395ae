"""bench-dataplane measures what it says: with --features on every frame is classified into its weight class,
counted in its policing cell, never dropped, and stamped; with off, stamped and nothing else; with --frames xcp,
every frame is summed by the XCP router and has its feedback lowered."""

import os
import socket
import subprocess
import sys
import time
from collections import namedtuple
from contextlib import ExitStack, contextmanager

import psutil
import pytest
from scapy.layers.l2 import Ether

from control_plane.bmv2_thrift import Bmv2ThriftDriver
from control_plane.simple_switch import SimpleSwitch
from p4rcp import dataplane as dp
from p4rcp.police import Flow, row_indices
from p4rcp.protocol import RCP, XCP
from p4rcp.testing import require_toolchain
from p4rcp.toolchain import BUILD_JSON
from p4rcp.topology import Route
from p4rcp.veth import VethPairs, capture_socket, free_tcp_port
from ptf_tests.bench_dataplane import (XCP_RTT_US, XCP_X_NS, _cpu_seconds, configure_rcp, configure_xcp, frame,
                                       pin_threads)

FRAMES = 20


@contextmanager
def bench_switch(tag):
    """The benchmark's switch (routes 10.0.1.0/24 to port 1), its driver, and raw sockets into port 0 and out
    of port 1."""
    require_toolchain("simple_switch")
    with VethPairs(2, tag=tag) as veths, ExitStack() as stack:
        port = free_tcp_port()
        stack.enter_context(SimpleSwitch(BUILD_JSON, dict(enumerate(veths.switch_side)), port))
        driver = Bmv2ThriftDriver(port)
        driver.connect()
        stack.callback(driver.close)
        driver.install_routes([Route("10.0.1.0/24", 1, "00:aa:00:00:00:01", "00:00:00:00:00:02")])
        rx = stack.enter_context(capture_socket(veths.host_side[1]))
        rx.settimeout(2)
        tx = stack.enter_context(socket.socket(socket.AF_PACKET, socket.SOCK_RAW))
        tx.bind((veths.host_side[0], 0))
        yield driver, tx, rx


@pytest.mark.parametrize("features", ["on", "off"])
def test_every_frame_pays_for_the_features_it_claims(features):
    with bench_switch("bs") as (driver, tx, rx):
        configure_rcp(driver, features)
        data = frame()
        for _ in range(FRAMES):
            tx.send(data)
        stamps = [Ether(rx.recv(2048))[RCP].rate_kbps for _ in range(FRAMES)]
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


def test_every_xcp_frame_is_summed_and_has_its_feedback_lowered():
    with bench_switch("bx") as (driver, tx, rx):
        configure_xcp(driver)
        data = frame("xcp")
        for _ in range(FRAMES):
            tx.send(data)
        feedback = [Ether(rx.recv(2048))[XCP].feedback for _ in range(FRAMES)]
        assert len(set(feedback)) == 1 and feedback[0] < Ether(data)[XCP].feedback
        time.sleep(0.1)
        sums = driver.read_xcp_cells([1])[1]
        assert (sums.sum_x_ns, sums.sum_rtt_x_us_ns) == (FRAMES * XCP_X_NS, FRAMES * XCP_RTT_US * XCP_X_NS)


def test_cpu_time_is_the_threads_scheduled_time():
    """The benchmark's CPU clock agrees with the process's own CPU clock over a busy spell of this process."""
    me = psutil.Process()
    cpu0, own0 = _cpu_seconds(me), time.process_time()
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    cpu, own = _cpu_seconds(me) - cpu0, time.process_time() - own0
    assert cpu == pytest.approx(own, rel=0.05)


def test_pin_threads_pins_every_live_thread_and_skips_one_that_ended():
    """A thread that ends between the listing and its pinning (a real simple_switch did, as it came up) is
    skipped; every other thread ends on the CPU."""
    child = subprocess.Popen([sys.executable, "-c", "import threading, time\n"
                              "for _ in range(3): threading.Thread(target=time.sleep, args=(30,)).start()\n"
                              "time.sleep(30)"])
    try:
        proc = psutil.Process(child.pid)
        deadline = time.monotonic() + 5
        while proc.num_threads() < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.num_threads() == 4
        ended = namedtuple("pthread", "id user_time system_time")(2**22 + 1, 0.0, 0.0)   # above any pid_max: no such task

        class WithAnEndedThread:
            def threads(self):
                return proc.threads() + [ended]

        cpu = min(os.sched_getaffinity(0))
        pin_threads(WithAnEndedThread(), cpu)
        assert all(os.sched_getaffinity(t.id) == {cpu} for t in proc.threads())
    finally:
        child.kill()
        child.wait()

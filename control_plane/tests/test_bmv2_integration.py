"""The control loop against a real simple_switch running the data plane, on the bench of
control_plane/tests/one_switch.py."""

import threading
import time

import pytest

from control_plane.bmv2_thrift import Bmv2ThriftDriver
from control_plane.driver import SwitchUnavailable
from control_plane.loop import ControlLoop, program_switch
from control_plane.simple_switch import SimpleSwitch
from control_plane.tests.one_switch import C, FRAME, QUEUE_PPS, RTT_US, PacedSender, one_switch
from p4rcp import dataplane as dp
from p4rcp.params import RcpParams
from p4rcp.protocol import RCP
from p4rcp.testing import BUILD_JSON, require_toolchain, wait_for
from p4rcp.topology import Route, Switch, SwitchPort
from p4rcp.veth import VethPairs, free_tcp_port
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

def frame_bytes() -> bytes:
    pkt = (Ether(src="00:00:00:00:00:01", dst="00:aa:00:00:00:00") / IP(src="10.0.0.2", dst="10.0.1.2")
           / UDP(sport=40000, dport=6577) / RCP(rate_kbps=10**6, rtt_us=RTT_US))
    return bytes(pkt / bytes(FRAME - len(pkt)))


@pytest.fixture
def network():
    require_toolchain("simple_switch")
    thrift_port = free_tcp_port()
    with VethPairs(2, tag="ci") as veths:
        switch = SimpleSwitch(BUILD_JSON, dict(enumerate(veths.switch_side)), thrift_port).start()
        sender = PacedSender(veths.host_side[0], frame_bytes())
        sender.start()
        try:
            yield switch, sender, thrift_port
        finally:
            sender.stop.set()
            sender.join(2)
            switch.stop()


def test_R_rises_falls_and_survives_a_restart(network):
    switch, sender, thrift_port = network
    topo_switch, routes = one_switch(thrift_port)
    records = []
    loop = ControlLoop(topo_switch, routes, Bmv2ThriftDriver(thrift_port),
                       RcpParams(queue_packet_bytes=FRAME, d0_init_s=0.04), emit=records.append)
    stop = threading.Event()
    thread = threading.Thread(target=loop.run, args=(stop, (0.05, 0.5)), daemon=True)
    thread.start()
    probe = Bmv2ThriftDriver(thrift_port)
    try:
        # Offered load at half of C: R climbs from 5% of C to the clamp gamma*C.
        sender.pps = QUEUE_PPS / 2
        wait_for(lambda: loop.ports[1].R_bps >= 0.99 * C, 20, "R never rose to C under light load")
        assert records[-1]["d0_s"] == pytest.approx(RTT_US / 1e6, rel=0.2)
        # y over the last 20 intervals: at 100 pkt/s a 10-ms interval holds one packet, give or take the
        # sender's timer, so one interval's y is 0, C/2 or C (the last interval alone failed 1 run in 6)
        last = records[-20:]
        y_mean = sum(r["y_bps"] * r["period_s"] for r in last) / sum(r["period_s"] for r in last)
        assert y_mean == pytest.approx(C / 2, rel=0.3)
        # bmv2 shapes in packets per second: y counts the packets the data plane counted, one slot each.
        recent = records[-50:]
        assert {r["y_unit"] for r in recent} == {"slots"} and recent[-1]["slot_bytes"] == FRAME
        packets, seconds = sum(r["input_packets"] for r in recent), sum(r["period_s"] for r in recent)
        assert packets / seconds == pytest.approx(QUEUE_PPS / 2, rel=0.3)
        assert sum(r["input_bytes"] for r in recent) == packets * FRAME

        # Offered load at 1.5 C: a standing queue, y > C; R falls well below C.
        overload_start = len(records)
        sender.pps = QUEUE_PPS * 1.5
        wait_for(lambda: loop.ports[1].R_bps < 0.5 * C, 20, "R never fell under overload")
        wait_for(lambda: max(r["q_bytes"] for r in records[overload_start:]) > 10 * FRAME, 10,
                  "the control plane never saw the standing queue")

        # The switch dies and comes back empty: the loop re-installs routes, queues and R by itself.
        sender.pps = QUEUE_PPS / 2
        switch.stop()
        time.sleep(1.0)
        switch.start()
        probe.connect()
        wait_for(lambda: _switch_programmed(probe), 20, "the loop did not re-program the restarted switch")
        n = len(records)
        wait_for(lambda: len(records) > n + 50, 10, "the loop stopped producing intervals after the restart")
        assert all(r["R_bps"] >= loop.params.R_min_bps for r in records)
        assert probe.read_counter(dp.COUNTER_INPUT, 1).packets > 0
    finally:
        stop.set()
        thread.join(5)
        probe.close()
    assert not thread.is_alive()


def _switch_programmed(probe) -> bool:
    try:
        return (probe.read_stamps_kbps([dp.rate_cell(1)])[dp.rate_cell(1)] != dp.RATE_NONE
                and probe.read_counter(dp.COUNTER_INPUT, 1).packets > 0)
    except SwitchUnavailable:
        probe.connect()
        return False


def test_a_switch_programmed_without_a_loop_caps_nothing(network):
    """The no-stamp cells program_switch writes are all applied when the driver closes at once, as for a
    switch without RCP ports (the driver reads its writes' answers before it closes): caps another tool left
    in them are lifted."""
    _, _, thrift_port = network
    ports = {n: SwitchPort(n, f"h{n}", f"00:aa:00:00:00:0{n}") for n in range(2)}
    other = Bmv2ThriftDriver(thrift_port)
    other.connect()
    other.write_rates_kbps({dp.UNCLASSIFIED_CELL: 1234})
    other.write_syn_grants({p: dp.SynGrants(5, (1234,) * dp.SYN_RATES, 1234, 7, 3) for p in ports})
    other.close()
    driver = Bmv2ThriftDriver(thrift_port)
    driver.connect()
    program_switch(driver, Switch("s9", thrift_port, ports), [])
    driver.close()
    probe = Bmv2ThriftDriver(thrift_port)
    probe.connect()
    try:
        syn = probe.read_register(dp.REG_SYN_RATE)
        assert [dp.stamp_of_cell(syn[dp.syn_cell(p, k)]) for p in ports for k in range(1, dp.SYN_RATES + 1)] == \
            [dp.RATE_NONE] * (len(ports) * dp.SYN_RATES)
        short = probe.read_register(dp.REG_SHORT_RATE)
        assert [dp.stamp_of_cell(short[p]) for p in ports] == [dp.RATE_NONE] * len(ports)
        assert probe.read_stamps_kbps([dp.UNCLASSIFIED_CELL]) == {dp.UNCLASSIFIED_CELL: dp.RATE_NONE}
    finally:
        probe.close()


def test_tables_are_reconciled_entry_by_entry(network):
    """What the switch holds already is left alone; a changed entry is modified in place, a missing one added,
    one not wanted deleted (bmv2 answers a read with action data in fewer bytes than were written)."""
    _, _, thrift_port = network
    routes = [Route("10.0.0.0/24", 0, "00:aa:00:00:00:00", "00:00:00:00:00:01"),
              Route("10.0.1.0/24", 1, "00:aa:00:00:00:01", "00:00:00:00:00:02")]
    driver = Bmv2ThriftDriver(thrift_port)
    driver.connect()
    try:
        assert driver.install_routes(routes) == {"added": 2, "modified": 0, "deleted": 0}
        assert driver.install_routes(routes) == {"added": 0, "modified": 0, "deleted": 0}
        moved = Route("10.0.1.0/24", 0, "00:aa:00:00:00:00", "00:00:00:00:00:03")
        extra = Route("10.0.2.0/24", 1, "00:aa:00:00:00:01", "00:00:00:00:00:04")
        assert driver.install_routes([moved, extra]) == {"added": 1, "modified": 1, "deleted": 1}
        assert driver.install_weight_classes([0, 1], {10: 1}) == {"added": 2 * dp.NUM_DSCP, "modified": 0,
                                                                   "deleted": 0}
        assert driver.install_weight_classes([0, 1], {10: 1}) == {"added": 0, "modified": 0, "deleted": 0}
        assert driver.install_weight_classes([1], {10: 2}) == {"added": 0, "modified": 1, "deleted": dp.NUM_DSCP}
    finally:
        driver.close()

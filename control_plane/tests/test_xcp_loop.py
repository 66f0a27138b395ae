import threading
import time

import pytest

from control_plane.driver import SwitchUnavailable, XcpCells
from control_plane.xcp_loop import INITIAL_D_S, XcpCellsDriver, XcpCounters, XcpLoop
from p4rcp import dataplane as dp
from p4rcp.topology import Switch, SwitchPort
from p4rcp.xcp_law import xcp_coefficients

C_BPS = 100e6


class FakeXcpDriver:
    sets_queues = True

    def __init__(self):
        self.counters = XcpCounters(0, 0.0, 0.0, 0, 0, 0)
        self.written: list[tuple[int, float, float]] = []
        self.queues, self.routes = [], None

    def connect(self):
        pass

    def close(self):
        pass

    def install_routes(self, routes):
        self.routes = routes

    def set_queue(self, port, rate_pps, depth_pkts):
        self.queues.append((port, rate_pps, depth_pkts))

    def read_xcp(self, port):
        return self.counters

    def write_xcp(self, port, xi_p, xi_n, positive_total, negative_total):
        self.written.append((port, xi_p, xi_n, positive_total, negative_total))


def make_loop():
    switch = Switch("s1", 9090, ports={1: SwitchPort(1, "s2", "00:00:00:00:00:01", capacity_bps=C_BPS,
                                                 queue_rate_pps=11_596, queue_depth_pkts=100),
                                 2: SwitchPort(2, "h1", "00:00:00:00:00:02")})
    driver, clock, records = FakeXcpDriver(), [0.0], []
    loop = XcpLoop(switch, [], driver, clock=lambda: clock[0], wall_clock=lambda: 1000 + clock[0],
                   emit=records.append)
    return loop, driver, clock, records


def test_it_programs_the_switch_and_starts_without_feedback():
    loop, driver, _, records = make_loop()
    assert driver.routes == [] and [q[0] for q in driver.queues] == [1, 2]
    assert driver.written == [(1, 0.0, 0.0, 0.0, 0.0)]      # only the XCP (capacity) port
    assert loop.period_s == INITIAL_D_S
    loop.step()                                    # the baseline
    assert records == [] and len(driver.written) == 1


def test_an_interval_runs_the_law_on_the_counters_deltas():
    loop, driver, clock, records = make_loop()
    loop.step()
    # 0.08 s later: 1 MB arrived, flows of 80 ms RTT whose x add up to the interval, 1 MB left, 10 kB queued
    clock[0] = 0.08
    driver.counters = XcpCounters(input_bytes=1_000_000, sum_x_s=0.16, sum_rtt_x_s2=0.16 * 0.08,
                                  sum_s_bytes=1_000_000, min_queue_bytes=10_000, queue_bytes=12_000)
    loop.step()
    want = xcp_coefficients(0.08, C_BPS / 8, 1_000_000 / 0.08, 10_000, 0.16, 1_000_000)
    port, xi_p, xi_n, positive_total, negative_total = driver.written[-1]
    assert port == 1 and (xi_p, xi_n) == (pytest.approx(want.xi_p), pytest.approx(want.xi_n))
    # the next interval is d long (one port): all of the totals
    assert (positive_total, negative_total) == (pytest.approx(want.positive_total), pytest.approx(want.negative_total))
    assert loop.period_s == pytest.approx(0.08)    # d, from the packets' sum rtt x / sum x
    [r] = records
    assert r["time"] == pytest.approx(1000.08) and r["C_bps"] == C_BPS and r["y_bps"] == pytest.approx(1e8)
    assert (r["q_bytes"], r["Q_bytes"], r["period_s"]) == (12_000, 10_000, pytest.approx(0.08))
    assert r["phi_bytes"] == pytest.approx(want.phi)


def test_sums_over_an_interval_longer_than_d_are_scaled_to_d():
    loop, driver, clock, _ = make_loop()
    loop.step()
    clock[0] = 0.16                                  # twice d = 0.08: the next d sees half these sums
    driver.counters = XcpCounters(2_000_000, 0.32, 0.32 * 0.08, 2_000_000, 0, 0)
    loop.step()
    want = xcp_coefficients(0.08, C_BPS / 8, 2_000_000 / 0.16, 0, 0.16, 1_000_000)
    assert driver.written[-1][1:3] == (pytest.approx(want.xi_p), pytest.approx(want.xi_n))


def test_a_capacity_change_reaches_the_law():
    loop, driver, clock, records = make_loop()
    loop.step()
    loop.set_capacity(1, C_BPS / 2)
    clock[0] = 0.1
    driver.counters = XcpCounters(0, 0.0, 0.0, 0, 0, 0)
    loop.step()
    assert records[-1]["C_bps"] == C_BPS / 2
    assert records[-1]["phi_bytes"] == pytest.approx(0.4 * INITIAL_D_S * C_BPS / 16)


class FakeCellsSwitch:
    """A P4 switch's XCP cells (what Bmv2ThriftDriver reads and writes), settable by a test."""
    sets_queues = True
    queue_unit_bytes = None

    def __init__(self):
        self.cells = XcpCells(0, 0, 0, 0, dp.XCP_MIN_QUEUE_NONE, 0)
        self.written: list[dict[int, tuple[int, int]]] = []
        self.connects, self.routes, self.queues = 0, [], []
        self.fail_reads = 0

    def connect(self):
        self.connects += 1

    def close(self):
        pass

    def install_routes(self, routes):
        self.routes.append(routes)

    def set_queue(self, port, rate_pps, depth_pkts):
        self.queues.append(port)

    def read_xcp_cells(self, ports):
        if self.fail_reads:
            self.fail_reads -= 1
            raise SwitchUnavailable("fake switch is down")
        return {p: self.cells for p in ports}

    def write_xcp_cells(self, cells):
        self.written.append(cells)


def test_the_cells_driver_turns_wrapping_sums_into_totals_in_seconds_and_bytes():
    switch = FakeCellsSwitch()
    driver = XcpCellsDriver(switch, frame_bytes=1000)
    top = 2**64
    switch.cells = XcpCells(5000, top - 10, top - 1000, 700, 3, 4)
    first = driver.read_xcp(1)
    assert (first.input_bytes, first.sum_x_s, first.sum_rtt_x_s2, first.sum_s_bytes) == (0, 0.0, 0.0, 0)
    assert (first.min_queue_bytes, first.queue_bytes) == (3000, 4000)     # packets of a data frame each
    # the sums wrap past 2^64: 2e6 ns and 4e10 us ns more, 3000 bytes of 2 packets
    switch.cells = XcpCells(9000, 2_000_000 - 10, 4 * 10**10 - 1000, 3700, dp.XCP_MIN_QUEUE_NONE, 2)
    second = driver.read_xcp(1)
    assert second.input_bytes == 4000 and second.sum_s_bytes == 3000
    assert second.sum_x_s == pytest.approx(2e-3) and second.sum_rtt_x_s2 == pytest.approx(4e-5)
    # no departure since the restart: Q is the queue the last departure left
    assert (second.min_queue_bytes, second.queue_bytes) == (2000, 2000)


def test_the_cells_driver_writes_the_coefficients_as_fixed_point_cells():
    switch = FakeCellsSwitch()
    XcpCellsDriver(switch, frame_bytes=1000).write_xcp(3, 3e8, 20.0, 5000.5, 800.0)
    assert switch.written == [{3: (dp.xcp_xi_p_cell(3e8), dp.xcp_xi_n_cell(20.0), 5000, 800)}]
    with pytest.raises(ValueError):
        XcpCellsDriver(switch, frame_bytes=1000).write_xcp(3, -1.0, 0.0, 0.0, 0.0)


def test_an_input_count_that_goes_back_is_a_restarted_switch():
    switch = FakeCellsSwitch()
    driver = XcpCellsDriver(switch, frame_bytes=1000)
    switch.cells = XcpCells(5000, 0, 0, 0, 0, 0)
    driver.read_xcp(1)
    switch.cells = XcpCells(100, 0, 0, 0, 0, 0)
    with pytest.raises(SwitchUnavailable, match="restarted"):
        driver.read_xcp(1)
    assert driver.read_xcp(1).input_bytes == 0                   # counting starts again


def test_the_law_reaches_the_switchs_cells_and_the_run_survives_a_lost_switch():
    """XcpLoop.run over XcpCellsDriver: intervals at d of real time, the law's coefficients written as cells, and
    a switch lost mid-run connected to and programmed again."""
    switch = FakeCellsSwitch()
    sw = Switch("s1", 9090, ports={1: SwitchPort(1, "s2", "00:00:00:00:00:01", capacity_bps=C_BPS,
                                                 queue_rate_pps=11_596, queue_depth_pkts=100)})
    driver = XcpCellsDriver(switch, frame_bytes=1078)
    records = []
    loop = XcpLoop(sw, [], driver, clock=time.monotonic, wall_clock=time.time, emit=records.append)
    assert switch.written == [{1: (0, 0, 0, 0)}] and len(switch.routes) == 1
    stop = threading.Event()
    thread = threading.Thread(target=loop.run, args=(stop, (0.01, 0.02)), daemon=True)
    thread.start()
    try:
        # traffic of 20 ms RTT: each read finds 2 ms of x, 40 us ms of rtt x, 100 kB more
        def traffic():
            c = switch.cells
            return XcpCells(c.input_bytes + 100_000, c.sum_x_ns + 2_000_000, c.sum_rtt_x_us_ns + 20_000 * 2_000_000,
                            c.sum_s_bytes + 100_000, 0, 0)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and len(records) < 3:
            switch.cells = traffic()
            time.sleep(0.005)
        assert len(records) >= 3 and loop.period_s == pytest.approx(0.02)
        r = records[-1]
        [control] = switch.written[-1].values()
        assert control[:2] == (dp.xcp_xi_p_cell(r["xi_p"]), dp.xcp_xi_n_cell(r["xi_n"]))
        switch.fail_reads = 1
        n = len(records)
        while time.monotonic() < deadline and len(records) < n + 3:
            switch.cells = traffic()
            time.sleep(0.005)
        assert switch.connects == 1 and len(switch.routes) == 2 and len(records) >= n + 3
    finally:
        stop.set()
        thread.join(2)
    assert not thread.is_alive()

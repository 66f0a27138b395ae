import pytest

from control_plane.xcp_loop import INITIAL_D_S, XcpCounters, XcpLoop
from p4rcp.topology import Switch, SwitchPort
from p4rcp.xcp_law import xcp_coefficients

C_BPS = 100e6


class FakeXcpDriver:
    sets_queues = True

    def __init__(self):
        self.counters = XcpCounters(0, 0.0, 0.0, 0, 0, 0)
        self.written: list[tuple[int, float, float]] = []
        self.queues, self.routes = [], None

    def install_routes(self, routes):
        self.routes = routes

    def set_queue(self, port, rate_pps, depth_pkts):
        self.queues.append((port, rate_pps, depth_pkts))

    def read_xcp(self, port):
        return self.counters

    def write_xcp(self, port, xi_p, xi_n):
        self.written.append((port, xi_p, xi_n))


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
    assert driver.written == [(1, 0.0, 0.0)]      # only the XCP (capacity) port
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
    port, xi_p, xi_n = driver.written[-1]
    assert port == 1 and (xi_p, xi_n) == (pytest.approx(want.xi_p), pytest.approx(want.xi_n))
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
    assert driver.written[-1][1:] == (pytest.approx(want.xi_p), pytest.approx(want.xi_n))


def test_a_capacity_change_reaches_the_law():
    loop, driver, clock, records = make_loop()
    loop.step()
    loop.set_capacity(1, C_BPS / 2)
    clock[0] = 0.1
    driver.counters = XcpCounters(0, 0.0, 0.0, 0, 0, 0)
    loop.step()
    assert records[-1]["C_bps"] == C_BPS / 2
    assert records[-1]["phi_bytes"] == pytest.approx(0.4 * INITIAL_D_S * C_BPS / 16)

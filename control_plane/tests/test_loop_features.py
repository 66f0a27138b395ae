"""The control loop's weighted stamps and policing thresholds (docs/design.md, "Weights" and "Policing")."""

import pytest

from control_plane.loop import ControlLoop
from control_plane.tests.fake_driver import FakeDriver
from control_plane.tests.test_loop import PORT, S1, TOPO, C, Clock
from p4rcp import dataplane as dp
from p4rcp.params import RcpParams
from p4rcp.police import police_allowance, police_limit
from p4rcp.rcp_law import stamp_rate

EPOCH = dp.POLICE_EPOCH_S["v1model"]


def make_loop(**params):
    driver = FakeDriver(S1.ports)
    loop = ControlLoop(S1, TOPO.routes("s1"), driver, RcpParams(queue_packet_bytes=1000, **params), clock=Clock())
    loop.resync()
    return loop, driver


def test_dscp_weights_become_classes_largest_weight_first_and_accept_toml_keys():
    p = RcpParams(dscp_weights={"10": 0.5, 46: 0.25, "0": 1, "12": 0.5})
    assert p.dscp_weights == {10: 0.5, 46: 0.25, 0: 1.0, 12: 0.5}
    assert p.weight_classes() == ({10: 1, 12: 1, 46: 2}, (1.0, 0.5, 0.25))
    assert min(p.weight_classes()[1]) == 0.25
    assert RcpParams().weight_classes() == ({}, (1.0,))


@pytest.mark.parametrize("weights", [{"10": 0}, {"10": 1.5}, {"64": 0.5}, {"-1": 0.5}, {"ab": 0.5}, {"10.0": 0.5},
                                     {"10": True}, {str(d): 1 / (d + 2) for d in range(8)}, [("10", 0.5)]])
def test_bad_weights_are_refused(weights):
    with pytest.raises(ValueError):
        RcpParams(dscp_weights=weights)


def test_resync_installs_the_classes_and_writes_every_class_stamp():
    loop, driver = make_loop(dscp_weights={10: 0.5, 46: 0.25})
    R = 0.05 * C
    assert driver.weight_classes[PORT, 10] == dp.rate_cell(PORT, 1)
    assert driver.weight_classes[PORT, 46] == dp.rate_cell(PORT, 2)
    assert driver.weight_classes[PORT, 0] == dp.rate_cell(PORT, 0)          # no weight: class 0, weight 1
    assert len(driver.weight_classes) == 64 * len(S1.rcp_ports)
    assert (driver.rate(PORT, 0), driver.rate(PORT, 1), driver.rate(PORT, 2)) == (
        round(R / 1000), round(R / 2000), round(R / 4000))
    assert set(driver.rates) == {dp.rate_cell(p.number, k) for p in S1.rcp_ports for k in range(3)} | {
        dp.UNCLASSIFIED_CELL}
    assert driver.rates[dp.UNCLASSIFIED_CELL] == dp.RATE_NONE


def test_R_rises_above_C_for_small_weights_and_every_stamp_is_capped_at_C():
    """A link carrying a little: R climbs to C / w_min = 4C; class 0 and the weight-1/4 class are both stamped C."""
    loop, driver = make_loop(dscp_weights={46: 0.25})
    loop.step()
    for _ in range(400):
        driver.add(PORT, nbytes=1000, packets=1)
        loop.clock.t += 0.01
        [rec] = loop.step()
    assert rec["R_bps"] == pytest.approx(4 * C)
    assert rec["stamps_bps"] == [pytest.approx(C), pytest.approx(C)]
    assert driver.rate(PORT, 0) == driver.rate(PORT, 1) == round(C / 1000)


def test_without_weights_the_stamp_is_R_clamped_at_gamma_C_as_before():
    loop, driver = make_loop()
    loop.step()
    for _ in range(400):
        driver.add(PORT, nbytes=1000, packets=1)
        loop.clock.t += 0.01
        [rec] = loop.step()
    assert rec["R_bps"] == pytest.approx(C) and rec["stamps_bps"] == [pytest.approx(C)]


def test_policed_traffic_is_not_load():
    loop, driver = make_loop(police=True)
    loop.step()
    driver.add(PORT, nbytes=15_000, packets=15, policed_bytes=5_000, policed_packets=5)
    loop.clock.t += 0.01
    [rec] = loop.step()
    assert rec["y_bps"] == pytest.approx(10_000 * 8 / 0.01)
    assert (rec["input_bytes"], rec["input_packets"], rec["policed_bytes"], rec["policed_packets"]) == (
        15_000, 15, 5_000, 5)


def test_policing_off_writes_zero_thresholds_once_and_never_again():
    loop, driver = make_loop(dscp_weights={10: 0.5})
    assert driver.police_writes == [{dp.rate_cell(p.number, k): (0, 0) for p in S1.rcp_ports for k in range(2)}]
    loop.step()
    driver.add(PORT, nbytes=1000)
    loop.clock.t += 0.01
    [rec] = loop.step()
    assert len(driver.police_writes) == 1 and rec["police_limit_bytes"] is None


def test_policing_thresholds_follow_the_largest_stamp_of_the_last_epoch_plus_d0_plus_the_queues_drain():
    loop, driver = make_loop(police=True, dscp_weights={10: 0.5}, d0_init_s=0.04)
    p, ps = loop.params, loop.ports[PORT]

    def expected(R):
        out = []
        for w in (1.0, 0.5):
            S = stamp_rate(R, w, C)
            a = police_allowance(S, EPOCH, margin=p.police_margin, frame_bytes=1000)
            out.append((a, police_limit(a, S, slack_s=p.police_slack_s, burst_bytes=2 * 1000)))
        return out

    R0 = ps.R_bps
    assert driver.police[dp.rate_cell(PORT, 0)] == expected(R0)[0]
    loop.step()
    # a busy interval raises R, then an overloaded one lowers it: the thresholds keep the larger R ...
    driver.add(PORT, nbytes=100)
    loop.clock.t += 0.01
    loop.step()
    R_high = ps.R_bps
    driver.add(PORT, nbytes=int(3 * C / 8 * 0.01), qdepth=40)
    loop.clock.t += 0.01
    [rec] = loop.step()
    assert ps.R_bps < R_high
    assert rec["police_allowance_bytes"] == [a for a, _ in expected(R_high)]
    assert [driver.police[dp.rate_cell(PORT, k)] for k in (0, 1)] == expected(R_high)
    # ... for one epoch plus d0 plus the time the port's full queue takes to drain (packets stamped with the
    # larger R may wait that long before the senders hear it), then follow R down
    drain_s = ps.queue_drain_s(p.queue_packet_bytes)
    assert drain_s > 0.03
    steps = 0
    for _ in range(int((EPOCH + 0.04) / 0.01) + 1):
        driver.add(PORT, nbytes=int(C / 8 * 0.01))
        loop.clock.t += 0.01
        loop.step()
        steps += 1
    assert max(R for _, R in ps.R_history) == R_high          # one epoch plus d0 is not enough
    while steps < int((EPOCH + 0.04 + drain_s) / 0.01) + 2:
        driver.add(PORT, nbytes=int(C / 8 * 0.01))
        loop.clock.t += 0.01
        [rec] = loop.step()
        steps += 1
    R_max = max(R for _, R in ps.R_history)
    assert R_max < R_high
    assert [driver.police[dp.rate_cell(PORT, k)] for k in (0, 1)] == expected(R_max)

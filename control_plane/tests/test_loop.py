import threading
import time

import pytest

from control_plane.loop import ControlLoop, CounterWentBackwards, counter_delta
from control_plane.tests.fake_driver import FakeDriver
from p4rcp import dataplane as dp
from p4rcp.params import RcpParams
from p4rcp.testing import wait_for
from p4rcp.topology import Switch, SwitchPort, TopologyError, build_topology

TOPO = build_topology({"kind": "dumbbell", "pairs": 2, "rtt_ms": 40, "bottleneck_mbps": 12,
                       "data_frame_bytes": 1000})
S1 = TOPO.switch("s1")
PORT = S1.rcp_ports[0].number
C = S1.rcp_ports[0].capacity_bps


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def make_loop(params=RcpParams(queue_packet_bytes=1000), driver=None):
    driver = driver or FakeDriver(S1.ports)
    clock = Clock()
    records = []
    loop = ControlLoop(S1, TOPO.routes("s1"), driver, params, emit=records.append, clock=clock)
    loop.resync()
    return loop, driver, clock, records


def test_capacity_is_the_shaped_packet_rate_times_the_frame_size():
    assert S1.rcp_ports[0].queue_rate_pps == 1500
    assert C == 1500 * 1000 * 8


def test_resync_programs_routes_queues_and_initial_rate():
    loop, driver, _, _ = make_loop()
    assert {r.prefix for r in driver.routes} == {f"{h.ip}/32" for h in TOPO.hosts.values()}
    assert driver.queues[PORT] == (1500, 64)
    # weight class 0: R; the cell of ports without RCP: no stamp
    assert driver.rates == {dp.rate_cell(PORT): round(0.05 * C / 1000), dp.UNCLASSIFIED_CELL: dp.RATE_NONE}
    assert driver.cells_unstamped_when_classified == set(), "a class pointed at a cell not yet written"


def test_a_switch_without_rcp_ports_stamps_nothing():
    """Programmed without a loop (its routes only), a switch caps no rate and no SYN: with bmv2's registers
    at 0 it would stamp 0 kb/s into every packet that crosses it."""
    from control_plane.loop import program_switch
    from control_plane.tests.fake_driver import FakeDriver
    driver = FakeDriver(list(S1.ports))
    program_switch(driver, S1, TOPO.routes("s1"))
    assert driver.rates == {dp.UNCLASSIFIED_CELL: dp.RATE_NONE}
    assert driver.syn_grants == {port: dp.SynGrants.none() for port in S1.ports}


def test_first_read_is_a_baseline_then_y_uses_measured_time():
    loop, driver, clock, records = make_loop()
    assert loop.step() == [] and len(driver.rate_writes) == 2   # the switch's no-stamp cell, then the seed
    driver.add(PORT, nbytes=15_000)
    clock.t += 0.020                                            # twice the nominal T
    [rec] = loop.step()
    assert rec["y_bps"] == pytest.approx(15_000 * 8 / 0.020)
    assert rec["period_s"] == pytest.approx(0.020)
    assert rec["port"] == PORT and rec["switch"] == "s1" and rec["C_bps"] == C
    assert records == [rec]
    assert driver.rate(PORT) == round(rec["R_bps"] / 1000)


def test_the_period_runs_from_answer_to_answer_not_over_the_clients_decoding():
    """The switch reads its counts when it answers; what the client does after does not move that instant."""
    loop, driver, clock, _ = make_loop()
    driver.decode_s = 0.001
    loop.step()                                   # answered at 100.000, decoded by 100.001
    driver.decode_s = 0.004                       # a slow decode (a preempted client) ...
    driver.add(PORT, nbytes=10_000)
    clock.t += 0.009
    [rec] = loop.step()                           # ... answered at 100.010
    assert rec["period_s"] == pytest.approx(0.010)
    assert rec["y_bps"] == pytest.approx(10_000 * 8 / 0.010)
    assert (rec["answer_s"], rec["read_s"]) == (0, pytest.approx(0.004))


def test_a_late_answer_lengthens_the_period():
    """Lateness before the switch answers (the loop or the switch's thread waking late) is real: the
    counts cover the longer time, and the period says so."""
    loop, driver, clock, _ = make_loop()
    loop.step()
    driver.answer_s = 0.003
    driver.add(PORT, nbytes=13_000)
    clock.t += 0.010
    [rec] = loop.step(deadline=clock.t - 0.002)   # the step itself started 2 ms after its deadline
    assert rec["period_s"] == pytest.approx(0.013)
    assert rec["y_bps"] == pytest.approx(13_000 * 8 / 0.013)
    assert rec["answer_s"] == pytest.approx(0.003) and rec["late_s"] == pytest.approx(0.002)


def test_d0_moving_average_and_missing_samples():
    loop, driver, clock, _ = make_loop(RcpParams(d0_init_s=0.1, d0_gain=0.5))
    loop.step()
    driver.add(PORT, nbytes=1000, packets=1, rtt_us=3 * 40_000, samples=3)     # mean 40 ms
    clock.t += 0.01
    [rec] = loop.step()
    assert rec["d0_s"] == pytest.approx(0.1 + 0.5 * (0.04 - 0.1))
    clock.t += 0.01
    [rec2] = loop.step()                                             # no samples: d0 kept
    assert rec2["d0_s"] == rec["d0_s"] and rec2["rtt_samples"] == 0


def test_period_is_min_of_10ms_and_d0():
    loop, driver, clock, _ = make_loop(RcpParams(d0_init_s=0.004))
    assert loop.period_s == pytest.approx(0.004)
    loop2, *_ = make_loop(RcpParams(d0_init_s=0.2))
    assert loop2.period_s == pytest.approx(0.010)


def test_queue_term_uses_packet_size_assumption():
    loop, driver, clock, _ = make_loop(RcpParams(queue_packet_bytes=1234))
    loop.step()
    driver.add(PORT, nbytes=0, qdepth=7)
    clock.t += 0.01
    [rec] = loop.step()
    assert rec["q_bytes"] == 7 * 1234


def test_spare_capacity_raises_R_and_standing_queue_lowers_it():
    loop, driver, clock, _ = make_loop()
    loop.step()
    R0 = loop.ports[PORT].R_bps
    driver.add(PORT, nbytes=1000)
    clock.t += 0.01
    loop.step()
    assert loop.ports[PORT].R_bps > R0
    R1 = loop.ports[PORT].R_bps
    for _ in range(RcpParams().queue_reads):       # a queue that lasts every read the law looks at
        driver.add(PORT, nbytes=int(C / 8 * 0.01), qdepth=30)
        clock.t += 0.01
        loop.step()
    assert loop.ports[PORT].R_bps < R1


@pytest.mark.parametrize("reads", [1, 2, 3])
def test_the_law_answers_a_queue_only_once_it_lasted_queue_reads_reads(reads):
    loop, driver, clock, records = make_loop(RcpParams(queue_packet_bytes=1000, queue_reads=reads))
    loop.step()
    for _ in range(reads + 2):                     # the link exactly full: only the queue moves R
        driver.add(PORT, nbytes=int(C / 8 * 0.01), qdepth=0)
        clock.t += 0.01
        loop.step()
    R_before = loop.ports[PORT].R_bps
    answered = []
    for _ in range(reads):
        driver.add(PORT, nbytes=int(C / 8 * 0.01), qdepth=30)
        clock.t += 0.01
        [rec] = loop.step()
        answered.append(rec["q_law_bytes"])
        assert rec["q_bytes"] == 30 * 1000, "the record keeps the queue as read"
    assert answered == [0] * (reads - 1) + [30 * 1000]
    assert loop.ports[PORT].R_bps < R_before
    driver.add(PORT, nbytes=int(C / 8 * 0.01), qdepth=0)      # a read without the queue: not standing any more
    clock.t += 0.01
    [rec] = loop.step()
    assert rec["q_law_bytes"] == 0


def test_counter_delta_wraps_and_detects_restart():
    assert counter_delta(5, 2**32 - 3, 32) == 8
    assert counter_delta(10, 4, 64) == 6
    with pytest.raises(CounterWentBackwards):
        counter_delta(3, 10, 64)
    with pytest.raises(CounterWentBackwards):
        counter_delta(100, 200, 32)


def test_32bit_counters_wrap_inside_the_loop():
    loop, driver, clock, _ = make_loop(driver=FakeDriver(S1.ports, counter_bits=32, rtt_sum_bits=32))
    driver.add(PORT, nbytes=2**32 - 500, rtt_us=2**32 - 100, samples=2**32 - 1)
    loop.step()
    driver.add(PORT, nbytes=1500, rtt_us=40_100, samples=2)     # all three wrap past 2^32
    clock.t += 0.01
    [rec] = loop.step()
    assert rec["y_bps"] == pytest.approx(1500 * 8 / 0.01)
    assert rec["rtt_samples"] == 2
    assert rec["d0_s"] == pytest.approx(0.1 + 0.1 * (0.020050 - 0.1))


def test_y_counts_slots_on_a_port_shaped_in_packets_per_second():
    """bmv2 serves packets: a 60-byte SYN takes a full data-frame slot, so y counts packets x the frame."""
    loop, driver, clock, records = make_loop(driver=FakeDriver(S1.ports, queue_rate_unit="packets"))
    loop.step()
    driver.add(PORT, nbytes=10 * 1000 + 5 * 60, packets=15)    # 10 data frames, 5 SYNs / ACK-sized frames
    clock.t += 0.01
    [rec] = loop.step()
    frame = C / (8 * S1.rcp_ports[0].queue_rate_pps)
    assert frame == 1000                                        # the topology's data_frame_bytes
    assert rec["y_unit"] == "slots" and rec["slot_bytes"] == frame
    assert rec["y_bps"] == pytest.approx(15 * 1000 * 8 / 0.01)
    assert rec["y_bytes_bps"] == pytest.approx(10_300 * 8 / 0.01)
    assert (rec["input_packets"], rec["input_bytes"]) == (15, 10_300)


def test_y_counts_bytes_on_a_port_shaped_in_bytes():
    """Tofino and SUME serve bits: the same traffic is its bytes."""
    loop, driver, clock, records = make_loop(driver=FakeDriver(S1.ports, queue_rate_unit="bytes"))
    loop.step()
    driver.add(PORT, nbytes=10 * 1000 + 5 * 60, packets=15)
    clock.t += 0.01
    [rec] = loop.step()
    assert rec["y_unit"] == "bytes" and rec["slot_bytes"] is None
    assert rec["y_bps"] == rec["y_bytes_bps"] == pytest.approx(10_300 * 8 / 0.01)


def test_a_port_without_a_packet_rate_counts_bytes_even_on_bmv2():
    """Slots exist only where the queue is shaped in packets per second."""
    topo = build_topology({"kind": "dumbbell", "pairs": 1, "bottleneck_mbps": 12, "data_frame_bytes": 1000})
    s1 = topo.switch("s1")
    port = s1.rcp_ports[0]
    port.queue_rate_pps = None
    driver = FakeDriver(s1.ports, queue_rate_unit="packets")
    loop = ControlLoop(s1, topo.routes("s1"), driver, RcpParams(queue_packet_bytes=1000), clock=Clock())
    loop.resync()
    loop.step()
    driver.add(port.number, nbytes=600, packets=10)
    loop.clock.t += 0.01
    [rec] = loop.step()
    assert rec["y_unit"] == "bytes" and rec["y_bps"] == pytest.approx(600 * 8 / 0.01)


def test_slots_follow_a_bandwidth_change():
    """set_bottleneck changes the packet rate and C together; a slot stays one data frame."""
    loop, driver, clock, _ = make_loop(driver=FakeDriver(S1.ports, queue_rate_unit="packets"))
    loop.step()
    S1.ports[PORT].queue_rate_pps = 750
    try:
        loop.set_capacity(PORT, 750 * 1000 * 8.0)
        driver.add(PORT, nbytes=600, packets=10)
        clock.t += 0.01
        [rec] = loop.step()
    finally:
        S1.ports[PORT].queue_rate_pps = 1500
    assert rec["slot_bytes"] == 1000 and rec["y_bps"] == pytest.approx(10 * 1000 * 8 / 0.01)


def test_counter_going_backwards_is_a_restart_not_a_delta():
    loop, driver, clock, _ = make_loop()
    driver.add(PORT, nbytes=10**6)
    loop.step()
    driver.restart()
    clock.t += 0.01
    with pytest.raises(CounterWentBackwards):
        loop.step()


def test_run_recovers_from_restart_and_connection_loss():
    driver = FakeDriver(S1.ports)
    loop = ControlLoop(S1, TOPO.routes("s1"), driver, RcpParams(T_max_s=0.002))
    stop = threading.Event()
    thread = threading.Thread(target=loop.run, args=(stop, (0.01, 0.05)))
    thread.start()
    try:
        _wait_for(lambda: len(driver.rate_writes) > 5)
        R_before = loop.ports[PORT].R_bps
        driver.add(PORT, nbytes=10**7)
        _wait_for(lambda: driver.counters[PORT].input_bytes == 10**7 and len(driver.rate_writes) > 10)
        driver.up = False                      # switch dies ...
        driver.restart()
        time.sleep(0.1)
        connects = driver.connects
        driver.up = True                       # ... and comes back empty
        _wait_for(lambda: driver.connects > connects and driver.routes and driver.rates)
        _wait_for(lambda: len(driver.rate_writes) > 20)
    finally:
        stop.set()
        thread.join(2)
    assert not thread.is_alive()
    assert driver.queues[PORT] == (1500, 64)
    assert all(0 < kbps <= C / 1000 for w in driver.rate_writes for cell, kbps in w.items()
               if cell != dp.UNCLASSIFIED_CELL)
    assert R_before > 0


def test_bad_configuration_fails_at_start():
    with pytest.raises(TopologyError, match="no switch 's9'"):
        TOPO.switch("s9")
    h_only = build_topology({"kind": "dumbbell", "pairs": 1, "bottleneck_mbps": 10})
    s1 = h_only.switch("s1")
    s1.rcp_ports[0].capacity_bps = 0
    with pytest.raises(ValueError, match="capacity must be > 0"):
        ControlLoop(s1, [], FakeDriver(s1.ports))
    s1.rcp_ports[0].capacity_bps = None
    with pytest.raises(ValueError, match="no RCP port"):
        ControlLoop(s1, [], FakeDriver(s1.ports))
    with pytest.raises(ValueError, match="alpha"):
        RcpParams(alpha=0)


def test_set_capacity_moves_the_clamp():
    loop, driver, clock, _ = make_loop(RcpParams(R_init_fraction=1.0))
    loop.set_capacity(PORT, C / 2)
    assert loop.ports[PORT].R_bps == C / 2
    with pytest.raises(ValueError):
        loop.set_capacity(99, C)


def _wait_for(cond):
    wait_for(cond, 5.0, "condition not met in time", poll_s=0.005)


def test_ns2_estimator_keeps_d0_near_the_larger_rtts_and_reuses_the_last_sample():
    loop, driver, clock, _ = make_loop(RcpParams(queue_packet_bytes=1000, d0_estimator="ns2", d0_init_s=0.1))
    loop.step()
    driver.add(PORT, rtt_us=200_000, samples=1)          # a longer RTT: d0 rises with gain T/d0
    clock.t += 0.01
    [up] = loop.step()
    assert up["d0_s"] == pytest.approx(0.1 + (0.01 / 0.1) * 0.1)
    driver.add(PORT, rtt_us=20_000, samples=1)           # a shorter one: it falls with (R/C)(rtt/d0)(T/d0)
    clock.t += 0.01
    [down] = loop.step()
    assert up["d0_s"] - down["d0_s"] < 0.001 * (up["d0_s"] - 0.02)
    clock.t += 0.01
    [none] = loop.step()                                  # no sample: rcp.cc moves on towards the last one
    assert none["d0_s"] < down["d0_s"] and none["rtt_samples"] == 0


def test_each_port_is_updated_every_its_own_T():
    """T = min(T_max, d0) per port, as ns-2 keeps one per queue; the loop ticks at the shortest."""
    short, long_ = SwitchPort(1, "a", "00:00:00:00:00:01", capacity_bps=C), SwitchPort(2, "b", "00:00:00:00:00:02",
                                                                                          capacity_bps=C)
    switch = Switch("sx", 9999, {1: short, 2: long_})
    driver, clock = FakeDriver(switch.ports), Clock()
    loop = ControlLoop(switch, [], driver, RcpParams(T_max_s=0.05, d0_init_s=0.02), clock=clock)
    loop.ports[2].d0_s = 0.04
    loop.resync()
    assert loop.period_s == pytest.approx(0.02)
    loop.step()
    updated = []
    for _ in range(4):
        clock.t += 0.02
        updated.append(sorted(r["port"] for r in loop.step()))
    assert updated == [[1], [1, 2], [1], [1, 2]]


def test_the_schedule_starts_at_a_random_phase_within_two_periods():
    loop, *_ = make_loop()
    delays = {round(loop._first_delay(), 6) for _ in range(50)}
    assert len(delays) > 40 and all(0 <= d <= 2 * loop.period_s for d in delays)
    assert make_loop(RcpParams(first_jitter=0.0))[0]._first_delay() == pytest.approx(loop.period_s)


def test_unknown_d0_estimator_is_refused():
    with pytest.raises(ValueError, match="d0_estimator must be one of ewma, ns2"):
        RcpParams(d0_estimator="kalman")


def _full_interval_with(loop, driver, clock, params, **counts):
    """One interval after the first: the link full (y = C) and the feedforward's `counts` (FakeDriver.add).
    The record, what the law alone gives (gains 0.4 / 0.4, d0 0.1 s) and R before it."""
    from p4rcp.rcp_law import rcp_rate
    loop.step()
    R0 = loop.ports[PORT].R_bps
    y_bytes = int(C / 8 * 0.01)
    driver.add(PORT, nbytes=y_bytes, packets=y_bytes // 1000, **counts)
    clock.t += 0.01
    [rec] = loop.step()
    law = rcp_rate(R0, 0.01, 0.1, C, rec["y_bps"], 0, alpha=0.4, beta=0.4, R_min=params.R_min_bps)
    return rec, law, R0


def test_the_feedforward_scales_R_by_the_flows_weighed_by_their_committed_sizes():
    from p4rcp.rcp_law import rcp_feedforward, rcp_grant_packets
    params = RcpParams(queue_packet_bytes=1000)
    loop, driver, clock, _ = make_loop(params)
    for port in S1.ports:
        grants = driver.syn_grants[port]
        assert (grants.long_kbps, grants.short_kbps) == ((dp.RATE_NONE,) * dp.SYN_RATES, dp.RATE_NONE), (
            "no SYN cap before the first interval, on any port of the switch")
    ps = loop.ports[PORT]
    P = rcp_grant_packets(ps.R_bps, ps.d0_s, 8000)
    assert (driver.syn_grants[PORT].grant_packets, driver.syn_grants[PORT].long_packets) == (P, P // 2)
    # two whole flows arrive, flows worth half of one end
    rec, law, R0 = _full_interval_with(loop, driver, clock, params, long_arrivals=2, committed_arrivals=2 * P,
                                       committed_departures=P // 2)
    a, l = 2.0, (P // 2) / P
    assert (rec["arrivals"], rec["departures"], rec["grant_packets"]) == (pytest.approx(a), pytest.approx(l), P)
    assert rec["R_bps"] == pytest.approx(rcp_feedforward(law, R0, C, a, l, R_min=params.R_min_bps))


def test_long_syns_take_the_next_stamps_of_the_sequence_over_the_last_round_trip():
    from p4rcp.rcp_law import rcp_syn_rates
    params = RcpParams(queue_packet_bytes=1000, d0_init_s=0.1)
    loop, driver, clock, _ = make_loop(params)
    loop.step()
    first = None
    for k in range(3):
        driver.add(PORT, nbytes=int(C / 8 * 0.01), packets=int(C / 8 * 0.01) // 1000, long_arrivals=2)
        clock.t += 0.01
        [rec] = loop.step()
        grants = driver.syn_grants[PORT]
        assert grants.base == 2 * (k + 1), "the next interval ranks its long SYNs from the count read"
        if first is None:
            first = rec
            sequence = [round(S / 1000) for S in rcp_syn_rates(rec["R_bps"], C, rec["y_bps"], 4 + dp.SYN_RATES)]
        else:
            # the window still starts at the first interval (d0 = 0.1 s): the 2k SYNs since took 2k stamps
            assert grants.long_kbps == tuple(sequence[2 * k:2 * k + dp.SYN_RATES])
        assert grants.short_kbps == round(rcp_syn_rates(rec["R_bps"], C, rec["y_bps"], 1)[0] / 1000)
    assert list(grants.long_kbps) == sorted(grants.long_kbps, reverse=True)


def test_without_the_feedforward_the_counts_are_recorded_and_nothing_else():
    loop, driver, clock, _ = make_loop(RcpParams(feedforward=False))
    loop.step()
    R0 = loop.ports[PORT].R_bps
    P = driver.syn_grants[PORT].grant_packets
    driver.add(PORT, long_arrivals=5, committed_arrivals=5 * P, committed_departures=3 * P)
    clock.t += 0.01
    [rec] = loop.step()
    assert (rec["arrivals"], rec["departures"], rec["syn_rates_bps"]) == (5, 3, None)
    assert driver.syn_grant_writes == [driver.syn_grant_writes[0]], "written at resync only"
    assert rec["R_bps"] > R0


def test_a_controller_started_against_a_running_switch_resumes_its_R_and_changes_no_entry(caplog):
    """The switch a killed controller left keeps its stamps, tables and counts; the next controller takes R
    from the stamps, reconciles the tables without touching them, and says so."""
    first, driver, clock, _ = make_loop()
    driver.add(PORT, nbytes=10**6, packets=1000)
    first.step()
    driver.write_rates_kbps({dp.rate_cell(PORT): 5432})      # the R the first controller had reached
    writes = len(driver.rate_writes)
    with caplog.at_level("INFO", logger="control_plane"):
        loop = ControlLoop(S1, TOPO.routes("s1"), driver, RcpParams(queue_packet_bytes=1000), clock=clock)
        loop.resync()
    assert loop.ports[PORT].R_bps == 5432e3
    assert driver.rate_writes[writes:][-1][dp.rate_cell(PORT)] == 5432, "the stamp rewritten as it was"
    assert f"resumed the switch's state: port {PORT} R 5.432 Mb/s (routes unchanged, weight classes unchanged)" \
        in caplog.text


def test_a_resumed_port_takes_its_first_intervals_mean_rtt_as_d0():
    """d0 is not in the switch: the first interval's mean RTT replaces d0_init instead of being averaged in."""
    _, driver, clock, _ = make_loop()
    driver.write_rates_kbps({dp.rate_cell(PORT): 5000})
    loop = ControlLoop(S1, TOPO.routes("s1"), driver, RcpParams(queue_packet_bytes=1000), clock=clock)
    loop.resync()
    loop.step()
    driver.add(PORT, nbytes=10_000, packets=10, rtt_us=10 * 40_000, samples=10)
    clock.t += 0.01
    [rec] = loop.step()
    assert rec["d0_s"] == pytest.approx(0.040)
    driver.add(PORT, nbytes=10_000, packets=10, rtt_us=10 * 60_000, samples=10)
    clock.t += 0.01
    [rec] = loop.step()
    assert rec["d0_s"] == pytest.approx(0.040 + 0.1 * 0.020), "then the moving average as usual"


def test_a_switch_without_stamps_gets_R_init_and_a_running_loop_rewrites_its_own_R_after_a_switch_restart():
    loop, driver, clock, _ = make_loop()
    assert loop.ports[PORT].R_bps == 0.05 * C                # a fresh switch: nothing to resume
    loop.ports[PORT].R_bps = 3e6
    driver.restart()
    driver.write_rates_kbps({dp.rate_cell(PORT): 9999})       # another tool wrote it meanwhile
    loop.resync()
    assert loop.ports[PORT].R_bps == 3e6 and driver.rate(PORT) == 3000


def test_a_resumed_switch_gets_the_grants_of_its_resumed_r_and_no_left_over_cap():
    from p4rcp.rcp_law import rcp_grant_packets
    _, driver, clock, _ = make_loop(RcpParams(queue_packet_bytes=1000))
    driver.write_rates_kbps({dp.rate_cell(PORT): 5000})
    driver.write_syn_grants({PORT: dp.SynGrants(7, (4000, 2000, 1000, 900, 800, 700, 600, 500), 300, 9, 4)})
    loop = ControlLoop(S1, TOPO.routes("s1"), driver, RcpParams(queue_packet_bytes=1000), clock=clock)
    loop.resync()
    P = rcp_grant_packets(5e6, loop.ports[PORT].d0_s, 8000)
    assert loop.ports[PORT].R_bps == 5e6
    assert driver.syn_grants[PORT] == dp.SynGrants(0, (dp.RATE_NONE,) * dp.SYN_RATES, dp.RATE_NONE, P, P // 2)
    # without the feedforward no cap either, and every size counted whole
    ControlLoop(S1, TOPO.routes("s1"), driver, RcpParams(queue_packet_bytes=1000, feedforward=False),
                clock=clock).resync()
    assert driver.syn_grants[PORT] == dp.SynGrants.none()


def test_rate_of_stamps_inverts_the_weighted_stamps():
    from control_plane.loop import rate_of_stamps
    from p4rcp.rcp_law import stamp_rate
    weights = (1.0, 0.5, 0.25)
    for R in (20e3, 1e6, 0.7 * C, C, 2.5 * C, 4 * C):
        stamps = [round(stamp_rate(R, w, C) / 1000) for w in weights]
        assert rate_of_stamps(stamps, weights, C, gamma=1.0, R_min_bps=10e3) == pytest.approx(R, abs=2e3)
    assert rate_of_stamps([dp.RATE_NONE], (1.0,), C, gamma=1.0, R_min_bps=10e3) is None
    assert rate_of_stamps([0], (1.0,), C, gamma=1.0, R_min_bps=10e3) is None
    assert rate_of_stamps([5000, dp.RATE_NONE], (1.0, 0.5), C, gamma=1.0, R_min_bps=10e3) is None
    # a stamp above the port's clamp (the capacity changed since): clamped
    assert rate_of_stamps([10 * round(C / 1000)], (1.0,), C, gamma=1.0, R_min_bps=10e3) == C


@pytest.mark.parametrize("floor", [True, False])
def test_a_capacity_drop_brings_R_down_to_the_new_link_not_to_its_floor(floor):
    """One flow at C; the link falls to C/10. For a round trip the flow still sends at C: the law alone answers
    that tenfold load every interval and takes R to R_min; the overload floor holds it at the rate at which the
    flow that sent it fits the new link and drains the queue."""
    # q as read (queue_reads 1): the floor is the subject here, not the persistent queue
    params = RcpParams(queue_packet_bytes=1000, R_init_fraction=1.0, d0_init_s=0.04, overload_floor=floor,
                       feedforward=False, queue_reads=1)
    loop, driver, clock, _ = make_loop(params)
    loop.step()
    for _ in range(5):                             # the flow fills the link at R = C
        driver.add(PORT, nbytes=int(C / 8 * 0.01), qdepth=0)
        clock.t += 0.01
        loop.step()
    assert loop.ports[PORT].R_bps == C
    loop.set_capacity(PORT, C / 10)
    queue = 3                                      # packets: 3 kB, 20 ms of the new link
    for _ in range(4):                             # the round trip before the flow hears the new R
        driver.add(PORT, nbytes=int(C / 8 * 0.01), qdepth=queue)
        clock.t += 0.01
        loop.step()
    R = loop.ports[PORT].R_bps
    if floor:
        d0 = loop.ports[PORT].d0_s
        assert R == pytest.approx(C * (C / 10 - queue * 1000 * 8 / d0) / C, rel=1e-6)
    else:
        assert R == params.R_min_bps


def test_tcp_coupling_writes_each_intervals_drop_probability_from_R_and_d0():
    from p4rcp.rcp_law import classic_drop_probability
    loop, driver, clock, _ = make_loop()
    assert driver.classic_drop_writes == [{PORT: 0.0}]          # resync: no drop before the first interval
    loop.step()
    driver.add(PORT, nbytes=15_000, packets=15)
    clock.t += 0.01
    [rec] = loop.step()
    p = classic_drop_probability(rec["R_bps"], rec["d0_s"], 1000 * 8, c=RcpParams().tcp_response)
    assert driver.classic_drops == {PORT: pytest.approx(p)} and rec["classic_drop_p"] == pytest.approx(p)
    assert 0 < p < 1


def test_without_tcp_coupling_the_switch_drops_no_tcp_and_the_record_says_none():
    loop, driver, clock, _ = make_loop(RcpParams(queue_packet_bytes=1000, tcp_coupling=False))
    loop.step()
    driver.add(PORT, nbytes=15_000, packets=15)
    clock.t += 0.01
    [rec] = loop.step()
    assert driver.classic_drop_writes == [{PORT: 0.0}] and rec["classic_drop_p"] is None


def test_a_program_without_the_classic_drop_is_run_without_it_and_says_so(caplog):
    driver = FakeDriver(S1.ports)
    driver.features = dp.ALL_FEATURES - {dp.FEATURE_CLASSIC_DROP}
    loop, driver, clock, _ = make_loop(driver=driver)
    assert "not coupled" in caplog.text
    loop.step()
    driver.add(PORT, nbytes=15_000, packets=15)
    clock.t += 0.01
    [rec] = loop.step()
    assert driver.classic_drop_writes == [] and rec["classic_drop_p"] is None

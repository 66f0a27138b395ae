"""The stall detector against hand-made control records (p4rcp/stalls.py)."""

import pytest

from p4rcp.stalls import PortLimits, find_stalls

C_PPS = 1160.0
E2E = PortLimits(C_pps=C_PPS, queue_pkts=64, access_speedup=2.0)
LIMITS = {("s1", 3): E2E}


def steady(n=200, share=0.9, start=1000.0, T=0.01, answer_s=0.001, port=3, **changes):
    """n intervals of a port carrying `share` of its capacity, read every T; changes[i] = {field: value} of
    interval i (times follow the periods)."""
    records, t = [], start
    for i in range(n):
        r = {"switch": "s1", "port": port, "period_s": T, "answer_s": answer_s,
             "input_packets": round(share * C_PPS * T * (1 + i % 2) / 1.5), **changes.get(f"i{i}", {})}
        t += r["period_s"]
        records.append(dict(r, time=t))
    return records


def test_the_threshold_is_half_the_queue_at_the_senders_rate_and_never_below_a_period():
    assert E2E.threshold_s == pytest.approx(64 / (2 * 2 * 1160))           # 13.8 ms
    assert E2E.threshold_s == pytest.approx(0.0138, abs=1e-4)
    fct_short = PortLimits(C_pps=15e6 / 8 / 1078, queue_pkts=348, access_speedup=2.0)
    assert fct_short.threshold_s == pytest.approx(0.050, abs=1e-3)
    assert PortLimits(C_pps=1e5, queue_pkts=64).threshold_s == 0.010   # a fast port: one loop period


def test_a_steady_run_has_no_stall():
    assert find_stalls(steady(), LIMITS) == []


def test_a_read_answered_late_while_the_port_carries_traffic_is_a_stall_named_with_its_numbers():
    records = steady(i100={"answer_s": 0.028, "period_s": 0.038, "input_packets": 40})
    [stall] = find_stalls(records, LIMITS)
    assert stall.kind == "late answer" and stall.switch == "s1" and stall.port == 3
    assert "after 28 ms" in stall.what and "13.8 ms" in stall.what and "64-packet queue" in stall.what
    assert stall.describe(1000.0).startswith("s1 stalled 1.0 s into the run: it answered a control read after 28 ms")


def test_a_late_answer_under_the_threshold_or_on_an_idle_port_is_not_a_stall():
    records = steady()
    records[100] = dict(records[100], answer_s=0.013)
    assert find_stalls(records, LIMITS) == []
    idle = [dict(r, input_packets=0) for r in steady()]
    idle[100] = dict(idle[100], answer_s=0.2)
    assert find_stalls(idle, LIMITS) == []


def test_a_gap_then_a_burst_is_a_stall_even_when_every_read_was_answered_at_once():
    records = steady(i100={"input_packets": 0, "period_s": 0.03}, i101={"input_packets": 60})
    [stall] = find_stalls(records, LIMITS)
    assert stall.kind == "gap and burst"
    assert "stopped for 30 ms" in stall.what and "then 60 frames arrived in 10 ms" in stall.what


def test_a_burst_without_a_gap_is_traffic_not_a_stall():
    """A flash crowd: new flows at R while the others still send; no interval before it went quiet."""
    records = steady()
    for i in range(100, 105):
        records[i] = dict(records[i], input_packets=60)
    assert find_stalls(records, LIMITS) == []


def test_a_gap_followed_by_normal_input_is_not_a_stall():
    """Flows that end: the input stops and nothing bunched up behind the gap."""
    records = steady()
    records[100] = dict(records[100], input_packets=0)
    assert find_stalls(records, LIMITS) == []


def test_signs_on_several_ports_or_both_signs_of_one_read_are_one_stall():
    changes = {"i100": {"answer_s": 0.030, "input_packets": 0}, "i101": {"input_packets": 60}}
    records, other = steady(**changes), steady(port=4, **changes)
    stalls = find_stalls(records + other, {("s1", 3): E2E, ("s1", 4): E2E})
    assert len(stalls) == 1, stalls


def test_ports_without_limits_are_not_looked_at():
    records = steady()
    records[100] = dict(records[100], answer_s=0.5)
    assert find_stalls(records, {("s2", 3): E2E}) == []

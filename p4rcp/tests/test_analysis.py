import pytest

from p4rcp.analysis import (Spread, bin_fct, fct_ps, jain_index, join_receiver_times, log_bins, max_min_shares,
                           measured_load, percentile, ps_sojourns, service_bytes, time_to_share,
                           utilisation)


def test_fct_ps_hand_computed():
    # 1.5 * 0.04 + 25000 * 8 / (10e6 * 0.3) = 0.06 + 0.0666...
    assert fct_ps(25_000, 10e6, 0.7, 0.04) == pytest.approx(0.06 + 200_000 / 3e6)
    assert fct_ps(0, 10e6, 0.0, 0.1) == pytest.approx(0.15)
    with pytest.raises(ValueError):
        fct_ps(1, 10e6, 1.0, 0.1)
    with pytest.raises(ValueError):
        fct_ps(1, 0, 0.5, 0.1)


def test_processor_sharing_of_given_arrivals_hand_computed():
    assert ps_sojourns([(0.0, 5.0)], 1.0) == [5.0]
    assert ps_sojourns([(0.0, 1.0), (0.0, 1.0)], 1.0) == [2.0, 2.0]
    # the first alone for 1 s (1 bit left), then both at 1/2: each needs 2 s more
    assert ps_sojourns([(1.0, 1.0), (0.0, 2.0)], 1.0) == pytest.approx([2.0, 3.0])
    # one that arrives after the link emptied waits for nobody
    assert ps_sojourns([(0.0, 1.0), (5.0, 2.0)], 2.0) == pytest.approx([0.5, 1.0])
    with pytest.raises(ValueError):
        ps_sojourns([(0.0, 1.0)], 0.0)


def test_processor_sharing_of_many_poisson_arrivals_approaches_its_mean_over_all_draws():
    """M/M/1-PS at load 0.5: the mean sojourn tends to E[S] / (C (1 - rho)), FCT_PS's second term."""
    import random
    rng = random.Random(7)
    C, mean_bits, rho = 1e6, 1e5, 0.5
    t, arrivals = 0.0, []
    for _ in range(20_000):
        t += rng.expovariate(rho * C / mean_bits)
        arrivals.append((t, rng.expovariate(1 / mean_bits)))
    mean = sum(ps_sojourns(arrivals, C)) / len(arrivals)
    assert mean == pytest.approx(mean_bits / (C * (1 - rho)), rel=0.05)


def test_jain_index():
    assert jain_index([5, 5, 5, 5]) == pytest.approx(1.0)
    assert jain_index([10, 0, 0, 0]) == pytest.approx(0.25)
    assert jain_index([1, 3]) == pytest.approx(16 / 20)
    with pytest.raises(ValueError):
        jain_index([])


def test_log_bins_cover_sizes():
    edges = log_bins([1000, 25_000, 999_999], per_decade=1)
    assert edges == pytest.approx([1e3, 1e4, 1e5, 1e6])
    assert log_bins([]) == []


def test_bin_fct_groups_and_ratios():
    flows = [{"size_bytes": 1000, "fct_s": 0.2, "ps_ratio": 1.0}, {"size_bytes": 5000, "fct_s": 0.4, "ps_ratio": 2.0},
             {"size_bytes": 20_000, "fct_s": 1.0, "ps_ratio": 1.5}, {"size_bytes": 100_000, "fct_s": 3.0, "ps_ratio": 1.1}]
    rows = bin_fct(flows, [1e3, 1e4, 1e5])
    assert [r["flows"] for r in rows] == [2, 2]
    assert rows[0]["mean_fct_s"] == pytest.approx(0.3) and rows[0]["max_fct_s"] == 0.4
    assert rows[0]["mean_ratio_ps"] == pytest.approx(1.5)
    assert rows[1]["hi"] == 1e5 and rows[1]["max_fct_s"] == 3.0
    by_packets = [dict(f, packets=f["size_bytes"] // 1000) for f in flows]     # 1, 5, 20, 100 packets
    assert [r["flows"] for r in bin_fct(by_packets, [1, 10, 100], key="packets")] == [2, 2]


def test_percentile_nearest_rank():
    assert percentile([3, 1, 2, 4], 50) == 2
    assert percentile([3, 1, 2, 4], 95) == 4
    assert percentile([7], 0) == 7


def _step(before: float, after: float, change_at: float, until: float, dt: float = 0.1):
    return [(round(i * dt, 6), before if i * dt < change_at else after) for i in range(int(until / dt))]


def test_time_to_share_is_when_the_rate_arrives_and_stays():
    # the event at 10 s; the flow moves from 8 to 4 at 11 s; the new share is 4
    samples = _step(8.0, 4.0, 11.0, 20.0)
    assert time_to_share(samples, 10.0, 4.0, window_s=0.1) == pytest.approx(1.0)


def test_time_to_share_ignores_a_passing_visit():
    samples = _step(8.0, 4.0, 11.0, 20.0)
    samples = [(t, 4.0 if 10.2 <= t < 10.5 else v) for t, v in samples]   # 0.3 s at the share, then back
    assert time_to_share(samples, 10.0, 4.0, window_s=0.1) == pytest.approx(1.0)


def test_time_to_share_none_when_never_settled_before_the_next_event():
    samples = _step(8.0, 4.0, 15.0, 20.0)
    assert time_to_share(samples, 10.0, 4.0, until_s=14.0) is None
    assert time_to_share(samples, 10.0, 4.0) == pytest.approx(5.0, abs=0.5)


def test_time_to_share_smooths_noise_within_its_window():
    samples = [(i / 10, 4.0 + (1.5 if i % 2 else -1.5)) for i in range(100, 200)]   # 2.5 / 5.5 alternating
    assert time_to_share(samples, 10.0, 4.0, window_s=0.5) == pytest.approx(0.1, abs=0.11)
    assert time_to_share(samples, 10.0, 4.0, window_s=0.05) is None


def test_time_to_share_rejects_a_zero_share():
    with pytest.raises(ValueError):
        time_to_share([(0.0, 1.0)], 0.0, 0.0)


def test_receiver_fct_joins_on_sender_address_and_flow_id():
    flows = [{"host": "h1", "flow_id": 7, "start_unix_s": 100.0, "fct_s": 0.9},
             {"host": "h2", "flow_id": 7, "start_unix_s": 100.0, "fct_s": 0.9},     # same id, other sender
             {"host": "h1", "flow_id": 8, "start_unix_s": 101.0, "fct_s": None}]
    received = [{"peer": "10.0.0.2:40000", "flow_id": 7, "last_byte_unix_s": 100.5},
                {"peer": "10.0.0.1:39999", "flow_id": 7, "last_byte_unix_s": 100.7},
                {"peer": "10.0.0.1:39999", "flow_id": 8, "last_byte_unix_s": None}]
    join_receiver_times(flows, received, {"h1": "10.0.0.1", "h2": "10.0.0.2"})
    assert [f["fct_recv_s"] for f in flows] == [pytest.approx(0.7), pytest.approx(0.5), None]


def test_load_and_bound_count_link_slots():
    # 1 byte and 1000 bytes both take one 1078-byte slot; 1001 bytes take two
    assert [service_bytes(s, 1000, 1078, "slots") for s in (1, 1000, 1001)] == [1078, 1078, 2156]
    # 3 flows of 1, 25 and 100 packets + SYN + FIN each = 132 slots, over 1000 slots/s for 0.2 s
    assert measured_load([1, 25_000, 100_000], 1000, 1078, 1000 * 1078 * 8, 0.2, "slots") == pytest.approx(132 / 200)


def test_load_and_bound_count_bytes_on_a_link_shaped_in_bits():
    # each DATA packet its data and 78 bytes of headers
    assert [service_bytes(s, 1000, 1078, "bytes") for s in (1, 1000, 1001)] == [79, 1078, 1157]
    # the same flows: their data, 126 packets' headers, and a SYN (82) and a FIN (78) each
    frames = 125_001 + 126 * 78 + 3 * (82 + 78)
    assert measured_load([1, 25_000, 100_000], 1000, 1078, 1e6, 2.0, "bytes") == pytest.approx(frames * 8 / 2e6)
    with pytest.raises(ValueError, match="load unit"):
        service_bytes(1, 1000, 1078, "packets")


def test_max_min_shares_of_a_parking_lot():
    # links 1..3 of 12, 6 and 10 Mb/s; A crosses all, B link 1, C links 2-3, D link 3
    capacity = {1: 12.0, 2: 6.0, 3: 10.0}
    paths = {"A": [1, 2, 3], "B": [1], "C": [2, 3], "D": [3]}
    assert max_min_shares(capacity, paths) == pytest.approx({"A": 3.0, "B": 9.0, "C": 3.0, "D": 4.0})
    # one link: an even split
    assert max_min_shares({1: 9.0}, {"x": [1], "y": [1], "z": [1]}) == pytest.approx({"x": 3, "y": 3, "z": 3})
    with pytest.raises(ValueError, match="no capacity"):
        max_min_shares({1: 1.0}, {"x": [2]})


def test_spread_over_seeds():
    s = Spread.of([1.2, 1.4, None, 1.0])
    assert (s.mean, s.lo, s.hi, s.n) == (pytest.approx(1.2), 1.0, 1.4, 3)
    assert s.format(".2f") == "1.20 (1.00-1.40)"
    assert Spread.of([0.5]).format(".2f") == "0.50"
    assert Spread.of([None]) is None


def test_utilisation_lets_the_queue_carry_a_burst_into_the_next_intervals():
    C = 10e6
    # one second: 50 intervals at 2 C, 50 at 0.2 C (a queue drains the bursts), then a second with no traffic
    burst = [{"time": 100 + i / 100, "y_bps": (2 if i < 50 else 0.2) * C, "C_bps": C, "period_s": 0.01}
             for i in range(100)]
    idle = [{"time": 101 + i / 100, "y_bps": 0.0, "C_bps": C, "period_s": 0.01} for i in range(100)]
    assert utilisation(burst + idle) == pytest.approx(1.0)          # 1.1 C offered over the second: full
    # per 10 ms interval, clipped, the same second would say 0.6
    assert utilisation(burst, bin_s=0.01) == pytest.approx(0.6)
    assert utilisation(idle) is None


def test_weighted_max_min_shares_split_a_link_by_weight():
    shares = max_min_shares({"l": 14.0}, {"a": ["l"], "b": ["l"], "c": ["l"]}, {"a": 1.0, "b": 0.5, "c": 0.25})
    assert shares == {"a": 8.0, "b": 4.0, "c": 2.0}
    # a weight-1 flow limited elsewhere leaves its unused share to the others, by their weights
    capped = max_min_shares({"l": 14.0, "m": 2.0}, {"a": ["l", "m"], "b": ["l"], "c": ["l"]},
                            {"b": 0.5, "c": 0.25})
    assert capped["a"] == 2.0 and capped["b"] == pytest.approx(8.0) and capped["c"] == pytest.approx(4.0)

import pytest

from topo.analysis import bin_fct, fct_ps, jain_index, log_bins, percentile, time_to_share


def test_fct_ps_hand_computed():
    # 1.5 * 0.04 + 25000 * 8 / (10e6 * 0.3) = 0.06 + 0.0666...
    assert fct_ps(25_000, 10e6, 0.7, 0.04) == pytest.approx(0.06 + 200_000 / 3e6)
    assert fct_ps(0, 10e6, 0.0, 0.1) == pytest.approx(0.15)
    with pytest.raises(ValueError):
        fct_ps(1, 10e6, 1.0, 0.1)
    with pytest.raises(ValueError):
        fct_ps(1, 0, 0.5, 0.1)


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
    flows = [{"size_bytes": 1000, "fct_s": 0.2}, {"size_bytes": 5000, "fct_s": 0.4},
             {"size_bytes": 20_000, "fct_s": 1.0}, {"size_bytes": 100_000, "fct_s": 3.0}]
    rows = bin_fct(flows, [1e3, 1e4, 1e5], C_bps=8e6, rho=0.5, rtt_s=0.1)
    assert [r["flows"] for r in rows] == [2, 2]
    assert rows[0]["mean_fct_s"] == pytest.approx(0.3) and rows[0]["max_fct_s"] == 0.4
    # FCT_PS(1000) = 0.15 + 8000/4e6 = 0.152; FCT_PS(5000) = 0.15 + 0.01 = 0.16
    assert rows[0]["mean_ratio_ps"] == pytest.approx((0.2 / 0.152 + 0.4 / 0.16) / 2)
    assert rows[1]["hi"] == 1e5 and rows[1]["max_fct_s"] == 3.0


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

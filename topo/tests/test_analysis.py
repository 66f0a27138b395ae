import pytest

from topo.analysis import bin_fct, fct_ps, jain_index, log_bins, percentile


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

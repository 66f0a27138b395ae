import math

import pytest

from p4rcp.rcp_law import (d0_ewma, d0_ns2, persistent_queue, rcp_feedforward, rcp_flow_weight, rcp_grant_packets,
                           rcp_overload_floor, rcp_rate, rcp_syn_rates, rcp_window_syn_rates, stamp_rate)

C = 10e6          # 10 Mb/s
R_MIN = 10e3
PAPER = dict(alpha=0.1, beta=1.0)     # the RCP papers' gains, used by the hand computations


def test_hand_computed_spare_capacity():
    # R = 2e6 * [1 + (0.01/0.05) * (0.1 * (10e6 - 6e6)) / 10e6] = 2e6 * 1.008
    assert rcp_rate(2e6, 0.01, 0.05, C, 6e6, 0, R_min=R_MIN, **PAPER) == pytest.approx(2.016e6)


def test_hand_computed_standing_queue():
    # q = 50 kbit: beta*q/d0 = 1e6 b/s; spare = 0.1*(10e6 - 10e6) - 1e6 = -1e6
    # R = 5e6 * [1 + 0.2 * (-1e6) / 10e6] = 5e6 * 0.98
    assert rcp_rate(5e6, 0.01, 0.05, C, 10e6, 50e3, R_min=R_MIN, **PAPER) == pytest.approx(4.9e6)


def test_hand_computed_all_parameters():
    # gamma C = 9e6; alpha (9e6 - 3e6) = 1.2e6; beta (q - q0)/d0 = 0.5*(30e3 - 10e3)/0.1 = 1e5
    # R = 1e6 * [1 + (0.02/0.1) * (1.2e6 - 1e5) / 9e6] = 1e6 * (1 + 0.2 * 1.1e6/9e6)
    R = rcp_rate(1e6, 0.02, 0.1, C, 3e6, 30e3, alpha=0.2, beta=0.5, gamma=0.9, q0=10e3, R_min=R_MIN)
    assert R == pytest.approx(1e6 * (1 + 0.2 * 1.1e6 / 9e6))


def test_equilibrium_is_a_fixed_point():
    for R in (1e5, 2.5e6, 7e6):
        assert rcp_rate(R, 0.01, 0.04, C, C, 0, R_min=R_MIN, **PAPER) == R


def test_spare_capacity_raises_and_queue_lowers():
    assert rcp_rate(1e6, 0.01, 0.04, C, 5e6, 0, R_min=R_MIN, **PAPER) > 1e6
    assert rcp_rate(1e6, 0.01, 0.04, C, C, 20e3, R_min=R_MIN, **PAPER) < 1e6
    # overload without a queue lowers it too
    assert rcp_rate(1e6, 0.01, 0.04, C, 12e6, 0, R_min=R_MIN, **PAPER) < 1e6


def test_queue_below_target_raises():
    assert rcp_rate(1e6, 0.01, 0.04, C, C, 5e3, q0=10e3, R_min=R_MIN, **PAPER) > 1e6


@pytest.mark.parametrize("R_prev,y,q", [(9.9e6, 0, 0), (20e3, 50e6, 1e6), (1e6, 0, 0), (1e3, 1e9, 1e9)])
def test_never_outside_clamp(R_prev, y, q):
    R = rcp_rate(R_prev, 0.01, 0.02, C, y, q, gamma=0.95, R_min=R_MIN, **PAPER)
    assert R_MIN <= R <= 0.95 * C


def test_saturates_at_gamma_c():
    assert rcp_rate(9.9e6, 0.01, 0.01, C, 0, 0, R_min=R_MIN, **PAPER) == C


@pytest.mark.parametrize("T,d0,C_", [(0, 0.1, C), (0.01, 0, C), (0.01, 0.1, 0), (0.01, 0.1, -1)])
def test_rejects_nonpositive_inputs(T, d0, C_):
    with pytest.raises(ValueError):
        rcp_rate(1e6, T, d0, C_, 0, 0, R_min=R_MIN, **PAPER)


def test_converges_to_fair_share_with_n_flows():
    """N greedy flows each sending at R: y = N*R; the law settles at C/N."""
    R, N = 0.05 * C, 4
    for _ in range(2000):
        R = rcp_rate(R, 0.01, 0.05, C, N * R, 0, R_min=R_MIN, **PAPER)
    assert math.isclose(R, C / N, rel_tol=1e-3)


def test_d0_ewma_moves_by_its_gain_both_ways():
    assert d0_ewma(0.1, 0.04, gain=0.5) == pytest.approx(0.07)
    assert d0_ewma(0.04, 0.1, gain=0.5) == pytest.approx(0.07)


def test_d0_of_ns2_rises_fast_and_falls_slowly():
    """rcp.cc: up with gain T/d0; down with gain (R/C)(rtt/d0)(T/d0), here 0.25 x 0.4 x 0.1."""
    assert d0_ns2(0.1, 0.2, T=0.01, R=3e6, C=12e6) == pytest.approx(0.1 + 0.1 * 0.1)
    assert d0_ns2(0.1, 0.04, T=0.01, R=3e6, C=12e6) == pytest.approx(0.1 - 0.25 * 0.4 * 0.1 * 0.06)


def test_feedforward_scales_R_by_the_flows_before_over_the_flows_after():
    # R = C/4: RCP's estimate is 4 flows; one arrives: C/5; two leave: C/2
    assert rcp_feedforward(C / 4, C / 4, C, 1, 0, R_min=R_MIN) == pytest.approx(C / 5)
    assert rcp_feedforward(C / 4, C / 4, C, 0, 2, R_min=R_MIN) == pytest.approx(C / 2)
    assert rcp_feedforward(C / 4, C / 4, C, 0, 0, R_min=R_MIN) == pytest.approx(C / 4)
    # the law's own step is kept: R(t) moved to 0.3 C, the flows to 5 from 4
    assert rcp_feedforward(0.3 * C, C / 4, C, 1, 0, R_min=R_MIN) == pytest.approx(0.3 * C * 4 / 5)


def test_feedforward_clamps_and_an_emptied_link_gets_gamma_C():
    assert rcp_feedforward(C / 2, C / 2, C, 0, 5, R_min=R_MIN) == C
    assert rcp_feedforward(C, C, C, 10_000, 0, R_min=R_MIN) == R_MIN
    assert rcp_feedforward(C / 2, C / 2, C, 0, 1, gamma=0.95, R_min=R_MIN) == pytest.approx(0.95 * C)


def test_flows_shorter_than_a_round_trip_count_for_the_share_of_it_they_last():
    # N = 4 flows at C/4; two flows of half a grant's packets arrive: one flow's worth, R to C/5
    P = 100
    a = rcp_flow_weight(50, P) + rcp_flow_weight(50, P)
    assert a == 1.0 and rcp_feedforward(C / 4, C / 4, C, a, 0, R_min=R_MIN) == pytest.approx(C / 5)
    assert rcp_flow_weight(10_000, P) == 1.0 and rcp_flow_weight(0, P) == 0.0
    with pytest.raises(ValueError):
        rcp_flow_weight(5, 0)


def test_a_grant_is_the_packets_sent_in_one_round_trip_within_the_size_field():
    assert rcp_grant_packets(8e6, 0.1, 8000) == 100          # 8 Mb/s for 100 ms in 1000-byte frames
    assert rcp_grant_packets(1.0, 0.1, 8000) == 1
    assert rcp_grant_packets(1e12, 1.0, 8000) == 0xFFFF
    with pytest.raises(ValueError):
        rcp_grant_packets(0, 0.1, 8000)


def test_the_window_sequence_continues_where_the_flows_since_its_start_left_it():
    whole = rcp_syn_rates(C, C, 0, 11)
    assert rcp_window_syn_rates(C, C, 0, 3, 8) == whole[3:]
    assert rcp_window_syn_rates(C, C, 0, 0, 8) == rcp_syn_rates(C, C, 0, 8)
    # a window's first stamps add up to about what k fair shares take, however the intervals cut them
    assert sum(rcp_window_syn_rates(C, C, 0, 0, 2)) + sum(rcp_window_syn_rates(C, C, 0, 2, 2)) == \
        pytest.approx(sum(whole[:4]))
    with pytest.raises(ValueError):
        rcp_window_syn_rates(C, C, 0, -1, 8)


def test_a_new_flow_gets_R_on_an_idle_link_and_its_share_on_a_full_one():
    assert rcp_syn_rates(C, C, 0.0, 1) == [C]
    assert rcp_syn_rates(C / 4, C, C, 1) == [pytest.approx(C / 5)]       # 4 flows at C/4, a fifth joins
    assert rcp_syn_rates(C / 2, C, 0.25 * C, 1) == [C / 2]               # room for it
    with pytest.raises(ValueError):
        rcp_syn_rates(C, C, 0.0, 0)


def test_the_new_flows_of_an_interval_share_what_their_fair_shares_leave():
    # idle link: the first takes R = C, the k-th C / k^2, where fair shares alone (C/k) add up to 2.08 C by the 4th
    assert rcp_syn_rates(C, C, 0.0, 4) == pytest.approx([C, C / 4, C / 9, C / 16])
    assert sum(rcp_syn_rates(C, C, 0.0, 8)) < 1.65 * C
    # full link, 4 flows at C/4: the second of two gets 2 F_2 - S_1 = 2 C/6 - C/5, below its fair share C/6
    S = rcp_syn_rates(C / 4, C, C, 2)
    assert S == pytest.approx([C / 5, 2 * C / 6 - C / 5])
    for R, y in [(C, 0.0), (C / 4, C), (C / 2, 0.25 * C), (C / 10, 0.7 * C)]:
        S = rcp_syn_rates(R, C, y, 8)
        fair = [R * min(1.0, C / (y + k * R)) for k in range(1, 9)]
        assert all(0 < s <= f * (1 + 1e-12) for s, f in zip(S, fair)), "at most the fair share, never 0"
        assert all(sum(S[:k]) >= k * fair[k - 1] * (1 - 1e-12) for k in range(1, 9)), "k fair shares at least"
        assert S == sorted(S, reverse=True)


def test_with_weights_R_may_rise_to_gamma_c_over_the_smallest_weight():
    # R = 9.9e6 * [1 + (0.01/0.01) * 0.1 * (10e6 - 0) / 10e6] = 10.89e6: clipped at C with weights of 1 only,
    # allowed with w_min = 1/4 (limit 40e6)
    assert rcp_rate(9.9e6, 0.01, 0.01, C, 0, 0, R_min=R_MIN, **PAPER) == C
    assert rcp_rate(9.9e6, 0.01, 0.01, C, 0, 0, R_min=R_MIN, w_min=0.25, **PAPER) == pytest.approx(10.89e6)
    assert rcp_rate(39e6, 0.01, 0.01, C, 0, 0, R_min=R_MIN, w_min=0.25, **PAPER) == 4 * C
    # gamma 0.9: the clip is gamma C / w_min = 9e6 / 0.5
    assert rcp_rate(17.9e6, 0.01, 0.01, C, 0, 0, gamma=0.9, R_min=R_MIN, w_min=0.5, **PAPER) == pytest.approx(18e6)


def test_weighted_flows_alone_fill_the_link_and_share_in_their_weights():
    """The talk's rule: N_hat = C/R becomes the sum of weights. One flow of weight 1/4 alone settles at
    R = 4C (stamp C); flows of weights 1, 1/2, 1/4 settle at R = C / 1.75, their stamps in the ratio 4:2:1."""
    R = 0.05 * C
    for _ in range(3000):
        y = stamp_rate(R, 0.25, C)
        R = rcp_rate(R, 0.01, 0.05, C, y, 0, R_min=R_MIN, w_min=0.25, **PAPER)
    assert R == pytest.approx(4 * C, rel=1e-3) and stamp_rate(R, 0.25, C) == pytest.approx(C, rel=1e-3)
    weights = (1, 0.5, 0.25)
    for _ in range(3000):
        y = sum(stamp_rate(R, w, C) for w in weights)
        R = rcp_rate(R, 0.01, 0.05, C, y, 0, R_min=R_MIN, w_min=0.25, **PAPER)
    assert R == pytest.approx(C / 1.75, rel=1e-3)
    assert [stamp_rate(R, w, C) / stamp_rate(R, 0.25, C) for w in weights] == pytest.approx([4, 2, 1])


def test_stamp_is_w_R_capped_at_gamma_c():
    assert stamp_rate(3e6, 0.5, C) == 1.5e6
    assert stamp_rate(4 * C, 1.0, C) == C                       # R above C for the small weights: capped
    assert stamp_rate(4 * C, 0.25, C) == C
    assert stamp_rate(4 * C, 0.125, C) == 0.5 * C
    assert stamp_rate(20e6, 1.0, C, gamma=0.95) == 0.95 * C
    assert stamp_rate(3e6, 1.0, C) == 3e6                       # weight 1, R <= C: the stamp is R, as without weights


@pytest.mark.parametrize("w", [0, -0.5, 1.5])
def test_weights_are_in_0_1(w):
    with pytest.raises(ValueError):
        stamp_rate(1e6, w, C)
    with pytest.raises(ValueError):
        rcp_rate(1e6, 0.01, 0.05, C, 0, 0, R_min=R_MIN, w_min=w, **PAPER)


def test_the_persistent_queue_is_the_least_of_the_reads():
    assert persistent_queue([0.0, 30.0, 30.0]) == 0.0, "a burst that drained at any read is not standing"
    assert persistent_queue([20.0, 30.0, 25.0]) == 20.0, "a standing queue counts for what it kept throughout"
    assert persistent_queue([7.0]) == 7.0, "one read: the papers' q"


def test_the_overload_floor_is_the_rate_at_which_the_senders_fit_and_drain_the_queue():
    # 10 flows heard 10 Mb/s and sent 100 Mb/s into a link of 10: they fit at 1 Mb/s, less what drains the queue
    assert rcp_overload_floor(10e6, 10e6, 100e6, 0.0, 0.1) == pytest.approx(1e6)
    assert rcp_overload_floor(10e6, 10e6, 100e6, 0.5e6 * 0.1, 0.1) == pytest.approx(0.95e6)
    assert rcp_overload_floor(10e6, 10e6, 100e6, 2e6, 0.1) == 0.0, "a queue longer than d0 at C: no floor"
    assert rcp_overload_floor(10e6, 10e6, 9e6, 0.0, 0.1) == 0.0, "no overload: the law alone"
    assert rcp_overload_floor(10e6, 10e6, 11e6, 0.0, 0.1, gamma=1.2) == 0.0, "under gamma C is no overload"


@pytest.mark.parametrize("R, d0", [(3e6, 0.04), (1e6, 0.2), (50e6, 0.08)])
def test_the_classic_drop_probability_is_the_one_at_which_reno_sends_at_R(R, d0):
    from p4rcp.rcp_law import classic_drop_probability
    s = 1078 * 8
    p = classic_drop_probability(R, d0, s)
    reno = (s / d0) * math.sqrt(3 / (2 * p))            # Mathis et al.'s response function
    assert reno == pytest.approx(R)


def test_the_classic_drop_probability_is_at_most_one_and_refuses_what_is_no_rate():
    from p4rcp.rcp_law import classic_drop_probability
    assert classic_drop_probability(1e3, 0.001, 12_000) == 0.25     # under a window of 2.4 packets: capped
    for bad in ((0, 0.04, 8000), (1e6, 0, 8000), (1e6, 0.04, 0)):
        with pytest.raises(ValueError):
            classic_drop_probability(*bad)


def test_the_classic_drop_cell_is_the_probability_in_units_of_2_to_the_minus_32():
    from p4rcp import dataplane as dp
    assert dp.classic_drop_cell(0) == dp.CLASSIC_DROP_NONE == 0
    assert dp.classic_drop_cell(0.5) == 1 << 31 and dp.classic_drop_cell(1.0) == dp.CLASSIC_DROP_MAX
    for bad in (-0.1, 1.5, math.nan):
        with pytest.raises(ValueError):
            dp.classic_drop_cell(bad)

"""The XCP coefficients' fixed point (p4rcp/dataplane.py): what the control plane writes and what the data plane
computes from it, against the paper's per-packet feedback (p4rcp/xcp_law.py)."""

import math

import pytest

from p4rcp import dataplane as dp
from p4rcp.xcp_law import xcp_packet_feedback


@pytest.mark.parametrize("xi_p", [100.0, 1e3, 3.7e7, 2e11, 4.9e14])
def test_xi_p_round_trips_within_a_part_per_million(xi_p):
    cell = dp.xcp_xi_p_cell(xi_p)
    assert 0 < cell <= dp.XCP_XI_MAX
    assert dp.xcp_xi_p_of_cell(cell) == pytest.approx(xi_p, rel=1e-6)


@pytest.mark.parametrize("xi_n", [1e-3, 0.5, 20.0, 1e4, 5e5])
def test_xi_n_round_trips_within_a_part_per_million(xi_n):
    cell = dp.xcp_xi_n_cell(xi_n)
    assert 0 < cell <= dp.XCP_XI_MAX
    assert dp.xcp_xi_n_of_cell(cell) == pytest.approx(xi_n, rel=1e-6)


def test_cells_saturate_and_refuse_what_is_no_coefficient():
    assert dp.xcp_xi_p_cell(1e16) == dp.xcp_xi_n_cell(1e7) == dp.XCP_XI_MAX
    assert dp.xcp_xi_p_cell(0.0) == dp.xcp_xi_n_cell(0.0) == 0
    for bad in (-1.0, math.nan):
        with pytest.raises(ValueError):
            dp.xcp_xi_p_cell(bad)
        with pytest.raises(ValueError):
            dp.xcp_xi_n_cell(bad)


@pytest.mark.parametrize("xi_p, xi_n", [(3e8, 20.0), (1e5, 0.0), (0.0, 400.0), (2e12, 1e3)])
@pytest.mark.parametrize("rtt_us, x_ns, s", [(20_000, 200_000, 1514), (1, 1, 64), (8_388_607, 4_294_967_295, 9000),
                                             (150_000, 12_000, 1514)])
def test_the_data_planes_feedback_is_the_papers_rounded_towards_less(xi_p, xi_n, rtt_us, x_ns, s):
    p, n = dp.xcp_router_feedback(dp.xcp_xi_p_cell(xi_p), dp.xcp_xi_n_cell(xi_n), rtt_us, x_ns, s)
    law_p, law_n = xcp_packet_feedback(xi_p, xi_n, rtt_us * 1e-6, x_ns * 1e-9, s)
    # the cells' rounding is a part in 2^64 of the unit; the rest is p's floor and n's ceiling
    assert law_p - 1 - 1e-9 * law_p <= p <= law_p + 1e-9 * law_p
    assert law_n - 1e-9 * law_n <= n <= law_n + 1 + 1e-9 * law_n


def test_p_rounds_down_n_rounds_up_and_each_stops_at_what_is_left():
    one = 1 << dp.XCP_XI_SHIFT
    assert dp.xcp_router_feedback(one + 1, 0, 1, 1, 1) == (1, 0)
    assert dp.xcp_router_feedback(0, 1, 1, 1, 1) == (0, 1)              # 2^-64 rounds up to 1
    assert dp.xcp_router_feedback(3 * one // 2, 3 * one // 2, 1, 1, 1) == (1, 2)
    assert dp.xcp_router_feedback(7 * one, 5 * one, 1, 1, 1, positive_left=3, negative_left=9) == (3, 5)
    assert dp.xcp_router_feedback(7 * one, 5 * one, 1, 1, 1, positive_left=0, negative_left=0) == (0, 0)


def test_the_control_cells_take_whole_bytes_of_the_totals_and_refuse_negative_ones():
    control = dp.XcpControl.of(3e8, 20.0, 1234.9, 0.0)
    assert control == (dp.xcp_xi_p_cell(3e8), dp.xcp_xi_n_cell(20.0), 1234, 0)
    assert dp.XcpControl.of(0, 0, 1e30, 0).positive_left == dp.XCP_LEFT_MAX
    for bad in (-1.0, math.nan):
        with pytest.raises(ValueError):
            dp.XcpControl.of(0, 0, bad, 0)

import pytest

from p4rcp.xcp_law import (ALPHA, BETA, GAMMA, xcp_average_rtt, xcp_charged_feedback, xcp_coefficients, xcp_cwnd,
                           xcp_desired_feedback, xcp_header_feedback, xcp_packet_feedback, xcp_phi, xcp_shuffle)

C = 12.5e6     # 100 Mb/s in bytes/s
S = 1500.0


def test_the_papers_gains():
    assert (ALPHA, BETA, GAMMA) == (0.4, 0.226, 0.1)


def test_hand_computed_phi_and_h():
    # d 0.1 s, y 10e6 B/s, Q 30 kB: phi = 0.4*0.1*2.5e6 - 0.226*30e3 = 100e3 - 6780 = 93220
    phi = xcp_phi(0.1, C, 10e6, 30e3)
    assert phi == pytest.approx(93_220)
    # 0.1 * y d = 100e3; h = 100e3 - 93220
    assert xcp_shuffle(phi, 0.1, 10e6) == pytest.approx(6_780)
    # overload: phi < 0, |phi| above 0.1 y d: nothing shuffled
    phi = xcp_phi(0.1, C, 20e6, 0)
    assert phi == pytest.approx(-300e3)
    assert xcp_shuffle(phi, 0.1, 20e6) == 0


def test_at_equilibrium_only_the_shuffle_remains():
    k = xcp_coefficients(0.08, C, C, 0, sum_x=0.08, sum_s=C * 0.08)
    assert k.phi == 0
    assert k.h == pytest.approx(GAMMA * C * 0.08)
    # h given back and taken in equal amounts
    assert k.xi_p * 0.08 * 0.08 == pytest.approx(k.h)
    assert k.xi_n * 0.08 * C * 0.08 == pytest.approx(k.h)


def flows_interval(d, flows):
    """The packets one interval d carries from flows (rtt, cwnd) each sending cwnd bytes per rtt in S-byte
    packets: (rtt, x, s) per packet."""
    packets = []
    for rtt, cwnd in flows:
        n = round(cwnd * d / (rtt * S))
        packets += [(rtt, rtt * S / cwnd, S)] * n
    return packets


@pytest.mark.parametrize("y", [6e6, 12.5e6, 14e6])
def test_the_packets_feedback_adds_up_to_the_aggregate(y):
    """Equal RTTs: sum p_i = h + max(phi, 0) and sum n_i = h + max(-phi, 0), so the interval's net feedback is
    phi (the efficiency controller's) and the shuffle h moves bandwidth between flows without changing it."""
    d = 0.08
    packets = flows_interval(d, [(d, 30 * S), (d, 90 * S), (d, 300 * S)])
    k = xcp_coefficients(d, C, y, 10e3, sum(x for _, x, _ in packets), sum(s for *_, s in packets))
    p = sum(k.xi_p * rtt * x for rtt, x, _ in packets)
    n = sum(k.xi_n * rtt * s for rtt, _, s in packets)
    assert p == pytest.approx(k.h + max(k.phi, 0))
    assert n == pytest.approx(k.h + max(-k.phi, 0))
    assert p - n == pytest.approx(k.phi)
    assert sum(p - n for p, n in (xcp_packet_feedback(k.xi_p, k.xi_n, rtt, x, s) for rtt, x, s in packets)) \
        == pytest.approx(k.phi)
    assert (k.positive_total, k.negative_total) == pytest.approx((p, n))


def test_an_interval_with_more_packets_than_the_last_gets_no_more_than_its_totals():
    """A flow's start: the coefficients spread the totals over the last interval's packets, and three times as
    many packets arrive. Capped by what is left, the packets get exactly the totals, the last ones nothing."""
    d = 0.04
    last = flows_interval(d, [(d, 10 * S)])
    k = xcp_coefficients(d, C, 0.1 * C, 0, sum(x for _, x, _ in last), sum(s for *_, s in last))
    positive_left, negative_left = k.positive_total, k.negative_total
    given = []
    for rtt, x, s in last * 3:
        p, n = xcp_packet_feedback(k.xi_p, k.xi_n, rtt, x, s, positive_left, negative_left)
        positive_left, negative_left = positive_left - p, negative_left - n
        given.append(p - n)
    uncapped = sum(p - n for p, n in (xcp_packet_feedback(k.xi_p, k.xi_n, rtt, x, s) for rtt, x, s in last * 3))
    assert uncapped == pytest.approx(3 * k.phi)
    assert sum(given) == pytest.approx(k.positive_total - k.negative_total) and given[-1] == 0


def test_positive_feedback_is_equal_per_flow_and_negative_in_proportion_to_the_window():
    """The fairness controller: additive increase (each flow's p over an RTT is the same whatever its window),
    multiplicative decrease (each flow's n is proportional to its window)."""
    d = 0.05
    small, large = 20 * S, 200 * S
    packets = flows_interval(d, [(d, small), (d, large)])
    k = xcp_coefficients(d, C, C, 0, sum(x for _, x, _ in packets), sum(s for *_, s in packets))
    n_small = round(small * d / (d * S))
    per_packet = [(k.xi_p * rtt * x, k.xi_n * rtt * s) for rtt, x, s in packets]
    p_small = sum(p for p, _ in per_packet[:n_small])
    p_large = sum(p for p, _ in per_packet[n_small:])
    n_small_sum = sum(n for _, n in per_packet[:n_small])
    n_large_sum = sum(n for _, n in per_packet[n_small:])
    assert p_small == pytest.approx(p_large)
    assert n_large_sum / n_small_sum == pytest.approx(large / small)


def test_the_average_rtt_counts_each_flow_once():
    # flow A: rtt 0.02, 50 packets in the interval; flow B: rtt 0.2, 5 packets; each flow's x add up to 0.1 s
    packets = [(0.02, 0.1 / 50)] * 50 + [(0.2, 0.1 / 5)] * 5
    d = xcp_average_rtt(sum(r * x for r, x in packets), sum(x for _, x in packets))
    assert d == pytest.approx((0.02 + 0.2) / 2)
    with pytest.raises(ValueError):
        xcp_average_rtt(0, 0)


def test_an_empty_interval_gives_no_feedback_and_bad_input_is_an_error():
    k = xcp_coefficients(0.1, C, 0, 0, 0, 0)
    assert (k.xi_p, k.xi_n) == (0, 0)
    assert k.phi == pytest.approx(ALPHA * 0.1 * C)
    for bad in (dict(d=0), dict(C=0), dict(y=-1), dict(Q=-1), dict(sum_x=-1)):
        args = dict(d=0.1, C=C, y=0, Q=0, sum_x=1, sum_s=1) | bad
        with pytest.raises(ValueError):
            xcp_coefficients(**args)


def test_routers_take_the_minimum_and_senders_keep_one_packet():
    assert xcp_header_feedback(500, -20) == -20
    assert xcp_header_feedback(-30, 100) == -30
    assert xcp_cwnd(10 * S, -3 * S, S) == 7 * S
    assert xcp_cwnd(2 * S, -5 * S, S) == S


def test_the_senders_request():
    # 10 packets of window, wants r rtt = 30 packets: 20 packets more over 10 packets: 2 packets each
    assert xcp_desired_feedback(30 * S / 0.1, 0.1, 10 * S, S) == pytest.approx(2 * S)
    with pytest.raises(ValueError):
        xcp_desired_feedback(1, 0.1, 0, S)


def test_a_packet_another_router_limits_takes_only_what_it_gets_from_the_totals():
    """ns-2's corrected rule: the packet got H < p - n elsewhere; this router charges the difference as negative
    feedback, as far as the negative total allows, and as positive what the packet then gets."""
    assert xcp_charged_feedback(300.0, 100.0, 500.0, 1000.0) == (300.0, 100.0)       # ours is the header's
    assert xcp_charged_feedback(300.0, 100.0, 50.0, 1000.0) == (300.0, 250.0)        # gets 50 = 300 - 250
    assert xcp_charged_feedback(300.0, 100.0, 50.0, 120.0) == (170.0, 120.0)         # negative left caps it
    assert xcp_charged_feedback(300.0, 100.0, -400.0, 120.0) == (0.0, 120.0)         # no positive given back
    p, n = xcp_charged_feedback(300.0, 100.0, -20.0, 1000.0)
    assert p - n == -20.0 and n <= 1000.0

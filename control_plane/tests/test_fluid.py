"""The fluid model behind docs/control_plane.md's "Gains": which gains keep one bottleneck stable."""

from control_plane.fluid import Bottleneck, join_rtts, poisson_drops, simulate


def test_default_gains_are_stable_without_target_queue():
    s = simulate(alpha=0.4, beta=0.4)
    assert 0.97 < s.share_min and s.share_max < 1.03
    assert s.utilisation > 0.99 and s.queue_max_pkts < 3


def test_papers_gains_are_stable_without_target_queue():
    s = simulate(alpha=0.1, beta=1.0)
    assert 0.97 < s.share_min and s.share_max < 1.03


def test_papers_gains_oscillate_around_a_target_queue():
    s = simulate(alpha=0.1, beta=1.0, q0_packets=6)
    assert s.share_max - s.share_min > 0.5
    assert s.utilisation < 0.9


# A flow joining others starts at the R of its SYN-ACK, so the link is offered (k / (k-1)) C for an RTT; the queue
# term then pulls R well below the new share before it recovers (the RCP talk's "RCP's weakness: sudden traffic
# changes"). The convergence experiment measured 15.0 / 14.0 / 11.7 RTTs (docs/experiments.md).
JOINS = [0.0, 5.0, 10.0, 15.0]


def test_a_joining_flow_takes_the_laws_transient_to_reach_its_share():
    rtts = join_rtts(Bottleneck(), JOINS, alpha=0.4, beta=0.4)
    assert all(r is not None and 10 <= r <= 16 for r in rtts), rtts


def test_the_papers_gains_take_longer_to_recover_from_a_join():
    default = join_rtts(Bottleneck(), JOINS, alpha=0.4, beta=0.4)
    papers = join_rtts(Bottleneck(), JOINS, alpha=0.1, beta=1.0)
    assert all(p > 2 * d for p, d in zip(papers, default)), (papers, default)


def test_the_second_flow_needs_more_than_5_rtts_whatever_the_gains():
    link = Bottleneck()
    for alpha in (0.1, 0.2, 0.4, 0.6, 0.8):
        for beta in (0.05, 0.1, 0.4, 1.0):
            second = join_rtts(link, JOINS[:2], alpha=alpha, beta=beta)[0]
            assert second is None or second > 5, (alpha, beta, second)


def test_the_join_takes_as_many_rtts_in_the_papers_regime():
    # 100 Mb/s of 1078-byte frames, 100 ms, buffer one BDP: the law is scale-free, so a join costs about the same
    # number of RTTs as at 12 Mb/s and 40 ms; the 5 RTTs issue 11 asked for are not in the law at any scale.
    papers = Bottleneck(C_pps=11_595, rtt_s=0.100, queue_limit_pkts=1160)
    rtts = join_rtts(papers, JOINS, alpha=0.4, beta=0.4)
    assert all(r is not None and 10 <= r <= 16 for r in rtts), rtts


# The short-flows experiment: 100-packet flows (one BDP) at 15 Mb/s, 60 ms, buffer 105 packets. Every flow starts at
# R, which is C on an idle link, so arrivals close together overflow the buffer before the law answers; Mininet
# retransmitted 0.8 / 3.6 / 2.6% of RCP's packets at loads 0.25 / 0.5 / 0.75 (docs/experiments.md, session 9).
SHORT_FLOWS = Bottleneck(C_pps=1739, rtt_s=0.060, queue_limit_pkts=105)


def test_one_bdp_flows_overflow_the_buffer_at_their_start():
    drops = [poisson_drops(SHORT_FLOWS, load=0.25, size_pkts=100, alpha=0.4, beta=0.4, seed=s) for s in (1, 2, 3)]
    assert min(drops) > 0.002, drops
    busy = [poisson_drops(SHORT_FLOWS, load=0.75, size_pkts=100, alpha=0.4, beta=0.4, seed=s) for s in (1, 2, 3)]
    assert min(busy) > 0.03, busy


def test_the_papers_gains_drop_less_once_flows_pile_up():
    # beta / alpha = 10 instead of 1: the standing queue pulls R down ten times harder while flows overlap
    default = [poisson_drops(SHORT_FLOWS, load=0.75, size_pkts=100, alpha=0.4, beta=0.4, seed=s) for s in (1, 2, 3)]
    papers = [poisson_drops(SHORT_FLOWS, load=0.75, size_pkts=100, alpha=0.1, beta=1.0, seed=s) for s in (1, 2, 3)]
    assert max(papers) < min(default) / 3, (papers, default)

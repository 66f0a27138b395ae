"""The fluid model behind docs/design.md, "Per interval: the law" and "Sudden load": which gains keep one bottleneck
stable, and what each router does with sudden load."""

import statistics

import pytest

from control_plane.fluid import (Bottleneck, flash_crowd, join_rtts, main, poisson_drops, preset_gains, short_flows,
                                 simulate)
from p4rcp.params import RcpParams


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
    # number of RTTs as at 12 Mb/s and 40 ms; 5 RTTs are not in the law at any scale.
    papers = Bottleneck(C_pps=11_595, rtt_s=0.100, queue_limit_pkts=1160)
    rtts = join_rtts(papers, JOINS, alpha=0.4, beta=0.4)
    assert all(r is not None and 10 <= r <= 16 for r in rtts), rtts


# The short-flows experiment: 100-packet flows (one BDP) at 15 Mb/s, 60 ms, buffer 105 packets. Every flow starts at
# R, which is C on an idle link, so arrivals close together overflow the buffer before the law answers; Mininet
# retransmitted 0.8 / 3.6 / 2.6% of RCP's packets at loads 0.25 / 0.5 / 0.75.
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


# Sudden load. The flow-count feedforward (rcp-ff) against plain RCP and the talk's RCP-AC, in the model
# that reproduces plain RCP's losses above (docs/design.md, "Sudden load").
FLASH_LINK = Bottleneck(queue_limit_pkts=56)        # 12 Mb/s, 40 ms: a buffer of one BDP


def test_with_the_feedforward_a_joining_flow_reaches_its_share_within_5_rtts():
    rtts = join_rtts(Bottleneck(), JOINS, alpha=0.4, beta=0.4, router="rcp-ff")
    assert all(r is not None and r <= 5 for r in rtts), rtts


def test_a_flash_crowd_overflows_one_bdp_under_rcp_and_not_with_the_feedforward():
    plain = flash_crowd(FLASH_LINK, running=4, joining=4, alpha=0.4, beta=0.4)
    ff = flash_crowd(FLASH_LINK, running=4, joining=4, alpha=0.4, beta=0.4, router="rcp-ff")
    assert plain.dropped_pkts > 50
    assert ff.dropped_pkts == 0 and ff.peak_queue_pkts < 0.5 * FLASH_LINK.queue_limit_pkts, ff


def test_with_the_feedforward_flows_starting_together_on_an_idle_link_fit_the_buffer():
    """R is C on an idle link: four SYNs within an interval stamped with their fair shares alone (C, C/2, C/3,
    C/4) overflowed one BDP; rcp_syn_rates leaves the later ones what the first took."""
    plain = flash_crowd(FLASH_LINK, running=0, joining=4, alpha=0.4, beta=0.4)
    for alpha, beta in [(0.4, 0.4), (0.6, 0.2)]:
        ff = flash_crowd(FLASH_LINK, running=0, joining=4, alpha=alpha, beta=beta, router="rcp-ff")
        assert ff.dropped_pkts == 0 and ff.peak_queue_pkts < 0.6 * FLASH_LINK.queue_limit_pkts, ff
    assert plain.dropped_pkts > 100


def test_with_the_feedforward_short_flows_lose_almost_nothing_and_stay_near_processor_sharing():
    for load in (0.05, 0.25, 0.5, 0.75):
        runs = [short_flows(SHORT_FLOWS, load=load, size_pkts=100, alpha=0.4, beta=0.4, seed=s, router="rcp-ff")
                for s in (1, 2, 3)]
        assert max(r.dropped for r in runs) < 0.005, (load, runs)
        assert statistics.fmean(r.fct_over_ps for r in runs) <= 1.3, (load, runs)


def test_rcp_ac_trades_losses_for_flow_completion_time_and_leaves_joins_to_the_law():
    """The talk: small acceleration, small queues and long FCTs; large acceleration, FCTs near PS and losses."""
    gentle = short_flows(SHORT_FLOWS, load=0.75, size_pkts=100, alpha=0.4, beta=0.4, router="rcp-ac", ac_gamma=0.1)
    eager = short_flows(SHORT_FLOWS, load=0.75, size_pkts=100, alpha=0.4, beta=0.4, router="rcp-ac", ac_gamma=2.0)
    assert gentle.dropped == 0 and gentle.fct_over_ps > 1.5, gentle
    assert eager.dropped > 0.03 and eager.fct_over_ps < 1.0, eager
    assert all(r > 10 for r in join_rtts(Bottleneck(), JOINS, alpha=0.4, beta=0.4, router="rcp-ac"))


# The command line: a preset's gains and feedforward, the options that set them instead still working.

def test_a_preset_gives_the_model_its_gains_target_queue_and_router():
    papers = preset_gains("rcp-papers", Bottleneck())
    assert (papers.alpha, papers.beta, papers.q0_packets, papers.router, papers.left_out) == (0.1, 1.0, 0, "rcp", ())
    assert preset_gains("rcp-ns2", Bottleneck()).left_out == ("d0_estimator = ns2",)
    assert preset_gains("rcp-police", Bottleneck()).left_out == ("police = True",)
    with pytest.raises(ValueError, match="not the routers"):
        preset_gains("reno-iw2", Bottleneck())


def test_the_command_line_runs_a_preset_and_its_own_options_over_it(capsys):
    main(["--preset", "rcp-papers", "--joins", "0,5"])
    header, result = capsys.readouterr().out.splitlines()
    assert header == "preset rcp-papers: alpha 0.1, beta 1, router rcp, q as read"
    assert result.startswith("joining flows")
    main(["--alpha", "0.4", "--beta", "0.4", "--router", "rcp-ff", "--flash", "0,4"])
    header, result = capsys.readouterr().out.splitlines()
    assert header == ("preset rcp with --alpha, --beta, --router: alpha 0.4, beta 0.4, router rcp-ff, q the least "
                      f"of {RcpParams().queue_reads} reads, the overload floor")
    assert result.startswith("peak queue")
    main(["--preset", "rcp-ns2", "--flows", "2", "--rtt-ms", "20"])
    header, result = capsys.readouterr().out.splitlines()
    assert header.endswith("q0 0 packets, router rcp, q as read; the model leaves out "
                           "d0_estimator = ns2")
    assert result.startswith("N*R/C mean")


def test_an_unknown_preset_is_a_usage_error_naming_the_known_ones(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--preset", "rcp-fast"])
    assert stop.value.code == 2 and "no preset 'rcp-fast'; the presets: rcp," in capsys.readouterr().err

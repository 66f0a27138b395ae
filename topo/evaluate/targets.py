"""What the default `rcp` must meet, defined once, as data, and how a measured figure is judged against it.

Each target reads one figure of a row (topo/evaluate/figures.py names them) on one side (RCP's runs, TCP's, or
the two compared). A figure is measured once per seed; a target judges the worst seed (the largest value where
it bounds from above, the smallest where it bounds from below), so that a PASS holds for every seed. A figure
that was never reached (a link never refilled, a join never settled) is infinite; one that was not measured
at all fails with that said.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass

OPERATORS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge}
ENGINES = ("ns3", "mininet")


@dataclass(frozen=True)
class Target:
    name: str
    claim: str                    # the target in words: what the default rcp must do
    figure: str                   # the row's figure it judges (figures.FIGURES)
    op: str                       # how the worst seed's figure must compare with bound: <=, < or >=
    bound: float
    engines: tuple[str, ...] = ENGINES     # where it applies (a bound may differ between the engines)

    def __post_init__(self):
        if self.op not in OPERATORS:
            raise ValueError(f"target {self.name}: op must be one of {', '.join(OPERATORS)}, got {self.op!r}")
        unknown = set(self.engines) - set(ENGINES)
        if unknown:
            raise ValueError(f"target {self.name}: unknown engines {sorted(unknown)}")

    def worst(self, per_seed: Sequence[float | None]) -> float | None:
        """The seed that decides: the largest value against an upper bound, the smallest against a lower one;
        None when no seed measured the figure."""
        values = [v for v in per_seed if v is not None]
        if not values:
            return None
        return min(values) if self.op == ">=" else max(values)


@dataclass(frozen=True)
class Verdict:
    target: Target
    measured: float | None        # the worst seed's figure; None: not measured
    passed: bool

    def text(self) -> str:
        """`name: measured op bound PASS|FAIL`, the figure as the row shows it."""
        t = self.target
        return f"{t.name}: {format_figure(self.measured)} {t.op} {t.bound:g} {'PASS' if self.passed else 'FAIL'}"


def format_figure(value: float | None) -> str:
    if value is None:
        return "not measured"
    if math.isinf(value):
        return "never"
    return f"{value:.3g}"


def judge(target: Target, per_seed: Sequence[float | None]) -> Verdict:
    """The target against a figure's per-seed values (pure)."""
    worst = target.worst(per_seed)
    passed = worst is not None and OPERATORS[target.op](worst, target.bound)
    return Verdict(target, worst, passed)


# The targets for the one default RCP (3 seeds, no void run). FCT / FCT_PS is the mean over a run's
# completed flows of each flow's FCT over its processor-sharing bound (docs/experiments.md).
TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("ex1-lossless", "talk Example 1 on ns-3, buffer one BDP: 0 packets dropped", "drops", "<=", 0),
    Target("ex1-fct", "talk Example 1: mean FCT at most 1.15 x FCT_PS", "fct_ratio_ps", "<=", 1.15),
    Target("ex2-refill", "talk Example 2: the link refilled within 1.5 s after the drop and after the return",
           "refill_s", "<=", 1.5),
    Target("default-lossless", "the default run (fct-short, convergence-short): 0 packets dropped", "drops", "<=",
           0),
    Target("default-fct", "the default run: RCP at most 1.15 x FCT_PS", "fct_ratio_ps", "<=", 1.15),
    Target("fct-bins-ns3", "fct on ns-3: every size bin with 20 flows or more at most 1.15 x FCT_PS",
           "worst_bin_ratio_ps", "<=", 1.15, engines=("ns3",)),
    Target("fct-bins-mininet", "fct on Mininet: every size bin with 20 flows or more at most 1.25 x FCT_PS",
           "worst_bin_ratio_ps", "<=", 1.25, engines=("mininet",)),
    Target("short-fct", "short-flows at every load: at most 1.25 x FCT_PS", "fct_ratio_ps", "<=", 1.25),
    Target("short-below-tcp", "short-flows: mean FCT below TCP's", "fct_over_tcp", "<", 1),
    Target("short-loss", "short-flows: under 0.1% retransmitted", "retransmitted_pct", "<", 0.1),
    Target("flash-lossless", "flash-crowd: 0 packets dropped", "drops", "<=", 0),
    Target("flash-queue", "flash-crowd: peak queue after the burst under half a BDP (in BDPs)",
           "burst_peak_queue_bdp", "<", 0.5),
    Target("conv-join", "convergence: a joining flow within 20% of its share in at most 4 RTTs", "join_rtts", "<=",
           4),
    Target("conv-util", "convergence: utilisation at least 0.95 (steady state)", "steady_utilisation", ">=",
           0.95),
    Target("conv-queue", "convergence: mean queue under 5 packets (steady state)", "steady_queue_pkts", "<", 5),
    Target("conv-jain", "convergence: Jain's index at least 0.99", "jain", ">=", 0.99),
    Target("multi-jain", "several bottlenecks: Jain's index of goodput over max-min share at least 0.99 "
                         "(convergence's fairness, in the form that holds where equal rates are not fair)",
           "jain", ">=", 0.99),
    Target("mix-rcp-share", "TCP mix: the RCP flows get at least 0.7 of their max-min share", "rcp_class_share",
           ">=", 0.7),
    Target("mix-tcp-share", "TCP mix: the TCP flows get at least 0.7 of their max-min share", "tcp_class_share",
           ">=", 0.7),
    Target("mix-rcp-loss", "TCP mix: RCP loses under 0.1% (RCP flows' retransmissions)", "retransmitted_pct", "<",
           0.1),
    Target("mix-alone-queue", "TCP mix: RCP alone keeps a queue under 5 packets (steady state)",
           "steady_queue_pkts", "<", 5),
    Target("cell-fct", "every cell: RCP within 1.3 x FCT_PS", "fct_ratio_ps", "<=", 1.3),
    Target("cell-vs-tcp", "every cell: RCP at least as fast as TCP (mean FCT over TCP's)", "fct_over_tcp", "<=", 1),
)}


def target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"no target {name!r}; the targets: {', '.join(TARGETS)}") from None

"""The rows of the evaluation suite: the RCP talk's list of conditions ("RCP performance when traffic
characteristics vary: flow sizes, mean flow size, flow-size distributions, non-Poisson arrivals, load; when
network conditions vary: link capacity, RTT, flows with different RTTs, multiple bottlenecks, congested reverse
links"), plus the talk's two examples, flash crowds, convergence and a TCP mix.

Each row is an experiment file of topo/experiments (one sweep point of it where it sweeps) run with RCP's
default preset and TCP Reno, and the targets (topo/evaluate/targets.py) it is judged by. A condition the
experiment format cannot express says why, and runs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from topo.evaluate.targets import TARGETS

RCP_SCHEME = "rcp"            # the default preset, whatever it is
TCP_SCHEME = "tcp:reno"       # TCP beside it in every cell (on ns-3: ns-3's NewReno)
SEEDS = (1, 2, 3)
EVERY_CELL = ("cell-fct", "cell-vs-tcp")


@dataclass(frozen=True)
class Condition:
    name: str                          # the row
    varies: str                        # the talk's condition (or the experiment) it covers
    experiment: str | None = None      # topo/experiments/NAME.toml; None: not expressible (why_not)
    variant: str = ""                  # the sweep point ("load=0.25"); "": the experiment has no sweep
    targets: tuple[str, ...] = ()
    tcp_in_runs: bool = False          # TCP's figures are the TCP flows of RCP's own runs (a mix), not TCP's runs
    duration_s: float | None = None    # instead of the experiment's
    mininet: bool = False              # in the shorter subset the Mininet engine runs
    why_not: str = ""                  # why the experiment format cannot express the condition

    def __post_init__(self):
        unknown = [t for t in self.targets if t not in TARGETS]
        if unknown:
            raise ValueError(f"condition {self.name}: unknown targets {unknown}")
        if (self.experiment is None) == (not self.why_not):
            raise ValueError(f"condition {self.name}: an experiment, or why it cannot be expressed (not both)")

    @property
    def runs(self) -> bool:
        return self.experiment is not None

    def schemes(self, rcp: str = RCP_SCHEME) -> tuple[str, ...]:
        """The schemes its runs need: the RCP preset judged (`rcp`), and TCP unless TCP runs in RCP's runs."""
        return (rcp,) if self.tcp_in_runs else (rcp, TCP_SCHEME)


SUITE: tuple[Condition, ...] = (
    # Traffic characteristics
    Condition("fct-short (the default run)", "flow sizes", "fct-short",
              targets=("default-lossless", "default-fct", "fct-bins-ns3", "fct-bins-mininet", *EVERY_CELL),
              mininet=True),
    Condition("mean flow size 250 packets", "mean flow size", "fct-mean-size", targets=EVERY_CELL),
    Condition("exponential sizes", "flow-size distributions", "fct-exp-sizes", targets=EVERY_CELL),
    Condition("Pareto gaps between arrivals", "non-Poisson arrivals", "fct-arrivals", targets=EVERY_CELL),
    *(Condition(f"short-flows load {load}", "load", "short-flows", f"load={load}",
                targets=("short-fct", "short-below-tcp", "short-loss", *EVERY_CELL), mininet=True)
      for load in (0.05, 0.25, 0.5, 0.75)),
    *(Condition(f"fct load {load}", "load", "fct", f"load={load}",
                targets=("fct-bins-ns3", "fct-bins-mininet", *EVERY_CELL), mininet=True)
      for load in (0.7, 0.9)),
    # Network conditions
    *(Condition(f"capacity {mbps} Mb/s", "link capacity", "fct-capacity", f"bottleneck_mbps={mbps}",
                targets=EVERY_CELL)
      for mbps in (5, 60)),
    *(Condition(f"RTT {rtt} ms", "RTT", "fct-rtt", f"rtt_ms={rtt}", targets=EVERY_CELL) for rtt in (20, 80)),
    Condition("RTTs 40 and 200 ms", "flows with different RTTs", "fct-mixed-rtt", targets=EVERY_CELL),
    Condition("parking lot", "multiple bottlenecks", "parking-lot", targets=("multi-jain",)),
    Condition("congested reverse links", "congested reverse links",
              why_not="flows go from a topology's senders to its receivers only (topo/experiment.py), so no "
                      "traffic can load the reverse path of a bottleneck"),
    # The experiments
    Condition("flash crowd", "flash crowd", "flash-crowd", targets=("flash-lossless", "flash-queue"), mininet=True),
    Condition("convergence-short (the default run)", "convergence", "convergence-short",
              targets=("default-lossless", "conv-join", "conv-util", "conv-queue", "conv-jain"), mininet=True),
    # Example 2's events are at 20 and 40 s; 60 s leave 20 s after the return (the file's 160 s show TCP's slow
    # climb back, which no target reads).
    Condition("talk Example 2 (bandwidth change)", "bandwidth change", "talk-example2", targets=("ex2-refill",),
              duration_s=60),
    Condition("talk Example 1", "talk Example 1", "talk-example1", targets=("ex1-lossless", "ex1-fct", *EVERY_CELL)),
    Condition("RCP alone (4 flows)", "TCP mix", "tcp-mix-reno", "tcp_flows=0", targets=("mix-alone-queue",),
              tcp_in_runs=True, mininet=True),
    *(Condition(f"TCP mix {k} of 4 Reno", "TCP mix", "tcp-mix-reno", f"tcp_flows={k}",
                targets=("mix-rcp-share", "mix-tcp-share", "mix-rcp-loss"), tcp_in_runs=True, mininet=True)
      for k in (1, 2, 3)),
)


def select(engine: str, names: list[str] | None = None, suite: tuple[Condition, ...] = SUITE) -> list[Condition]:
    """The rows an engine runs (Mininet: the subset it reaches), or the rows named (ValueError naming an unknown
    one). Rows that cannot be expressed stay in, to say so."""
    if names:
        known = {c.name: c for c in suite}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(f"no condition {unknown[0]!r}; the conditions: {'; '.join(known)}")
        return [known[n] for n in names]
    return [c for c in suite if engine == "ns3" or c.mininet or not c.runs]


@dataclass(frozen=True)
class Invocation:
    """One experiment as the suite runs it: its schemes, seeds and duration (one results directory)."""
    experiment: str
    schemes: tuple[str, ...]
    seeds: tuple[int, ...]
    duration_s: float | None

    def command(self, engine: str) -> list[str]:
        """The runner's command line for it (topo/run.py)."""
        return ["python", "-m", "topo.run", self.experiment, "--engine", engine, "--schemes", ",".join(self.schemes),
                "--seeds", ",".join(map(str, self.seeds))] + \
            (["--duration", f"{self.duration_s:g}"] if self.duration_s else [])


def invocations(conditions: list[Condition], seeds: tuple[int, ...] = SEEDS, rcp: str = RCP_SCHEME) -> list[Invocation]:
    """The experiments the rows need, each once: rows of one experiment (its sweep points) share its runs, with
    the schemes any of them needs (`rcp`: the RCP preset judged). Rows of one experiment must agree on its
    duration."""
    out: dict[str, Invocation] = {}
    for c in conditions:
        if not c.runs:
            continue
        seen = out.get(c.experiment)
        if seen and seen.duration_s != c.duration_s:
            raise ValueError(f"conditions of {c.experiment} ask for durations {seen.duration_s} and {c.duration_s}")
        schemes = tuple(dict.fromkeys((*(seen.schemes if seen else ()), *c.schemes(rcp))))
        out[c.experiment] = Invocation(c.experiment, schemes, tuple(seeds), c.duration_s)
    return list(out.values())

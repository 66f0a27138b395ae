"""A row's figures, from the records of its runs: the report's own per-run figures (topo/report/metrics.py),
and the few the targets read that the report does not give in that form.

Every figure is a list with one value per seed (None where a seed did not measure it), RCP's and TCP's side by
side; the targets judge RCP's (topo/evaluate/targets.py), the table shows both.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from p4rcp.analysis import bin_fct
from topo.experiment import Experiment, load_experiment
from topo.report.metrics import PACKET_DECADES, metrics
from topo.report.runs import load_run

MIN_BIN_FLOWS = 20        # a size bin counts for the fct targets with this many flows or more

# The figures a row has, in words (the table's JSON carries this legend).
FIGURES = {
    "mean_fct_s": "mean flow completion time (s), the receiver's",
    "fct_ratio_ps": "mean of each flow's FCT / FCT_PS",
    "fct_ratio_ps_exact": "mean of each flow's FCT over its FCT under exact processor sharing of the run's own "
                          "arrivals (1.5 RTT + its sojourn): FCT_PS without the luck of the draw",
    "worst_bin_ratio_ps": f"largest mean FCT / FCT_PS of a flow-size decade with {MIN_BIN_FLOWS} flows or more, "
                          f"every seed's flows pooled",
    "fct_over_tcp": "RCP's mean FCT over TCP's, seed by seed",
    "drops": "packets the bottleneck queue(s) dropped",
    "retransmitted_pct": "retransmitted packets of the side's own flows, % of their packets sent",
    "mean_queue_pkts": "mean bottleneck queue (packets) while traffic was offered",
    "max_queue_pkts": "peak bottleneck queue (packets, as the control loop sampled it)",
    "utilisation": "bottleneck utilisation while traffic was offered",
    "steady_utilisation": "utilisation over the long flows' steady state",
    "steady_queue_pkts": "mean queue (packets) over the long flows' steady state",
    "jain": "Jain's index of the long flows' goodputs (over their max-min shares where those differ)",
    "burst_peak_queue_bdp": "peak queue after a flash crowd, in bandwidth-delay products",
    "refill_s": "seconds until the link is refilled (every flow at its new share) after each bandwidth change, "
                "the slowest event",
    "join_rtts": "RTTs until a joining flow holds its share, the slowest join",
    "rcp_class_share": "the RCP flows' mean goodput over their max-min share",
    "tcp_class_share": "the TCP flows' mean goodput over their max-min share",
}


@dataclass
class SchemeRuns:
    """One scheme's runs at one sweep point: per seed its figures (FIGURES), validity and FCT flows."""
    scheme: str
    seeds: list[int] = field(default_factory=list)
    figures: list[dict] = field(default_factory=list)
    valid: list[bool] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    fct_flows: list[dict] = field(default_factory=list)   # every valid seed's, pooled

    def per_seed(self, name: str) -> list[float | None]:
        return [f.get(name) for f, ok in zip(self.figures, self.valid) if ok]

    @property
    def void(self) -> int:
        return self.valid.count(False)


def is_tcp(scheme: str) -> bool:
    return scheme == "tcp" or scheme.startswith("tcp:")


def _slowest(times: list | None) -> float | None:
    """The slowest of several events' times; infinite if one never happened; None without events."""
    if not times:
        return None
    return math.inf if any(t is None for t in times) else max(times)


def _retransmitted_pct(flows: list[dict], tcp: bool) -> float | None:
    mine = [f for f in flows if is_tcp(f.get("scheme", "")) == tcp]
    sent = sum(f.get("packets_sent") or 0 for f in mine)
    return 100 * sum(f.get("retransmissions") or 0 for f in mine) / sent if sent else None


def _bdp_packets(run: dict) -> float:
    """One bandwidth-delay product of the bottleneck (the slowest), at the longest base RTT, in data frames."""
    topo = run["topology"]
    rate_pps = min(run["meta"]["capacity_bps"].values()) / (8 * topo.data_frame_bytes)
    return rate_pps * max(2 * topo.hosts[h].delay_ms / 1000 for h in topo.senders)


def _class_share(m: dict, tcp: bool) -> float | None:
    shares = [v for scheme, v in m.get("class_share", {}).items() if is_tcp(scheme) == tcp]
    return min(shares) if shares else None


def run_figures(run: dict, m: dict) -> dict:
    """One run's figures (FIGURES, but worst_bin_ratio_ps and fct_over_tcp, which take several runs), from its
    records and the report's metrics m. The side's own flows are the run's scheme's (TCP's, or the others)."""
    tcp = is_tcp(run["meta"]["scheme"])
    peak = m.get("burst_peak_queue_pkts")
    return {
        # A long flow's FCT is the duration it was given: FCT is a figure of Poisson workloads only.
        "mean_fct_s": m.get("mean_fct_s") if m.get("load") else None, "fct_ratio_ps": m.get("fct_ratio_ps"),
        "fct_ratio_ps_exact": m.get("fct_ratio_ps_exact") if m.get("load") else None,
        "drops": m.get("bottleneck_drops"), "retransmitted_pct": _retransmitted_pct(run["flows"], tcp),
        "mean_queue_pkts": m.get("mean_queue_pkts"), "max_queue_pkts": m.get("max_queue_pkts"),
        "utilisation": m.get("utilisation"), "steady_utilisation": m.get("steady_utilisation"),
        "steady_queue_pkts": m.get("steady_queue_pkts"), "jain": m.get("jain"),
        "burst_peak_queue_bdp": peak / _bdp_packets(run) if peak is not None else None,
        "refill_s": _slowest(m.get("to_fair_share_s")), "join_rtts": _slowest(m.get("join_rtts")),
        "rcp_class_share": _class_share(m, tcp=False), "tcp_class_share": _class_share(m, tcp=True),
    }


def worst_bin(flows: list[dict]) -> float | None:
    """The largest mean FCT / FCT_PS of a size decade holding MIN_BIN_FLOWS flows or more; None if none does."""
    ratios = [b["mean_ratio_ps"] for b in bin_fct(flows, PACKET_DECADES, "packets") if b["flows"] >= MIN_BIN_FLOWS]
    return max(ratios) if ratios else None


def fct_over(rcp: SchemeRuns, tcp: SchemeRuns) -> list[float | None]:
    """RCP's mean FCT over TCP's, seed by seed (the seed fixes the flows both saw)."""
    tcp_fct = {s: f.get("mean_fct_s") for s, f, ok in zip(tcp.seeds, tcp.figures, tcp.valid) if ok}
    out = []
    for seed, f, ok in zip(rcp.seeds, rcp.figures, rcp.valid):
        mine, theirs = f.get("mean_fct_s"), tcp_fct.get(seed)
        if ok and mine is not None and theirs:
            out.append(mine / theirs)
    return out or [None]


def load_results(root: Path) -> tuple[Experiment, dict[tuple[str, str], SchemeRuns]]:
    """A results directory of one experiment (results/.../EXPERIMENT[/TIMESTAMP], with the copy of its file the
    runner keeps): per (sweep point label, scheme) its runs' figures."""
    metas = [(p.parent, json.loads(p.read_text())) for p in sorted(root.glob("**/run.json"))]
    if not metas:
        raise ValueError(f"{root}: no run.json below it")
    first = metas[0][1]
    saved = root / f"{first['experiment']}.toml"
    schemes = list(dict.fromkeys(m["scheme"] for _, m in metas))
    seeds = sorted({m.get("seed", 1) for _, m in metas})
    exp = load_experiment(saved, schemes, first["duration_s"], seeds, recorded=True)
    variants = {v.label: v for v in exp.variants()}
    out: dict[tuple[str, str], SchemeRuns] = {}
    for run_dir, meta in sorted(metas, key=lambda r: r[1].get("seed", 1)):
        variant = variants[meta["variant"]]
        run = load_run(run_dir, meta, exp, variant.topology)
        m = metrics(run, exp)
        runs = out.setdefault((meta["variant"], meta["scheme"]), SchemeRuns(meta["scheme"]))
        runs.seeds.append(meta.get("seed", 1))
        runs.figures.append(run_figures(run, m))
        runs.valid.append(bool(meta["valid"]))
        runs.problems += [f"{meta['scheme']} seed {meta.get('seed', 1)}: {p}" for p in meta["problems"]]
        if meta["valid"]:
            runs.fct_flows += m.get("fct_flows", [])
    return exp, out

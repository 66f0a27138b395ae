"""The summary's Markdown tables, from the figures topo/report/metrics.py computed."""

from __future__ import annotations

from p4rcp.analysis import Spread
from topo.report.metrics import PACKET_DECADES

# Per-run figures of the summary table (topo/report/metrics.py, SCALARS): (key, header, format). A column
# shows where some row has a value.
COLUMNS = [
    ("load_measured", "load offered (measured)", ".2f"),
    ("mean_fct_s", "mean FCT (s)", ".3f"),
    ("p95_fct_s", "p95 FCT (s)", ".3f"),
    ("fct_ratio_ps", "mean FCT / FCT_PS", ".2f"),
    ("mean_fct_sender_s", "mean FCT at sender (s)", ".3f"),
    ("retransmitted_pct", "retransmitted (% of packets)", ".2f"),
    ("bottleneck_drops", "dropped at the bottleneck (packets)", ".0f"),
    ("policed_packets", "policed (packets)", ".0f"),
    ("utilisation", "utilisation", ".2f"),
    ("mean_queue_pkts", "mean queue (pkts)", ".1f"),
    ("max_queue_pkts", "peak queue (pkts)", ".0f"),
    ("burst_peak_queue_pkts", "peak queue after the burst (pkts)", ".0f"),
    ("burst_to_full_s", "to a full link after the burst (s)", ".2f"),
    ("steady_utilisation", "utilisation, steady state", ".2f"),
    ("steady_queue_pkts", "mean queue, steady state (pkts)", ".1f"),
    ("jain", "Jain", ".3f"),
    ("throughput_mbps", "throughput (Mb/s)", ".2f"),
    ("rtt_ratio", "throughput short / long RTT", ".2f"),
]
# Figures per event of a run, in order (bandwidth changes, flows joining): "never" where one did not happen.
EVENT_COLUMNS = [
    ("to_fair_share_s", "to fair share after each event (s)", ".1f"),
    ("join_rtts", "joining flows to their fair share, per join (RTTs)", ".1f"),
]


def summary_table(rows: list[tuple[str, dict]]) -> str:
    """rows: (scheme, aggregate). Figures are means over the valid seeds, (lowest-highest) where they differ."""
    shown = [c for c in COLUMNS if any(agg.get(c[0]) is not None for _, agg in rows)]
    events = [c for c in EVENT_COLUMNS if any(c[0] in agg for _, agg in rows)]
    header = ["scheme", "valid runs", "flows done"] + [h for _, h, _ in shown + events]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for scheme, agg in rows:
        if not agg["valid_runs"]:
            lines.append(f"| {scheme} | INVALID: {'; '.join(agg['problems'])} |" + "  |" * (len(header) - 2))
            continue
        cells = [scheme, f"{agg['valid_runs']}/{agg['runs']}", f"{agg['done']}/{agg['flows']}"]
        cells += [_cell(agg.get(key), spec, agg["valid_runs"]) for key, _, spec in shown]
        for key, _, spec in events:
            cells.append(" / ".join(_event_cell(times, spec) for times in agg.get(key, [])) or "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _event_cell(times: list[float | None], spec: str) -> str:
    """One event over seeds: the seeds that got there, and how many never did (a mean would hide them)."""
    reached = Spread.of(times)
    never = times.count(None)
    if reached is None:
        return "never"
    return reached.format(spec) + (f", never in {never} of {len(times)}" if never else "")


def _cell(spread: Spread | None, spec: str, runs: int) -> str:
    """A figure over seeds; says so when only some valid runs have it (FCT_PS needs a measured load below 1)."""
    if spread is None:
        return "-"
    return spread.format(spec) + (f" [{spread.n} of {runs} runs]" if spread.n < runs else "")


def size_label(lo: int) -> str:
    """A flow-size bin of PACKET_DECADES, as the tables and the FCT figure name it: "10-99"."""
    return f"{lo}-{PACKET_DECADES[PACKET_DECADES.index(lo) + 1] - 1}"


def size_tables(rows: list[tuple[str, dict]], reference: str | None) -> str:
    """Mean FCT / FCT_PS per flow size (all seeds' flows pooled; the seeds' lowest and highest in brackets),
    and each scheme's mean FCT over the reference scheme's (RCP) per size."""
    with_flows = [(s, agg) for s, agg in rows if agg.get("fct_by_size")]
    if not with_flows:
        return ""
    pooled = {s: agg["fct_by_size"]["pooled"] for s, agg in with_flows}
    per_seed = {s: agg["fct_by_size"]["per_seed"] for s, agg in with_flows}
    los = sorted({r["lo"] for rs in pooled.values() for r in rs})

    def cell(value: float, seeds: list[float], spec=".2f") -> str:
        spread = Spread.of(seeds)
        return f"{value:{spec}}" + (f" ({spread.lo:{spec}}-{spread.hi:{spec}})" if spread and spread.n > 1 else "")

    schemes = [s for s, _ in with_flows]
    lines = ["Mean FCT / FCT_PS by flow size (cell: ratio (seeds' range), flows):", "",
             "| flow size (packets) | " + " | ".join(schemes) + " |", "|---|" + "---|" * len(schemes)]
    for lo in los:
        cells = []
        for s in schemes:
            r = next((r for r in pooled[s] if r["lo"] == lo), None)
            cells.append("-" if r is None else
                         f"{cell(r['mean_ratio_ps'], [b[lo]['mean_ratio_ps'] for b in per_seed[s] if lo in b])}, "
                         f"{r['flows']}")
        lines.append(f"| {size_label(lo)} | " + " | ".join(cells) + " |")
    others = [s for s in schemes if s != reference]
    if reference in pooled and others:
        lines += ["", f"Mean FCT over {reference}'s mean FCT by flow size:", "",
                  "| flow size (packets) | " + " | ".join(f"{s} / {reference}" for s in others) + " |",
                  "|---|" + "---|" * len(others)]
        ref = {r["lo"]: r for r in pooled[reference]}
        for lo in los:
            cells = []
            for s in others:
                r = next((r for r in pooled[s] if r["lo"] == lo), None)
                seeds = [b[lo]["mean_fct_s"] / a[lo]["mean_fct_s"] for a, b in zip(per_seed[reference], per_seed[s])
                         if lo in a and lo in b]
                cells.append("-" if r is None or lo not in ref else cell(r["mean_fct_s"] / ref[lo]["mean_fct_s"], seeds))
            lines.append(f"| {size_label(lo)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def class_table(rows: list[tuple[str, dict]]) -> str:
    """Where the long flows run different schemes (kernel TCP beside the run's, a fixed-rate sender): each
    class's mean goodput over its fair share."""
    with_classes = [(s, agg) for s, agg in rows if "class_share" in agg]
    if not with_classes:
        return ""
    classes = sorted({c for _, agg in with_classes for c in agg["class_share"]})
    lines = ["Each class of flows: mean goodput over its fair share (1.00: the share):", "",
             "| run's scheme | " + " | ".join(f"{c} flows" for c in classes) + " |", "|---|" + "---|" * len(classes)]
    for scheme, agg in with_classes:
        cells = [_cell(agg["class_share"].get(c), ".2f", agg["valid_runs"]) for c in classes]
        lines.append(f"| {scheme} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def max_min_table(rows: list[tuple[str, dict]]) -> str:
    """Per long flow: its max-min fair share and each scheme's goodput against it (several bottlenecks)."""
    with_shares = [(s, agg) for s, agg in rows if "max_min" in agg]
    if not with_shares:
        return ""
    flows = list(with_shares[0][1]["max_min"])
    schemes = [s for s, _ in with_shares]
    lines = ["Goodput against the (weighted) max-min fair share (Mb/s of application bytes; goodput / share in "
             "brackets):", "",
             "| flow | max-min share | " + " | ".join(schemes) + " |", "|---|---|" + "---|" * len(schemes)]
    for f in flows:
        share = with_shares[0][1]["max_min"][f][1]
        cells = []
        for _, agg in with_shares:
            goodput = agg["max_min"].get(f, (None, share))[0]
            cells.append("-" if goodput is None else f"{goodput.format('.2f')} ({goodput.mean / share:.2f})")
        lines.append(f"| {f} | {share:.2f} | " + " | ".join(cells) + " |")
    with_links = [(s, agg) for s, agg in with_shares if "links" in agg]
    if with_links:
        lines += ["", "Per shaped link: utilisation (mean queue in packets) against the share of the link the "
                      "max-min rates fill (1.00: a bottleneck of some flow):", "",
                  "| link | payload capacity (Mb/s) | max-min use | " + " | ".join(s for s, _ in with_links) + " |",
                  "|---|---|---|" + "---|" * len(with_links)]
        for link, first in with_links[0][1]["links"].items():
            cells = []
            for _, agg in with_links:
                figures = agg["links"].get(link)
                cells.append("-" if figures is None or figures["utilisation"] is None else
                             f"{figures['utilisation'].format('.2f')} ({_cell(figures['queue_pkts'], '.1f', agg['valid_runs'])})")
            lines.append(f"| {link} | {first['capacity_mbps']:.2f} | {first['max_min_use']:.2f} | "
                         + " | ".join(cells) + " |")
    return "\n".join(lines)


def setting(exp, variant, unit: str) -> str:
    """The network and the runs, in one paragraph: what a reader needs to judge the numbers; `unit` is what the
    runs' load counted (p4rcp.analysis.LOAD_UNITS)."""
    topology = variant.topology
    links = []
    for sw, port in topology.bottlenecks:
        p = topology.switch(sw).ports[port]
        links.append(f"{p.capacity_bps / 1e6:.1f} Mb/s ({p.queue_rate_pps} packets/s of {topology.data_frame_bytes} "
                     f"bytes), queue {p.queue_depth_pkts} packets")
    rtts = sorted({round(2 * topology.hosts[h].delay_ms, 3) for h in topology.senders})
    counted = {"slots": ("packet slots: shaped in packets per second, it gives every frame a full data frame's time",
                         "data frames' slots"),
               "bytes": ("bits: shaped in bits, it gives every frame its own length", "data frames' bytes")}[unit]
    processes = sorted({src.arrivals for src in exp.poisson})
    arrivals = "Poisson arrivals" if processes == ["poisson"] else f"Arrivals ({', '.join(processes)})"
    load = (f"{arrivals} at a nominal load of {variant.load:g} of the link's {counted[0]} (the table gives the "
            f"load each run's arrivals offered, which FCT_PS = 1.5 RTT + L / (C (1 - load)) uses, with L the flow's "
            f"{counted[1]}). " if variant.load else "")
    return (f"Bottleneck{'s' if len(links) > 1 else ''}: {'; '.join(links)}. Base RTT {', '.join(f'{r:g}' for r in rtts)} ms. "
            f"{load}Seeds {', '.join(map(str, exp.seeds))}: each figure is the mean over the valid seeds, "
            f"(lowest-highest) where they differ. FCT: first SYN sent to last byte received.")



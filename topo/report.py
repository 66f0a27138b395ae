"""summary.md and plots of one experiment, from the runs' raw records."""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from topo.analysis import (Spread, bin_fct, data_packets, fct_ps, jain_index, join_receiver_times,  # noqa: E402
                           log_bins, max_min_shares, measured_load, percentile, service_bytes, time_to_share,
                           utilisation)

SAMPLE_BIN_S = 0.5   # per-flow rates over time are averaged over this


def read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue   # a line cut by a killed process
    return rows


def void_runs(roots: list[Path]) -> tuple[int, int, list[str]]:
    """Over the results directories of one invocation: (void runs, runs, each void run's path below results/
    with its first problem)."""
    void, total = [], 0
    for root in roots:
        for path in sorted(root.glob("**/run.json")):
            meta = json.loads(path.read_text())
            total += 1
            if not meta["valid"]:
                problem = meta["problems"][0] if meta["problems"] else "no reason recorded"
                void.append(f"{root.parent.name}/{path.parent.relative_to(root)}: {problem}")
    return len(void), total, void


def load_run(run_dir: Path, meta: dict, exp, topology) -> dict:
    """Everything the report needs from one run directory."""
    flows, rates = [], {}
    for path in sorted(run_dir.glob("flows_*.jsonl")):
        host = path.stem.removeprefix("flows_")
        records = read_jsonl(path)
        for r in records:
            r["host"] = host
        flows += records
        starts = {r["flow_id"]: r["start_unix_s"] for r in records}
        for line in read_jsonl(run_dir / f"trace_{host}.jsonl"):
            if line.get("event") == "sample" and line["flow_id"] in starts:
                rates.setdefault(f"{host}/{line['flow_id']}", []).append(
                    (starts[line["flow_id"]] + line["t_s"], line.get("goodput_kbps") or 0.0))
    received = [r for path in sorted(run_dir.glob("recv_*.jsonl")) for r in read_jsonl(path)]
    join_receiver_times(flows, received, {name: h.ip for name, h in topology.hosts.items()})
    control = {}
    for sw, port in topology.bottlenecks:
        control[(sw, port)] = [r for r in read_jsonl(run_dir / f"control_{sw}.jsonl") if r["port"] == port]
    return {"meta": meta, "flows": flows, "rates": rates, "control": control, "topology": topology}


def metrics(run: dict, exp) -> dict:
    """One run's figures. FCT is the receiver's (first SYN sent to last byte received, the RCP papers'), its
    bound FCT_PS uses the load the run's arrivals offered and the flow's data in link slots."""
    topo = run["topology"]
    C = min(run["meta"]["capacity_bps"].values())
    m = {"flows": len(run["flows"]), "valid": run["meta"]["valid"], "problems": run["meta"]["problems"]}
    done = [f for f in run["flows"] if f.get("completed") and f.get("fct_recv_s") is not None]
    m["done"] = len(done)
    load = run["meta"].get("load")
    if load:
        arrivals = [f["size_bytes"] for f in run["flows"] if "index" in f]     # the Poisson sources' flows
        m["load"] = load
        m["load_measured"] = measured_load(arrivals, topo.mss_bytes, C / 8 / topo.data_frame_bytes,
                                           run["meta"]["duration_s"])
    if done:
        m["mean_fct_s"] = statistics.fmean(f["fct_recv_s"] for f in done)
        m["p50_fct_s"] = percentile([f["fct_recv_s"] for f in done], 50)
        m["p95_fct_s"] = percentile([f["fct_recv_s"] for f in done], 95)
        m["mean_fct_sender_s"] = statistics.fmean(f["fct_s"] for f in done)
    if done and load:
        # The bound at the nominal load too: always defined, while a heavy-tailed draw can offer 1 or more.
        m["fct_ratio_ps_nominal"] = statistics.fmean(
            f["fct_recv_s"] / fct_ps(service_bytes(f["size_bytes"], topo.mss_bytes, topo.data_frame_bytes),
                                     C, load, _rtt(topo, f["host"])) for f in done)
    if done and load and m["load_measured"] < 1:
        m["fct_flows"] = [{"size_bytes": f["size_bytes"], "packets": data_packets(f["size_bytes"], topo.mss_bytes),
                           "fct_s": f["fct_recv_s"],
                           "ps_ratio": f["fct_recv_s"] / fct_ps(service_bytes(f["size_bytes"], topo.mss_bytes,
                                                                              topo.data_frame_bytes),
                                                                C, m["load_measured"], _rtt(topo, f["host"]))}
                          for f in done]
        m["fct_ratio_ps"] = statistics.fmean(f["ps_ratio"] for f in m["fct_flows"])
    # Router figures over the time traffic was offered (the flows' starts to the run's end), not the drain after.
    t0 = min((f["start_unix_s"] for f in run["flows"]), default=0.0)
    records = [r for link in run["control"].values() for r in link if t0 <= r["time"] <= t0 + run["meta"]["duration_s"]]
    if records:
        per_link = [utilisation([r for r in records if (r["switch"], r["port"]) == link]) for link in run["control"]]
        m["utilisation"] = Spread.of(per_link).mean if any(u is not None for u in per_link) else None
        m["mean_queue_pkts"] = statistics.fmean(r["q_bytes"] for r in records) / topo.data_frame_bytes
    if exp.long_flows and run["meta"].get("events"):
        m["to_fair_share_s"] = _times_to_fair_share(run, topo, C)
    if len({f.start_s for f in exp.long_flows}) > 1 and len(topo.bottlenecks) == 1:
        m["join_rtts"] = _join_times(run, topo, C)
    if exp.long_flows:
        window = _steady_window(run, exp)
        shares = _steady_goodputs(run, window)
        m["throughput_mbps"] = sum(shares) / 1e3 if shares else None
        steady = [r for r in records if window and window[0] <= r["time"] <= window[1]]
        if steady and len(topo.bottlenecks) == 1:
            m["steady_utilisation"] = utilisation(steady)
            m["steady_queue_pkts"] = statistics.fmean(r["q_bytes"] for r in steady) / topo.data_frame_bytes
        if shares and len(topo.bottlenecks) > 1:
            m["max_min"] = _against_max_min(run, shares)
            m["links"] = _per_link(run, records)
        if len(shares) >= 2:
            # With several bottlenecks fair is the max-min share, not an equal one: Jain's index of goodput over
            # share (Jain et al. 1984).
            fair = [goodput / share for goodput, share in m["max_min"].values()] if "max_min" in m else shares
            m["jain"] = jain_index(fair)
            m["rtt_ratio"] = _rtt_ratio(run, shares)
    return m


def _per_link(run: dict, records: list[dict]) -> dict[str, dict]:
    """Per shaped link ("s2:3"): its payload capacity, the share of it the long flows' max-min rates fill, and
    the run's utilisation and mean queue (the control loop's records over the time traffic was offered)."""
    topo = run["topology"]
    by_ip = {h.ip: name for name, h in topo.hosts.items()}
    paths = {f"{f['host']}->{by_ip[f['dst'].rsplit(':', 1)[0]]}": topo.path(f["host"], by_ip[f["dst"].rsplit(":", 1)[0]])
             for f in run["flows"]}
    capacity = {link: topo.payload_bps(run["meta"]["capacity_bps"][f"{link[0]}:{link[1]}"]) / 1e6
                for link in topo.bottlenecks}
    shares = max_min_shares(capacity, paths)
    links = {}
    for link in topo.bottlenecks:
        mine = [r for r in records if (r["switch"], r["port"]) == link]
        links[f"{link[0]}:{link[1]}"] = {
            "capacity_mbps": capacity[link],
            "max_min_use": sum(shares[n] for n, path in paths.items() if link in path) / capacity[link],
            "utilisation": utilisation(mine),
            "queue_pkts": statistics.fmean(r["q_bytes"] for r in mine) / topo.data_frame_bytes if mine else None}
    return links


def _against_max_min(run: dict, goodputs_kbps: list[float]) -> dict[str, tuple[float, float]]:
    """Per long flow ("h1->r3"): (goodput, max-min fair share), Mb/s of application bytes over the time all
    flows shared the network. RCP should give each flow the smallest R on its path: its max-min share."""
    topo = run["topology"]
    by_ip = {h.ip: name for name, h in topo.hosts.items()}
    names = [f"{f['host']}->{by_ip[f['dst'].rsplit(':', 1)[0]]}" for f in run["flows"]]
    capacity = {link: topo.payload_bps(run["meta"]["capacity_bps"][f"{link[0]}:{link[1]}"]) / 1e6
                for link in topo.bottlenecks}
    shares = max_min_shares(capacity, {n: topo.path(*n.split("->")) for n in names})
    return {n: (g / 1e3, shares[n]) for n, g in zip(names, goodputs_kbps)}


def _rtt_ratio(run: dict, shares: list[float]) -> float | None:
    """Goodput of the shortest-RTT long flow over that of the longest-RTT one; None when all RTTs are equal."""
    rtts = [_rtt(run["topology"], f["host"]) for f in run["flows"]]
    if len(set(rtts)) < 2:
        return None
    longest = shares[rtts.index(max(rtts))]
    return shares[rtts.index(min(rtts))] / longest if longest > 0 else math.inf


def _steady_window(run: dict, exp, settle_s: float = 2.0) -> tuple[float, float] | None:
    """The long flows' steady state (Unix s): the last half of the run, or from when the last flow started
    (+ settle_s) if that is later, to the last goodput sample of the first flow to stop. The PCC papers judge
    fairness after convergence, and the RCP papers utilisation and queue at equilibrium; a whole-run figure
    mixes in the start and the joins, and periods the flows did not share (a flow alone at the end gets the
    whole link). None when a long flow has no samples."""
    starts = [f["start_unix_s"] for f in run["flows"]]
    series = [run["rates"].get(f"{f['host']}/{f['flow_id']}", []) for f in run["flows"]]
    if not starts or not all(series):
        return None
    begin = min(starts) + max(max(f.start_s for f in exp.long_flows) + settle_s, exp.duration_s / 2)
    return begin, min(samples[-1][0] for samples in series)


def _steady_goodputs(run: dict, window: tuple[float, float] | None) -> list[float]:
    """Per long flow, mean goodput (kb/s) over the steady window (`_steady_window`; TCP's samples come from
    TCP_INFO, the others' from their acknowledgements). Empty when a flow has no samples there."""
    if window is None:
        return []
    begin, end = window
    series = [run["rates"][f"{f['host']}/{f['flow_id']}"] for f in run["flows"]]
    shares = []
    for samples in series:
        inside = [v for t, v in samples if begin <= t <= end]
        if not inside:
            return []
        shares.append(statistics.fmean(inside))
    return shares


def _times_to_fair_share(run: dict, topo, C_bps: float) -> list[float | None]:
    """Per bandwidth event: seconds until every long flow's goodput settled at its new fair share
    (the new capacity's payload rate over the flows), None if one never did before the next event."""
    events = run["meta"]["events"]
    ends = [e["unix_s"] for e in events[1:]] + [math.inf]
    times = []
    for event, until in zip(events, ends):
        share_kbps = topo.payload_bps(C_bps * event["bottleneck_scale"]) / len(run["rates"]) / 1e3 \
            if run["rates"] else 0
        per_flow = [time_to_share(samples, event["unix_s"], share_kbps, until_s=until)
                    for samples in run["rates"].values()] if share_kbps > 0 else [None]
        times.append(None if None in per_flow else max(per_flow))
    return times


def _join_times(run: dict, topo, C_bps: float) -> list[float | None]:
    """Per long flow that joins others (in start order), in its own RTTs: from its first SYN until its goodput
    (averaged over 0.1 s) stays within 20% of its new fair share, the capacity's payload rate over the flows then
    running, for 0.5 s; None if that did not happen before the next flow joined or the first one ended."""
    flows = sorted(run["flows"], key=lambda f: f["start_unix_s"])
    ends = [f["start_unix_s"] + (f.get("fct_s") or math.inf) for f in flows]
    payload = topo.payload_bps(C_bps) / 1e3      # kb/s of application bytes
    times = []
    for k, f in enumerate(flows[1:], start=2):
        until = min([g["start_unix_s"] for g in flows[k:]] + ends)
        samples = run["rates"].get(f"{f['host']}/{f['flow_id']}", [])
        t = time_to_share(samples, f["start_unix_s"], payload / k, until_s=until, window_s=0.1, hold_s=0.5) \
            if samples else None
        times.append(None if t is None else t / _rtt(topo, f["host"]))
    return times


def _rtt(topo, host: str) -> float:
    """Base RTT of a flow from this sender: every topology puts the whole delay on the sender's link."""
    return 2 * topo.hosts[host].delay_ms / 1000


# Per-run figures of the summary table: (key, header, format). A column shows where some row has a value.
COLUMNS = [
    ("load_measured", "load offered (measured)", ".2f"),
    ("mean_fct_s", "mean FCT (s)", ".3f"),
    ("p95_fct_s", "p95 FCT (s)", ".3f"),
    ("fct_ratio_ps", "mean FCT / FCT_PS", ".2f"),
    ("fct_ratio_ps_nominal", "mean FCT / FCT_PS at nominal load", ".2f"),
    ("mean_fct_sender_s", "mean FCT at sender (s)", ".3f"),
    ("utilisation", "utilisation", ".2f"),
    ("mean_queue_pkts", "mean queue (pkts)", ".1f"),
    ("steady_utilisation", "utilisation, steady state", ".2f"),
    ("steady_queue_pkts", "mean queue, steady state (pkts)", ".1f"),
    ("jain", "Jain", ".3f"),
    ("throughput_mbps", "throughput (Mb/s)", ".2f"),
    ("rtt_ratio", "throughput short / long RTT", ".2f"),
]
# Figures per event of a run, in order (bandwidth changes, flows joining): "never" where one did not happen.
EVENT_COLUMNS = [
    ("to_fair_share_s", "to fair share after each event (s)", ".1f"),
    ("join_rtts", "joining flow to its fair share (RTTs)", ".1f"),
]
# Flow-size bins of the FCT tables, in DATA packets: decades, as the RCP papers plot FCT.
PACKET_DECADES = [1, 10, 100, 1000, 10_000, 100_000, 1_000_000]


def aggregate(per_seed: list[dict]) -> dict:
    """One scheme's runs (one per seed) as one row: each figure's Spread over the valid runs; flows pooled."""
    valid = [m for m in per_seed if m["valid"]]
    agg = {"runs": len(per_seed), "valid_runs": len(valid),
           "problems": [f"seed {m['seed']}: {p}" for m in per_seed if not m["valid"] for p in m["problems"]],
           "flows": sum(m["flows"] for m in valid), "done": sum(m["done"] for m in valid),
           "load": valid[0].get("load") if valid else None,
           "per_seed": valid}
    for key, _, _ in COLUMNS:
        agg[key] = Spread.of(m.get(key) for m in valid)
    for key, _, _ in EVENT_COLUMNS:
        per_seed = [m[key] for m in valid if key in m]
        if per_seed:
            agg[key] = [list(times) for times in zip(*per_seed)]
    if any("max_min" in m for m in valid):
        flows = valid[0]["max_min"]
        agg["max_min"] = {f: (Spread.of(m["max_min"][f][0] for m in valid if f in m.get("max_min", {})), share)
                          for f, (_, share) in flows.items()}
    if any("links" in m for m in valid):
        links = next(m["links"] for m in valid if "links" in m)
        agg["links"] = {link: {"capacity_mbps": first["capacity_mbps"], "max_min_use": first["max_min_use"],
                               **{key: Spread.of(m["links"][link][key] for m in valid if "links" in m)
                                  for key in ("utilisation", "queue_pkts")}}
                        for link, first in links.items()}
    return agg


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


def size_tables(rows: list[tuple[str, dict]], reference: str | None) -> str:
    """Mean FCT / FCT_PS per flow size (all seeds' flows pooled; the seeds' lowest and highest in brackets),
    and each scheme's mean FCT over the reference scheme's (RCP) per size."""
    with_flows = [(s, agg) for s, agg in rows if any("fct_flows" in m for m in agg["per_seed"])]
    if not with_flows:
        return ""
    pooled = {s: bin_fct([f for m in agg["per_seed"] for f in m.get("fct_flows", [])], PACKET_DECADES, "packets")
              for s, agg in with_flows}
    per_seed = {s: [{r["lo"]: r for r in bin_fct(m["fct_flows"], PACKET_DECADES, "packets")}
                    for m in agg["per_seed"] if "fct_flows" in m] for s, agg in with_flows}
    los = sorted({r["lo"] for rs in pooled.values() for r in rs})
    label = {lo: f"{lo}-{PACKET_DECADES[PACKET_DECADES.index(lo) + 1] - 1}" for lo in los}

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
        lines.append(f"| {label[lo]} | " + " | ".join(cells) + " |")
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
            lines.append(f"| {label[lo]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def max_min_table(rows: list[tuple[str, dict]]) -> str:
    """Per long flow: its max-min fair share and each scheme's goodput against it (several bottlenecks)."""
    with_shares = [(s, agg) for s, agg in rows if "max_min" in agg]
    if not with_shares:
        return ""
    flows = list(with_shares[0][1]["max_min"])
    schemes = [s for s, _ in with_shares]
    lines = ["Goodput against the max-min fair share (Mb/s of application bytes; goodput / share in brackets):", "",
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


def setting(exp, variant) -> str:
    """The network and the runs, in one paragraph: what a reader needs to judge the numbers."""
    topology = variant.topology
    links = []
    for sw, port in topology.bottlenecks:
        p = topology.switch(sw).ports[port]
        links.append(f"{p.capacity_bps / 1e6:.1f} Mb/s ({p.queue_rate_pps} packets/s of {topology.data_frame_bytes} "
                     f"bytes), queue {p.queue_depth_pkts} packets")
    rtts = sorted({round(2 * topology.hosts[h].delay_ms, 3) for h in topology.senders})
    load = (f"Poisson arrivals at a nominal load of {variant.load:g} of the link's packet slots (the table gives "
            f"the load each run's arrivals offered, which FCT_PS = 1.5 RTT + L / (C (1 - load)) uses, with L the "
            f"flow's data frames). " if variant.load else "")
    return (f"Bottleneck{'s' if len(links) > 1 else ''}: {'; '.join(links)}. Base RTT {', '.join(f'{r:g}' for r in rtts)} ms. "
            f"{load}Seeds {', '.join(map(str, exp.seeds))}: each figure is the mean over the valid seeds, "
            f"(lowest-highest) where they differ. FCT: first SYN sent to last byte received.")


def write_report(exp, root: Path, runs: list) -> str:
    """runs: (variant, scheme, run_dir, meta), one per seed. Writes summary.md and plots; returns the text."""
    loaded = defaultdict(list)          # (variant label, scheme) -> runs, one per seed
    variants = {}
    for variant, scheme, run_dir, meta in runs:
        run = load_run(run_dir, meta, exp, variant.topology)
        run["metrics"] = dict(metrics(run, exp), seed=meta.get("seed", 1))
        loaded[(variant.label, scheme)].append(run)
        variants[variant.label] = variant
    by_variant = defaultdict(list)
    for (label, scheme), scheme_runs in loaded.items():
        by_variant[label].append((scheme, aggregate([r["metrics"] for r in scheme_runs])))
    reference = next((s for s in exp.schemes if exp.scheme(s).cc == "rcp"), None)
    parts = [f"# {exp.name}", "", exp.description, "", "Schemes:", ""]
    parts += [f"- {s}: {exp.scheme(s).describe(exp.rcp_params(exp.scheme(s)))}" for s in exp.schemes]
    parts += [""]
    for label, rows in by_variant.items():
        if label:
            parts += [f"## {label}", ""]
        parts += [setting(exp, variants[label]), ""]
        parts += [summary_table(rows), ""]
        invalid = [f"- {scheme}, {p}" for scheme, agg in rows for p in agg["problems"]]
        if invalid:
            parts += ["Invalid runs (left out of the figures):", *invalid, ""]
        for extra in (size_tables(rows, reference), max_min_table(rows)):
            if extra:
                parts += [extra, ""]
    plots = make_plots(exp, root, loaded, by_variant)
    parts += ["Plots:", *[f"- {p.name}" for p in plots], ""]
    text = "\n".join(parts)
    (root / "summary.md").write_text(text)
    return text


def make_plots(exp, root: Path, loaded: dict, by_variant: dict) -> list[Path]:
    plots = []
    for label, scheme_runs in _group(loaded).items():
        suffix = f"_{label}" if label else ""
        if exp.poisson:
            plots.append(_plot_fct(root / f"fct_vs_size{suffix}.png", scheme_runs))
        # Time series of one run per scheme: the first valid seed's.
        first = {s: next((r for r in runs if r["meta"]["valid"]), runs[0]) for s, runs in scheme_runs.items()}
        if exp.long_flows:
            plots.append(_plot_rates(root / f"rates_over_time{suffix}.png", first))
        plots.append(_plot_router(root / f"router_over_time{suffix}.png", first))
    if len(by_variant) > 1:
        plots.append(_plot_sweep(root / "sweep.png", exp, by_variant))
    return plots


def _group(loaded: dict) -> dict:
    grouped = defaultdict(dict)
    for (label, scheme), runs in loaded.items():
        grouped[label][scheme] = runs
    return grouped


def _plot_fct(path: Path, runs: dict) -> Path:
    """Mean and max FCT per size bin, all valid seeds' flows pooled; bars: the seeds' lowest and highest mean."""
    fig, (ax, ax_ratio) = plt.subplots(1, 2, figsize=(12, 4.5))
    valid = {s: [r["metrics"] for r in rs if r["metrics"]["valid"] and "fct_flows" in r["metrics"]]
             for s, rs in runs.items()}
    edges = log_bins([f["size_bytes"] for ms in valid.values() for m in ms for f in m["fct_flows"]])
    for scheme, ms in valid.items():
        rows = bin_fct([f for m in ms for f in m["fct_flows"]], edges) if ms and edges else []
        if not rows:
            continue
        seeds = [{r["lo"]: r for r in bin_fct(m["fct_flows"], edges)} for m in ms]
        centres = [(r["lo"] * r["hi"]) ** 0.5 for r in rows]
        colour = None
        for axis, key in ((ax, "mean_fct_s"), (ax_ratio, "mean_ratio_ps")):
            ys = [r[key] for r in rows]
            lo = [y - min(s[r["lo"]][key] for s in seeds if r["lo"] in s) for y, r in zip(ys, rows)]
            hi = [max(s[r["lo"]][key] for s in seeds if r["lo"] in s) - y for y, r in zip(ys, rows)]
            bars = axis.errorbar(centres, ys, yerr=[lo, hi], fmt="o-", capsize=2, color=colour, label=f"{scheme} mean")
            colour = bars[0].get_color()
        ax.plot(centres, [r["max_fct_s"] for r in rows], "x--", color=colour, label=f"{scheme} max")
    any_run = next(r for rs in runs.values() for r in rs)
    C = min(any_run["meta"]["capacity_bps"].values())
    loads = [m["load_measured"] for ms in valid.values() for m in ms]
    topo = any_run["topology"]
    rtt = _rtt(topo, topo.senders[0])
    if edges and loads and max(loads) < 1:
        rho = statistics.fmean(loads)
        xs = [edges[0] * (edges[-1] / edges[0]) ** (i / 50) for i in range(51)]
        ax.plot(xs, [fct_ps(service_bytes(x, topo.mss_bytes, topo.data_frame_bytes), C, rho, rtt) for x in xs],
                "k-", lw=2, label=f"processor sharing (load {rho:.2f})")
    ax.set(xscale="log", yscale="log", xlabel="flow size (bytes)", ylabel="FCT (s)",
           title=f"FCT vs size, load {any_run['meta']['load']}, C {C / 1e6:.1f} Mb/s, RTT {rtt * 1000:g} ms")
    ax_ratio.axhline(1.0, color="k", lw=1)
    ax_ratio.set(xscale="log", xlabel="flow size (bytes)", ylabel="mean FCT / FCT_PS", title="FCT relative to PS")
    ax.legend(fontsize=7)
    ax_ratio.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _binned(samples: list[tuple[float, float]], t0: float) -> tuple[list[float], list[float]]:
    bins = defaultdict(list)
    for t, v in samples:
        bins[int((t - t0) / SAMPLE_BIN_S)].append(v)
    keys = sorted(bins)
    return [k * SAMPLE_BIN_S for k in keys], [statistics.fmean(bins[k]) for k in keys]


def _t0(runs: dict) -> dict:
    """Per scheme, the start of its run (first control record or first flow)."""
    starts = {}
    for scheme, run in runs.items():
        times = [link[0]["time"] for link in run["control"].values() if link] + [f["start_unix_s"] for f in run["flows"]]
        starts[scheme] = min(times) if times else 0.0
    return starts


def _plot_rates(path: Path, runs: dict) -> Path:
    t0 = _t0(runs)
    fig, axes = plt.subplots(2, len(runs), figsize=(4 * len(runs), 6), squeeze=False, sharey="row")
    for col, (scheme, run) in enumerate(runs.items()):
        ax, ax_jain = axes[0][col], axes[1][col]
        series = {}
        for flow, samples in sorted(run["rates"].items()):
            xs, ys = _binned(samples, t0[scheme])
            series[flow] = dict(zip(xs, ys))
            ax.plot(xs, [y / 1e3 for y in ys], label=flow)
        C = min(run["meta"]["capacity_bps"].values())
        ax.axhline(C / 1e6, color="k", lw=0.8, ls=":")
        ax.set(title=f"{scheme} (seed {run['metrics']['seed']})", xlabel="time (s)", ylabel="goodput (Mb/s)")
        if series:
            ax.legend(fontsize=6)
        else:
            ax.text(0.5, 0.5, "no per-flow samples\n(the kernel's TCP has no trace)", ha="center",
                    transform=ax.transAxes)
        times = sorted({t for s in series.values() for t in s})
        jain = [(t, jain_index([s[t] for s in series.values() if t in s])) for t in times
                if sum(t in s for s in series.values()) >= 2]
        if jain:
            ax_jain.plot([t for t, _ in jain], [j for _, j in jain])
        ax_jain.set(ylim=(0, 1.05), xlabel="time (s)", ylabel="Jain's index (active flows)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plot_router(path: Path, runs: dict) -> Path:
    t0 = _t0(runs)
    fig, axes = plt.subplots(2, len(runs), figsize=(4 * len(runs), 6), squeeze=False)
    for col, (scheme, run) in enumerate(runs.items()):
        ax, ax_q = axes[0][col], axes[1][col]
        frame = run["topology"].data_frame_bytes
        for (sw, port), ctl in run["control"].items():
            name = f" {sw}:{port}" if len(run["control"]) > 1 else ""
            ts = [r["time"] - t0[scheme] for r in ctl]
            ax.plot(ts, [r["y_bps"] / 1e6 for r in ctl], lw=0.5, alpha=0.6, label=f"y{name} (input rate)")
            line, = ax.plot(ts, [r["R_bps"] / 1e6 for r in ctl], lw=1.2, label=f"R{name} (RCP's rate)")
            ax.plot(ts, [r["C_bps"] / 1e6 for r in ctl], ":", color=line.get_color(), lw=0.8, label=f"C{name}")
            ax_q.plot(ts, [r["q_bytes"] / frame for r in ctl], lw=0.6, label=name.strip() or None)
        ax.set(title=f"{scheme} (seed {run['metrics']['seed']}): bottleneck", xlabel="time (s)", ylabel="Mb/s")
        ax.legend(fontsize=6)
        ax_q.set(xlabel="time (s)", ylabel="queue (packets)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plot_sweep(path: Path, exp, by_variant: dict) -> Path:
    """Each figure against the sweep: mean over the valid seeds, bars from the lowest to the highest."""
    metric_names = [("throughput_mbps", "throughput (Mb/s)"), ("mean_fct_s", "mean FCT (s)"),
                    ("fct_ratio_ps", "mean FCT / FCT_PS"), ("p95_fct_s", "p95 FCT (s)"), ("jain", "Jain's index"),
                    ("rtt_ratio", "throughput short / long RTT")]
    present = [(k, name) for k, name in metric_names
               if any(agg.get(k) is not None for rows in by_variant.values() for _, agg in rows)]
    fig, axes = plt.subplots(1, len(present), figsize=(4.5 * len(present), 4), squeeze=False)
    labels = list(by_variant)
    for ax, (key, name) in zip(axes[0], present):
        for scheme in [s for s, _ in by_variant[labels[0]]]:
            spreads = [next((agg.get(key) for s, agg in by_variant[label] if s == scheme), None) for label in labels]
            ys = [sp.mean if sp else float("nan") for sp in spreads]
            err = [[sp.mean - sp.lo if sp else 0 for sp in spreads], [sp.hi - sp.mean if sp else 0 for sp in spreads]]
            ax.errorbar(range(len(labels)), ys, yerr=err, fmt="o-", capsize=3, label=scheme)
        ax.set_xticks(range(len(labels)), labels, rotation=20, fontsize=7)
        ax.set(ylabel=name, title=f"{exp.name}: {name}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

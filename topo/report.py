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

from topo.analysis import bin_fct, fct_ps, jain_index, log_bins, percentile, time_to_share  # noqa: E402

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
    control = []
    for sw, port in topology.bottlenecks:
        control += [r for r in read_jsonl(run_dir / f"control_{sw}.jsonl") if r["port"] == port]
    return {"meta": meta, "flows": flows, "rates": rates, "control": control, "topology": topology}


def metrics(run: dict, exp) -> dict:
    topo = run["topology"]
    C = min(run["meta"]["capacity_bps"].values())
    done = [f for f in run["flows"] if f.get("completed") and f.get("fct_s")]
    m = {"flows": len(run["flows"]), "done": len(done), "valid": run["meta"]["valid"],
         "problems": run["meta"]["problems"]}
    if done:
        fcts = [f["fct_s"] for f in done]
        m["mean_fct_s"], m["p50_fct_s"], m["p95_fct_s"] = statistics.fmean(fcts), percentile(fcts, 50), percentile(fcts, 95)
    load = run["meta"].get("load")
    if done and load:
        m["fct_ratio_ps"] = statistics.fmean(
            f["fct_s"] / fct_ps(f["size_bytes"], C, load, _rtt(topo, f["host"])) for f in done)
    busy = [r for r in run["control"] if r["y_bps"] > 0]
    if run["control"]:
        # y counts arrivals, drops included: a link offered more than C is fully used, not more.
        m["utilisation"] = statistics.fmean(min(r["y_bps"] / r["C_bps"], 1.0) for r in busy) if busy else 0.0
        m["mean_queue_pkts"] = statistics.fmean(r["q_bytes"] for r in run["control"]) / topo.data_frame_bytes
    if exp.long_flows and run["meta"].get("events"):
        m["to_fair_share_s"] = _times_to_fair_share(run, topo, C)
    if exp.long_flows:
        shares = _steady_goodputs(run, exp)
        m["throughput_mbps"] = sum(shares) / 1e3 if shares else None
        if len(shares) >= 2:
            m["jain"] = jain_index(shares)
            m["rtt_ratio"] = _rtt_ratio(run, shares)
    return m


def _rtt_ratio(run: dict, shares: list[float]) -> float | None:
    """Goodput of the shortest-RTT long flow over that of the longest-RTT one; None when all RTTs are equal."""
    rtts = [_rtt(run["topology"], f["host"]) for f in run["flows"]]
    if len(set(rtts)) < 2:
        return None
    longest = shares[rtts.index(max(rtts))]
    return shares[rtts.index(min(rtts))] / longest if longest > 0 else math.inf


def _steady_goodputs(run: dict, exp, settle_s: float = 2.0) -> list[float]:
    """Per long flow, mean goodput (kb/s) over the time all long flows shared the link: from when the last
    one started (+ settle_s) to when the first one stopped (TCP's samples come from TCP_INFO, the others'
    from their acknowledgements). Empty when a flow has no samples there: a whole-life average would mix
    periods the flows did not share (a flow alone at the end gets the whole link)."""
    starts = [f["start_unix_s"] for f in run["flows"]]
    series = [run["rates"].get(f"{f['host']}/{f['flow_id']}", []) for f in run["flows"]]
    if not starts or not all(series):
        return []
    begin = min(starts) + max(f.start_s for f in exp.long_flows) + settle_s
    end = min(samples[-1][0] for samples in series)
    shares = []
    for samples in series:
        window = [v for t, v in samples if begin <= t <= end]
        if not window:
            return []
        shares.append(statistics.fmean(window))
    return shares


def _times_to_fair_share(run: dict, topo, C_bps: float) -> list[float | None]:
    """Per bandwidth event: seconds until every long flow's goodput settled at its new fair share
    (the new capacity's payload rate over the flows), None if one never did before the next event."""
    events = run["meta"]["events"]
    ends = [e["unix_s"] for e in events[1:]] + [math.inf]
    payload_share = topo.mss_bytes / topo.data_frame_bytes / len(run["rates"]) if run["rates"] else 0
    times = []
    for event, until in zip(events, ends):
        share_kbps = C_bps * event["bottleneck_scale"] * payload_share / 1e3
        per_flow = [time_to_share(samples, event["unix_s"], share_kbps, until_s=until)
                    for samples in run["rates"].values()] if share_kbps > 0 else [None]
        times.append(None if None in per_flow else max(per_flow))
    return times


def _rtt(topo, host: str) -> float:
    """Base RTT of a flow from this sender: every topology puts the whole delay on the sender's link."""
    return 2 * topo.hosts[host].delay_ms / 1000


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def summary_table(rows: list[tuple[str, dict]]) -> str:
    settling = any("to_fair_share_s" in m for _, m in rows)
    mixed_rtts = any(m.get("rtt_ratio") is not None for _, m in rows)
    header = ["scheme", "flows done", "mean FCT (s)", "p95 FCT (s)", "FCT / FCT_PS", "utilisation",
              "mean queue (pkts)", "Jain", "throughput (Mb/s)"] + (["throughput short / long RTT"] if mixed_rtts else []) \
        + (["to fair share after each event (s)"] if settling else [])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for scheme, m in rows:
        if not m["valid"]:
            lines.append(f"| {scheme} | INVALID: {'; '.join(m['problems'])} |" + "  |" * (len(header) - 2))
            continue
        cells = [scheme, f"{m['done']}/{m['flows']}", _fmt(m.get('mean_fct_s'), '.3f'), _fmt(m.get('p95_fct_s'), '.3f'),
                 _fmt(m.get('fct_ratio_ps'), '.2f'), _fmt(m.get('utilisation'), '.2f'),
                 _fmt(m.get('mean_queue_pkts'), '.1f'), _fmt(m.get('jain'), '.3f'), _fmt(m.get('throughput_mbps'), '.2f')]
        if mixed_rtts:
            cells.append(_fmt(m.get("rtt_ratio"), ".2f"))
        if settling:
            cells.append(" / ".join("never" if t is None else f"{t:.1f}" for t in m.get("to_fair_share_s", [])) or "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_report(exp, root: Path, runs: list) -> str:
    """runs: (variant, scheme, run_dir, meta). Writes summary.md and plots; returns the summary text."""
    by_variant = defaultdict(list)
    loaded = {}
    for variant, scheme, run_dir, meta in runs:
        run = load_run(run_dir, meta, exp, variant.topology)
        loaded[(variant.label, scheme)] = run
        by_variant[variant.label].append((scheme, metrics(run, exp)))
    parts = [f"# {exp.name}", "", exp.description, ""]
    for label, rows in by_variant.items():
        if label:
            parts += [f"## {label}", ""]
        parts += [summary_table(rows), ""]
    plots = make_plots(exp, root, loaded, by_variant)
    parts += ["Plots:", *[f"- {p}" for p in plots], ""]
    text = "\n".join(parts)
    (root / "summary.md").write_text(text)
    return text


def make_plots(exp, root: Path, loaded: dict, by_variant: dict) -> list[Path]:
    plots = []
    for (label, scheme_runs) in _group(loaded).items():
        suffix = f"_{label}" if label else ""
        if exp.poisson:
            plots.append(_plot_fct(root / f"fct_vs_size{suffix}.png", exp, scheme_runs))
        if exp.long_flows:
            plots.append(_plot_rates(root / f"rates_over_time{suffix}.png", scheme_runs))
        plots.append(_plot_router(root / f"router_over_time{suffix}.png", scheme_runs))
    if len(by_variant) > 1:
        plots.append(_plot_sweep(root / "sweep.png", exp, by_variant))
    return plots


def _group(loaded: dict) -> dict:
    grouped = defaultdict(dict)
    for (label, scheme), run in loaded.items():
        grouped[label][scheme] = run
    return grouped


def _plot_fct(path: Path, exp, runs: dict) -> Path:
    fig, (ax, ax_ratio) = plt.subplots(1, 2, figsize=(12, 4.5))
    all_sizes = [f["size_bytes"] for run in runs.values() for f in run["flows"] if f.get("completed")]
    edges = log_bins(all_sizes)
    any_run = next(iter(runs.values()))
    C = min(any_run["meta"]["capacity_bps"].values())
    load = any_run["meta"]["load"]
    rtt = _rtt(any_run["topology"], any_run["topology"].senders[0])
    for scheme, run in runs.items():
        done = [f for f in run["flows"] if f.get("completed") and f.get("fct_s")]
        rows = bin_fct(done, edges, C, load, rtt) if done and edges else []
        if not rows:
            continue
        centres = [(r["lo"] * r["hi"]) ** 0.5 for r in rows]
        line, = ax.plot(centres, [r["mean_fct_s"] for r in rows], "o-", label=f"{scheme} mean")
        ax.plot(centres, [r["max_fct_s"] for r in rows], "x--", color=line.get_color(), label=f"{scheme} max")
        ax_ratio.plot(centres, [r["mean_ratio_ps"] for r in rows], "o-", label=scheme)
    if edges:
        xs = [edges[0] * (edges[-1] / edges[0]) ** (i / 50) for i in range(51)]
        ax.plot(xs, [fct_ps(x, C, load, rtt) for x in xs], "k-", lw=2, label="processor sharing")
    ax.set(xscale="log", yscale="log", xlabel="flow size (bytes)", ylabel="FCT (s)",
           title=f"FCT vs size, load {load}, C {C / 1e6:.1f} Mb/s")
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
        times = [r["time"] for r in run["control"][:1]] + [f["start_unix_s"] for f in run["flows"]]
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
        ax.set(title=scheme, xlabel="time (s)", ylabel="goodput (Mb/s)")
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
        ctl = run["control"]
        ts = [r["time"] - t0[scheme] for r in ctl]
        ax.plot(ts, [r["y_bps"] / 1e6 for r in ctl], lw=0.5, alpha=0.6, label="y (input rate)")
        ax.plot(ts, [r["R_bps"] / 1e6 for r in ctl], lw=1.2, label="R (RCP's rate)")
        ax.plot(ts, [r["C_bps"] / 1e6 for r in ctl], "k:", lw=0.8, label="C")
        ax.set(title=f"{scheme}: bottleneck", xlabel="time (s)", ylabel="Mb/s")
        ax.legend(fontsize=6)
        frame = run["topology"].data_frame_bytes
        ax_q.plot(ts, [r["q_bytes"] / frame for r in ctl], lw=0.6)
        ax_q.set(xlabel="time (s)", ylabel="queue (packets)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plot_sweep(path: Path, exp, by_variant: dict) -> Path:
    metric_names = [("throughput_mbps", "throughput (Mb/s)"), ("p50_fct_s", "median FCT (s)"),
                    ("p95_fct_s", "p95 FCT (s)"), ("jain", "Jain's index"),
                    ("rtt_ratio", "throughput short / long RTT")]
    present = [(k, name) for k, name in metric_names
               if any(m.get(k) is not None for rows in by_variant.values() for _, m in rows)]
    fig, axes = plt.subplots(1, len(present), figsize=(4.5 * len(present), 4), squeeze=False)
    labels = list(by_variant)
    for ax, (key, name) in zip(axes[0], present):
        schemes = [s for s, _ in by_variant[labels[0]]]
        for scheme in schemes:
            ys = [next((m.get(key) if m["valid"] else None for s, m in by_variant[l] if s == scheme), None)
                  for l in labels]
            ax.plot(range(len(labels)), [y if y is not None else float("nan") for y in ys], "o-", label=scheme)
        ax.set_xticks(range(len(labels)), labels, rotation=20, fontsize=7)
        ax.set(ylabel=name, title=f"{exp.name}: {name}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

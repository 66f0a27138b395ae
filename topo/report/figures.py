"""The summary's figures, each from the same eligible data as the tables, each with its data as CSV beside it.

A panel without data says why on the panel itself: a figure is never silently empty.
"""

from __future__ import annotations

import csv
import math
import statistics
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from p4rcp.analysis import bin_fct, fct_ps, jain_index, load_unit, log_bins, service_bytes  # noqa: E402
from topo.report.metrics import _rtt, sample_shares  # noqa: E402

SAMPLE_BIN_S = 0.5   # per-flow rates over time are averaged over this
DPI = 110


def make_plots(exp, root: Path, loaded: dict, by_variant: dict) -> list[tuple[str, Path]]:
    """Every figure of an experiment: (caption, path). loaded: (variant label, scheme) -> runs, one per seed;
    by_variant: label -> [(scheme, aggregate)], the rows the tables show."""
    plots = []
    for label, scheme_runs in _group(loaded).items():
        suffix = f"_{label}" if label else ""
        where = f" ({label})" if label else ""
        rows = dict(by_variant[label])
        if exp.poisson:
            plots.append((f"Flow completion time against flow size, and against processor sharing{where}",
                          plot_fct(root / f"fct_vs_size{suffix}.png", rows, scheme_runs)))
        # Time series of one run per scheme: the first valid seed's (an invalid one only if none is valid).
        first = {s: next((r for r in runs if r["meta"]["valid"]), runs[0]) for s, runs in scheme_runs.items()}
        if exp.long_flows:
            plots.append((f"Each long flow's goodput over time, and Jain's index of the flows running{where}",
                          plot_rates(root / f"rates_over_time{suffix}.png", first)))
        plots.append((f"The bottleneck over time: input rate y, RCP's rate R, capacity C and queue{where}",
                      plot_router(root / f"router_over_time{suffix}.png", first, exp)))
    if len(by_variant) > 1:
        plots.append(("Each figure against the sweep", plot_sweep(root / "sweep.png", exp, by_variant)))
    return plots


def _group(loaded: dict) -> dict:
    grouped = defaultdict(dict)
    for (label, scheme), runs in loaded.items():
        grouped[label][scheme] = runs
    return grouped


def _write_csv(path: Path, header: list[str], rows: list[list]) -> None:
    with open(path.with_suffix(".csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def _no_data(ax, why: str) -> None:
    ax.text(0.5, 0.5, why, ha="center", va="center", transform=ax.transAxes, fontsize=9, color="0.3", wrap=True)


def readable_ylim(lo: float, hi: float, least_share: float = 0.1) -> tuple[float, float]:
    """y limits spanning at least least_share of the values' size: seeds that agree to the fourth digit
    otherwise fill the axis, and a Jain's index of 0.99999999 against 1 looks like a fall."""
    size = max(abs(lo), abs(hi))
    if hi - lo >= least_share * size or size == 0:
        return lo, hi
    mid, half = (lo + hi) / 2, least_share * size / 2
    return mid - half, mid + half


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


# The FCT figure's flow-size bins: five per decade in packets, finer than the tables' decades, so that the
# points resolve flow size as the RCP papers' figures do. Each point sits at the mean size of the flows in its
# bin, not at the bin's centre: a bin's mean FCT belongs to its flows' sizes (every flow of 1000 packets is
# drawn at 1000, where processor sharing's curve gives their bound).
FIGURE_BINS_PER_DECADE = 5


def figure_bins(flows: list[dict], edges: list[float] | None = None) -> list[dict]:
    """The FCT figure's points from flows carrying "packets", "fct_s" and "ps_ratio": per non-empty bin (of
    `edges`, by default FIGURE_BINS_PER_DECADE per decade over the flows' sizes), its edges, flows, smallest,
    largest and mean size (packets), mean and max FCT, the mean of the flows' FCT_PS (processor sharing for exactly these flows) and
    the mean FCT / FCT_PS."""
    if edges is None:
        edges = log_bins([f["packets"] for f in flows], FIGURE_BINS_PER_DECADE)
    points = []
    for row in bin_fct(flows, edges, "packets"):
        inside = [f for f in flows if row["lo"] <= f["packets"] < row["hi"]
                  or (row["hi"] == edges[-1] and f["packets"] == row["hi"])]
        sizes = [f["packets"] for f in inside]
        points.append(dict(row, smallest=min(sizes), largest=max(sizes), mean_packets=statistics.fmean(sizes),
                           mean_ps_s=statistics.fmean(f["fct_s"] / f["ps_ratio"] for f in inside)))
    return points


def plot_fct(path: Path, rows: dict, runs: dict) -> Path:
    """Mean (and max) FCT against flow size, five bins per decade, each point at its flows' mean size, with
    the processor-sharing curve; and mean FCT / FCT_PS per bin. Every valid seed's flows pooled; bars from
    the seeds' lowest to highest mean in the bin. The CSV beside it holds every point and the mean FCT_PS of
    its flows (ps_fct_s), so that the figure can be drawn again from the CSV alone."""
    fig, (ax, ax_ratio) = plt.subplots(1, 2, figsize=(12, 4.8))
    table = []
    largest = 1.0
    for scheme, agg in rows.items():
        seeds = [m["fct_flows"] for m in agg.get("per_seed", []) if m.get("fct_flows")]
        if not seeds:
            continue
        pooled = [f for flows in seeds for f in flows]
        edges = log_bins([f["packets"] for f in pooled], FIGURE_BINS_PER_DECADE)
        points = figure_bins(pooled, edges)
        per_seed = [{p["lo"]: p for p in figure_bins(flows, edges)} for flows in seeds]
        xs = [p["mean_packets"] for p in points]
        largest = max(largest, max(xs))
        colour = None
        for axis, key in ((ax, "mean_fct_s"), (ax_ratio, "mean_ratio_ps")):
            ys = [p[key] for p in points]
            spread = [[s[p["lo"]][key] for s in per_seed if p["lo"] in s] for p in points]
            err = [[y - min(v) for y, v in zip(ys, spread)], [max(v) - y for y, v in zip(ys, spread)]]
            bars = axis.errorbar(xs, ys, yerr=err, fmt="o-", ms=4, capsize=2, color=colour, label=f"{scheme}, mean")
            colour = bars[0].get_color()
        ax.plot(xs, [p["max_fct_s"] for p in points], "x:", color=colour, label=f"{scheme}, max")
        table += [[scheme, p["smallest"], p["largest"], p["flows"], f"{p['mean_packets']:.2f}",
                   f"{p['mean_fct_s']:.6f}", f"{p['max_fct_s']:.6f}", f"{p['mean_ps_s']:.6f}",
                   f"{p['mean_ratio_ps']:.4f}"] for p in points]
    any_run = next(r for rs in runs.values() for r in rs)
    topo = any_run["topology"]
    C = min(any_run["meta"]["capacity_bps"].values())
    rtt = _rtt(topo, topo.senders[0])
    loads = [load for _, agg in rows.items() if agg.get("fct_by_size") for load in agg["fct_by_size"]["bound_loads"]]
    nominal_seeds = sorted({s for _, agg in rows.items() if agg.get("fct_by_size")
                            for s in agg["fct_by_size"]["nominal_bound_seeds"]})
    title = f"load {any_run['meta']['load']:g}, C {C / 1e6:.1f} Mb/s, RTT {rtt * 1000:g} ms"
    if table:
        rho = statistics.fmean(loads)
        ps_x = [10 ** (k / 20) for k in range(0, int(20 * math.log10(largest)) + 2)]
        note = f"; nominal load for seed(s) {', '.join(map(str, nominal_seeds))}" if nominal_seeds else ""
        unit = load_unit(any_run["meta"])
        ax.plot(ps_x, [fct_ps(service_bytes(x * topo.mss_bytes, topo.mss_bytes, topo.data_frame_bytes, unit), C, rho, rtt)
                       for x in ps_x], "k-", lw=2, label=f"processor sharing (load {rho:.2f}{note})")
        ax_ratio.axhline(1.0, color="k", lw=2, label="processor sharing")
        if nominal_seeds:
            title += f"\nseed(s) {', '.join(map(str, nominal_seeds))} offered a load >= 1: their FCT_PS uses the nominal load"
        ax.legend(fontsize=7)
        ax_ratio.legend(fontsize=7)
    else:
        for axis in (ax, ax_ratio):
            _no_data(axis, "no completed flow in a valid run\n(summary.md lists the invalid runs and why)")
    for axis in (ax, ax_ratio):
        axis.set_xscale("log")
        axis.set_xlim(0.7, 1.4 * largest)
        axis.set_xlabel(f"flow size (packets of {topo.mss_bytes} B)\n{FIGURE_BINS_PER_DECADE} bins a decade, "
                        f"each point at its flows' mean size")
    ax.set(yscale="log", ylabel="FCT (s): first SYN sent to last byte received", title=f"FCT, {title}")
    ax_ratio.set(ylabel="mean FCT / FCT_PS", title="FCT relative to processor sharing")
    _write_csv(path, ["scheme", "packets_from", "packets_to", "flows", "mean_packets", "mean_fct_s", "max_fct_s",
                      "ps_fct_s", "mean_fct_over_ps"], table)
    return _save(fig, path)


def _binned(samples: list[tuple[float, float]], t0: float) -> tuple[list[float], list[float]]:
    bins = defaultdict(list)
    for t, v in samples:
        bins[int((t - t0) / SAMPLE_BIN_S)].append(v)
    keys = sorted(bins)
    return [k * SAMPLE_BIN_S for k in keys], [statistics.fmean(bins[k]) for k in keys]


def _t0(run: dict) -> float:
    """The start of a run: its first control record or first flow."""
    times = [link[0]["time"] for link in run["control"].values() if link] + [f["start_unix_s"] for f in run["flows"]]
    return min(times) if times else 0.0


def _flow_label(key: str) -> str:
    host, flow_id = key.split("/")
    return f"{host}'s flow ({flow_id})"


def _run_title(scheme: str, run: dict) -> str:
    valid = "" if run["meta"]["valid"] else ", INVALID"
    return f"{scheme} (seed {run['metrics']['seed']}{valid})"


# Flows that share a link fairly draw the same line: each later flow's line is thinner and broken, so that
# the lines under it still show and every flow the legend names can be seen.
FLOW_LINE_STYLES = ("-", "--", "-.", ":")


def flow_line_style(index: int, flows: int) -> dict:
    return {"ls": FLOW_LINE_STYLES[index % len(FLOW_LINE_STYLES)], "lw": 0.8 + 1.6 * (flows - 1 - index) / max(1, flows - 1)}


def plot_rates(path: Path, runs: dict) -> Path:
    fig, axes = plt.subplots(2, len(runs), figsize=(4.5 * len(runs), 6.5), squeeze=False, sharey="row")
    table = []
    for col, (scheme, run) in enumerate(runs.items()):
        ax, ax_jain = axes[0][col], axes[1][col]
        t0 = _t0(run)
        series = {}
        for i, (flow, samples) in enumerate(sorted(run["rates"].items())):
            xs, ys = _binned(samples, t0)
            series[flow] = dict(zip(xs, ys))
            ax.plot(xs, [y / 1e3 for y in ys], label=_flow_label(flow), **flow_line_style(i, len(run["rates"])))
            table += [[scheme, flow, f"{x:.2f}", f"{y / 1e3:.4f}"] for x, y in zip(xs, ys)]
        C = min(run["meta"]["capacity_bps"].values())
        payload = run["topology"].payload_bps(C) / 1e6
        ax.axhline(payload, color="k", lw=0.8, ls=":", label=f"C in payload ({payload:.1f} Mb/s)")
        ax.set(title=_run_title(scheme, run), xlabel="time (s)", ylabel="goodput (Mb/s of payload)")
        if series:
            ax.legend(fontsize=6, title=f"flows (sender host, flow id); {SAMPLE_BIN_S:g} s means", title_fontsize=6)
        else:
            _no_data(ax, "no per-flow samples in this run")
        times = sorted({t for s in series.values() for t in s})
        shares = sample_shares(run)            # flows not alike: fair is goodput / max-min share, as in the tables
        jain = [(t, jain_index([s[t] / shares.get(flow, 1.0) for flow, s in series.items() if t in s]))
                for t in times if sum(t in s for s in series.values()) >= 2]
        if jain:
            ax_jain.plot([t for t, _ in jain], [j for _, j in jain])
        else:
            _no_data(ax_jain, "fewer than two flows at once")
        ax_jain.set(ylim=(0, 1.05), xlabel="time (s)",
                    ylabel="Jain's index of goodput / max-min share" if shares else "Jain's index (flows running)")
    _write_csv(path, ["scheme", "flow", "time_s", "goodput_mbps"], table)
    return _save(fig, path)


def plot_router(path: Path, runs: dict, exp) -> Path:
    """Per scheme: the bottleneck's input rate y, capacity C and (for RCP) R, in Mb/s of frames as the
    router counts them, and its queue. The time after the nominal duration (the drain of the flows still
    running) is shaded; bandwidth changes are marked."""
    fig, axes = plt.subplots(2, len(runs), figsize=(4.5 * len(runs), 6.5), squeeze=False)
    table = []
    for col, (scheme, run) in enumerate(runs.items()):
        ax, ax_q = axes[0][col], axes[1][col]
        frame = run["topology"].data_frame_bytes
        t0 = _t0(run)
        uses_R = exp.scheme(scheme).cc == "rcp"
        for (sw, port), ctl in run["control"].items():
            name = f" {sw}:{port}" if len(run["control"]) > 1 else ""
            ts = [r["time"] - t0 for r in ctl]
            ax.plot(ts, [r["y_bps"] / 1e6 for r in ctl], lw=0.5, alpha=0.6, label=f"y{name}: input rate")
            line, = ax.plot(ts, [r["C_bps"] / 1e6 for r in ctl], ":", lw=1, label=f"C{name}: capacity")
            if uses_R:
                ax.plot(ts, [r["R_bps"] / 1e6 for r in ctl], lw=1.2, color=line.get_color(), label=f"R{name}: RCP's rate")
            ax_q.plot(ts, [r["q_bytes"] / frame for r in ctl], lw=0.6, label=name.strip() or None)
            table += [[scheme, f"{sw}:{port}", f"{t:.3f}", f"{r['y_bps'] / 1e6:.4f}",
                       f"{r['R_bps'] / 1e6:.4f}" if uses_R else "",
                       f"{r['C_bps'] / 1e6:.4f}", f"{r['q_bytes'] / frame:.1f}"] for t, r in zip(ts, ctl)]
        if not run["control"] or not any(run["control"].values()):
            _no_data(ax, "no control-loop records")
        end = max((r["time"] - t0 for ctl in run["control"].values() for r in ctl), default=exp.duration_s)
        for axis in (ax, ax_q):
            if end > exp.duration_s:
                axis.axvspan(exp.duration_s, end, color="0.9", zorder=0,
                             label="drain (after the nominal duration)" if axis is ax else None)
            for event in run["meta"].get("events", []):
                axis.axvline(event["unix_s"] - t0, color="0.4", lw=0.8, ls="--")
        title = _run_title(scheme, run) + ("" if uses_R else f": R not used by {exp.scheme(scheme).cc}")
        ax.set(title=title, xlabel="time (s)", ylabel="Mb/s of frames")
        ax.legend(fontsize=6)
        ax_q.set(xlabel="time (s)", ylabel="queue (packets)")
    _write_csv(path, ["scheme", "link", "time_s", "y_mbps", "R_mbps", "C_mbps", "queue_pkts"], table)
    return _save(fig, path)


SWEEP_FIGURES = [("throughput_mbps", "throughput (Mb/s)"), ("mean_fct_s", "mean FCT (s)"),
                 ("fct_ratio_ps", "mean FCT / FCT_PS"), ("p95_fct_s", "p95 FCT (s)"), ("jain", "Jain's index"),
                 ("rtt_ratio", "throughput short / long RTT")]


def plot_sweep(path: Path, exp, by_variant: dict) -> Path:
    """Each figure against the sweep: mean over the valid seeds, bars from the lowest to the highest."""
    present = [(k, name) for k, name in SWEEP_FIGURES
               if any(agg.get(k) is not None for rows in by_variant.values() for _, agg in rows)]
    fig, axes = plt.subplots(1, max(1, len(present)), figsize=(4.5 * max(1, len(present)), 4), squeeze=False)
    labels = list(by_variant)
    table = []
    for ax, (key, name) in zip(axes[0], present):
        for scheme in [s for s, _ in by_variant[labels[0]]]:
            spreads = [next((agg.get(key) for s, agg in by_variant[label] if s == scheme), None) for label in labels]
            ys = [sp.mean if sp else float("nan") for sp in spreads]
            err = [[sp.mean - sp.lo if sp else 0 for sp in spreads], [sp.hi - sp.mean if sp else 0 for sp in spreads]]
            ax.errorbar(range(len(labels)), ys, yerr=err, fmt="o-", capsize=3, label=scheme)
            table += [[key, scheme, label, "" if sp is None else f"{sp.mean:.4f}", "" if sp is None else f"{sp.lo:.4f}",
                       "" if sp is None else f"{sp.hi:.4f}"] for label, sp in zip(labels, spreads)]
        ax.set_xticks(range(len(labels)), labels, rotation=20, fontsize=7)
        ax.set(ylabel=name, title=f"{exp.name}: {name}")
        ax.set_ylim(*readable_ylim(*ax.get_ylim()))
        ax.ticklabel_format(axis="y", useOffset=False)
        ax.legend(fontsize=7)
    if not present:
        _no_data(axes[0][0], "no figure has a value in any valid run")
    _write_csv(path, ["figure", "scheme", "sweep_point", "mean", "lowest", "highest"], table)
    return _save(fig, path)

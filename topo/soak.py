"""make soak: fct-short at load 0.9 for an hour on bmv2, one network the whole time, and what the hour did to it.

python -m topo.soak [--duration 3600] [--window 600] [--memory-every 60] [--out results]

One run of RCP (seed 1), every switch's control loop in its own process (the standalone controller, whose
memory is then its own). Each window replays the same Poisson arrivals (`repeat_every_s`, one window's draw
at exactly load 0.9): with a fresh draw per window, Pareto sizes move a window's mean FCT / FCT_PS by
several percent on their own, and the windows would compare draws instead of the network's state. It
records the resident memory of every process each minute (memory.jsonl: simple_switch, the control planes,
the receivers, the traffic generators, the link emulators, the runner), and then judges the hour window by
window (ten minutes each):

- memory: each process's growth after its first window, (largest later sample - sample at the end of the
  first window) / that sample; the target is at most MEMORY_GROWTH_LIMIT;
- void windows: a window in which the machine limited the run by the runner's own checks (CPU saturated
  or taken by other work in more than 10% of its samples, a stall: p4rcp/monitor.py, p4rcp/stalls.py), or
  in which a switch fell behind its input for good (frames the kernel delivered that bmv2 never read); and
  whether the run as a whole was valid;
- FCT: per window, the flows that started in it, their mean FCT / FCT_PS at the load they offered and their
  median FCT; the largest distance of a window's mean ratio from the hour's, against FCT_STABILITY_LIMIT.

It writes soak.json and soak.md beside the run and prints the latter. Nothing of it runs in `make test`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

from p4rcp.analysis import bound_load, fct_ps, load_unit, measured_load, service_bytes
from p4rcp.monitor import (CPU_SATURATED_PCT, OTHER_WORK_PCT, SATURATED_SAMPLE_SHARE, SWITCH_SATURATED_PCT)
from p4rcp.stalls import find_stalls
from p4rcp.toolchain import ROOT
from topo.experiment import load_experiment
from topo.mininet import runner
from topo.report import read_jsonl
from topo.report.runs import load_run
from topo.schedule import RunDir

EXPERIMENT = ROOT / "topo" / "experiments" / "fct-short.toml"
MEMORY_GROWTH_LIMIT = 0.05
FCT_STABILITY_LIMIT = 0.05
LOST_FRAMES = 10            # a window whose unread backlog grew by more for good lost input


def windows(start: float, duration_s: float, window_s: float) -> list[tuple[float, float]]:
    n = max(1, round(duration_s / window_s))
    return [(start + i * window_s, start + (i + 1) * window_s) for i in range(n)]


def memory_growth(memory: list[dict], first_window_s: float) -> dict[str, dict]:
    """Per process: its resident memory at the end of the first window, the largest after, and the growth."""
    out = {}
    labels = sorted({label for sample in memory for label in sample["rss_bytes"]})
    for label in labels:
        series = [(s["elapsed_s"], s["rss_bytes"][label]) for s in memory if label in s["rss_bytes"]]
        base = [rss for t, rss in series if t <= first_window_s]
        later = [rss for t, rss in series if t > first_window_s]
        if not base or not later:
            out[label] = {"samples": len(series), "growth": None}
            continue
        out[label] = {"samples": len(series), "base_bytes": base[-1], "max_after_bytes": max(later),
                      "growth": (max(later) - base[-1]) / base[-1]}
    return out


def void_windows(cpu: list[dict], stalls: list, spans: list[tuple[float, float]], switches: list[str]) -> list[list[str]]:
    """Per window, why the machine voided it (empty: it did not)."""
    out = []
    for lo, hi in spans:
        why = []
        samples = [s for s in cpu if lo <= s["time"] < hi]
        n = len(samples)
        if n:
            if sum(s["total_pct"] >= CPU_SATURATED_PCT for s in samples) / n > SATURATED_SAMPLE_SHARE:
                why.append("total CPU saturated")
            if sum(s["other_pct"] >= OTHER_WORK_PCT for s in samples) / n > SATURATED_SAMPLE_SHARE:
                why.append("other work on the machine")
            for sw in switches:
                if sum((s.get(f"{sw}_pct") or 0) >= SWITCH_SATURATED_PCT for s in samples) / n > SATURATED_SAMPLE_SHARE:
                    why.append(f"{sw} saturated its core")
                unread = [s[f"{sw}_unread"] for s in samples if f"{sw}_unread" in s]
                if len(unread) >= 20 and min(unread[-10:]) - min(unread[:10]) > LOST_FRAMES:
                    why.append(f"{sw} lost {min(unread[-10:]) - min(unread[:10])} frames of input")
        why += [stall.describe(lo) for stall in stalls if lo <= stall.at_unix_s < hi]
        out.append(why)
    return out


def fct_windows(flows: list[dict], topology, load: float, spans: list[tuple[float, float]],
                unit: str = "slots") -> list[dict]:
    """Per window: the flows that started in it, the load they offered, the completed ones' mean FCT / FCT_PS
    and median FCT. FCT_PS takes the window's offered load, as a run's report takes the run's: at a nominal
    0.9, a window offering 0.88 or 0.92 moves 1 / (1 - load) by a fifth. A window offering 1 or more, where the
    bound does not exist, takes the nominal load."""
    C = min(topology.switch(s).ports[p].capacity_bps for s, p in topology.bottlenecks)
    out = []
    for lo, hi in spans:
        started = [f for f in flows if lo <= f["start_unix_s"] < hi]
        offered = measured_load([f["size_bytes"] for f in started], topology.mss_bytes, topology.data_frame_bytes,
                                C, hi - lo, unit)
        done = [f for f in started if f.get("completed") and f.get("fct_recv_s") is not None]
        ratios = [f["fct_recv_s"] / fct_ps(service_bytes(f["size_bytes"], topology.mss_bytes,
                                                         topology.data_frame_bytes, unit),
                                           C, bound_load(offered, load), 2 * topology.hosts[f["host"]].delay_ms / 1000)
                  for f in done]
        out.append({"flows": len(started), "completed": len(done), "load_offered": offered,
                    "mean_fct_ratio_ps": statistics.fmean(ratios) if ratios else None,
                    "median_fct_s": statistics.median(f["fct_recv_s"] for f in done) if done else None})
    return out


def judge(run_dir: Path, meta: dict, exp, window_s: float) -> dict:
    """The soak's figures from a finished run's directory."""
    [variant] = exp.variants()
    topology = variant.topology
    run = load_run(run_dir, meta, exp, topology)
    start = meta["start_unix_s"]
    spans = windows(start, exp.duration_s, window_s)
    records = [r for sw in topology.switches for r in read_jsonl(run_dir / f"control_{sw}.jsonl") if r["time"] >= start]
    stalls = find_stalls(records, runner.stall_limits(topology, exp.rcp_params(exp.scheme("rcp"))))
    memory = memory_growth(read_jsonl(run_dir / "memory.jsonl"), window_s)
    voids = void_windows(read_jsonl(run_dir / "cpu.jsonl"), stalls, spans, sorted(topology.switches))
    fct = fct_windows(run["flows"], topology, variant.load, spans, load_unit(meta))
    plans = [runner.traffic_plan(RunDir(run_dir).stderr(src.sender, "poisson")) or {} for src in exp.poisson]
    replayed = bool(plans) and all(plan.get("repeat_every_s") == window_s for plan in plans)
    ratios = [w["mean_fct_ratio_ps"] for w in fct if w["mean_fct_ratio_ps"] is not None]
    overall = statistics.fmean(ratios) if ratios else None
    return {"run": str(run_dir), "duration_s": exp.duration_s, "window_s": window_s, "valid": meta["valid"],
            "problems": meta["problems"], "windows_replay_arrivals": replayed, "memory": memory,
            "memory_growth_max": max((m["growth"] for m in memory.values() if m["growth"] is not None), default=None),
            "void_windows": sum(bool(w) for w in voids), "windows": [
                {"from_s": lo - start, "to_s": hi - start, "void": why, **f} for (lo, hi), why, f in zip(spans, voids, fct)],
            "fct_ratio_ps": overall,
            "fct_spread": max(abs(r - overall) for r in ratios) / overall if overall else None}


def _time(seconds: float, window_s: float) -> str:
    """A time of the summary: in minutes when the windows are whole minutes, else in seconds."""
    return f"{seconds / 60:g} min" if window_s % 60 == 0 else f"{seconds:g} s"


def summary(result: dict) -> str:
    pct = lambda x: "n/a" if x is None else f"{100 * x:+.1f}%"
    lines = [f"# Soak: fct-short, RCP, load 0.9, {_time(result['duration_s'], result['window_s'])}", "",
             f"Run: {result['run']}; valid as a whole: {'yes' if result['valid'] else 'NO: ' + '; '.join(result['problems'])}",
             "", f"## Resident memory (growth after the first {_time(result['window_s'], result['window_s'])}; target at most "
             f"{MEMORY_GROWTH_LIMIT:.0%})", "", "| process | samples | at the first window's end | largest after | growth |",
             "|---|---|---|---|---|"]
    for label, m in result["memory"].items():
        lines.append(f"| {label} | {m['samples']} | {m.get('base_bytes', 0) / 2**20:.1f} MiB | "
                     f"{m.get('max_after_bytes', 0) / 2**20:.1f} MiB | {pct(m['growth'])} |")
    lines += ["", f"Largest growth: {pct(result['memory_growth_max'])}", "",
              f"## Windows ({result['void_windows']} void; each window's mean FCT / FCT_PS within "
              f"{pct(result['fct_spread'])} of the hour's {result['fct_ratio_ps'] or float('nan'):.3f}; target within "
              f"{FCT_STABILITY_LIMIT:.0%})",
              "", ("Every window replays the same arrivals (one window's draw). " if result["windows_replay_arrivals"]
                   else "Arrivals drawn over the whole run, each window its own. ") +
              "FCT_PS at each window's offered load (topo/soak.py, fct_windows).", "",
              "| window | flows | completed | load offered | mean FCT / FCT_PS | median FCT | void |",
              "|---|---|---|---|---|---|---|"]
    for w in result["windows"]:
        ratio = "n/a" if w["mean_fct_ratio_ps"] is None else f"{w['mean_fct_ratio_ps']:.3f}"
        median = "n/a" if w["median_fct_s"] is None else f"{w['median_fct_s']:.3f} s"
        span = f"{_time(w['from_s'], result['window_s'])} to {_time(w['to_s'], result['window_s'])}"
        lines.append(f"| {span} | {w['flows']} | {w['completed']} | {w['load_offered']:.3f} | {ratio} | {median} | "
                     f"{'; '.join(w['void']) or 'no'} |")
    lines += ["", "## Verdict", ""] + [f"- {line}" for line in verdict(result)]
    return "\n".join(lines) + "\n"


def verdict(result: dict) -> list[str]:
    """The targets, PASS or FAIL each, with the figure."""
    def mark(ok):
        return "PASS" if ok else "FAIL"
    growth, spread = result["memory_growth_max"], result["fct_spread"]
    grown = max(result["memory"], key=lambda k: result["memory"][k]["growth"] or 0, default="none")
    return [f"memory: {mark(growth is not None and growth <= MEMORY_GROWTH_LIMIT)}, largest growth "
            f"{'n/a' if growth is None else f'{growth:+.1%}'} ({grown}); target at most {MEMORY_GROWTH_LIMIT:.0%}",
            f"void windows: {mark(result['valid'] and result['void_windows'] == 0)}, {result['void_windows']} of "
            f"{len(result['windows'])}{'' if result['valid'] else ', and the run as a whole is void'}; target 0",
            f"FCT: {mark(spread is not None and spread <= FCT_STABILITY_LIMIT)}, each window within "
            f"{'n/a' if spread is None else f'{spread:.1%}'} of the hour's mean FCT / FCT_PS; target "
            f"{FCT_STABILITY_LIMIT:.0%}"]


def soak_experiment(duration_s: float, window_s: float):
    """fct-short for RCP, seed 1, `duration_s` long, every Poisson source replaying one window's arrivals."""
    exp = load_experiment(EXPERIMENT, schemes=["rcp"], duration_s=duration_s, seeds=[1])
    return dataclasses.replace(exp, poisson=[dataclasses.replace(src, repeat_every_s=window_s)
                                             for src in exp.poisson])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m topo.soak", description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=3600.0, help="seconds of arrivals (default %(default)s)")
    ap.add_argument("--window", type=float, default=600.0, help="seconds per window (default %(default)s)")
    ap.add_argument("--memory-every", type=float, default=60.0, help="seconds between memory samples")
    ap.add_argument("--out", default=str(ROOT / "results"))
    ap.add_argument("--judge", metavar="SOAK_DIR", help="judge a finished soak again (results/soak/TIMESTAMP): "
                                                         "its soak.json and soak.md are written anew, nothing runs")
    args = ap.parse_args(argv)
    if not 0 < args.window <= args.duration or args.memory_every <= 0:
        ap.error("need 0 < --window <= --duration and --memory-every > 0")
    if args.judge:
        return judge_again(Path(args.judge), args.window)
    exp = soak_experiment(args.duration, args.window)
    try:
        runner.preflight()
    except (RuntimeError, OSError) as e:
        print(f"topo.soak: {e}", file=sys.stderr)
        return 2
    root = Path(args.out) / "soak" / time.strftime("%Y%m%d-%H%M%S")
    out = RunDir(root / "run")
    [variant] = exp.variants()
    options = runner.RunOptions(environment=runner.environment(), control_plane="process",
                                memory_sample_s=args.memory_every)
    meta = runner.run_scheme(exp, variant, "rcp", out, seed=1, options=options)
    write(root, judge(out.root, meta, exp, args.window))
    return 0


def write(root: Path, result: dict) -> None:
    (root / "soak.json").write_text(json.dumps(result, indent=1))
    text = summary(result)
    (root / "soak.md").write_text(text)
    print(text)


def judge_again(root: Path, window_s: float) -> int:
    run_file = root / "run" / "run.json"
    if not run_file.is_file():
        print(f"topo.soak: {run_file} not found: --judge takes a soak's directory (results/soak/TIMESTAMP)",
              file=sys.stderr)
        return 2
    meta = json.loads(run_file.read_text())
    exp = load_experiment(EXPERIMENT, schemes=["rcp"], duration_s=meta["duration_s"], seeds=[1])
    write(root, judge(root / "run", meta, exp, window_s))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The suite on an engine: the experiments its rows need, run once each with RCP and TCP Reno, their reports,
then the table.

ns-3: every run of every experiment is one task of Dask's distributed scheduler (topo/evaluate/cluster.py),
as many at a time as the cluster has workers; each experiment's directory gets the report `topo.run` writes
(summary.md and its figures). Mininet: each experiment through the runner's own command line, one after
another (its runs need the whole machine), writing its usual results directory.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from topo.evaluate.conditions import RCP_SCHEME, SEEDS, TCP_SCHEME, Condition, Invocation, invocations
from topo.evaluate.figures import load_results
from topo.evaluate.table import Row, make_row, write_table
from topo.experiment import Experiment, load_invocation
from topo.host_check import check_with_hosts

PROJECT_ROOT = Path(__file__).resolve().parents[2]


# The CPU time of an ns-3 run: importing ns-3 in its fresh process, then about this much per data packet the
# bottleneck carries (measured on this project's 2-core machine: 47-75 us per packet for talk-example1 and 2,
# fct-short and flash-crowd, RCP and TCP alike).
IMPORT_CPU_S = 12.0
CPU_S_PER_PACKET = 60e-6


def estimate_cpu_s(exp: Experiment) -> float:
    """What all the runs of an experiment should cost in CPU seconds on ns-3: each run's import and the packets
    its bottleneck carries at its load (a long flow fills the link) over the run's duration."""
    total = 0.0
    for variant in exp.variants():
        t = variant.topology
        pps = min(t.switch(s).ports[p].capacity_bps for s, p in t.bottlenecks) / (8 * t.data_frame_bytes)
        busy = 1.0 if exp.long_flows else variant.load
        total += len(exp.seeds) * len(exp.schemes) * (IMPORT_CPU_S + CPU_S_PER_PACKET * pps * busy * exp.duration_s)
    return total


def experiments_of(invs: list[Invocation]) -> list[Experiment]:
    """Each invocation's experiment, validated and judged by the host binary before anything runs."""
    out = []
    for inv in invs:
        [exp] = load_invocation(inv.experiment, list(inv.schemes), inv.duration_s, list(inv.seeds))
        check_with_hosts(exp)
        out.append(exp)
    return out


def run_ns3(invs: list[Invocation], out: Path, scheduler: str | None, workers: int | None,
            say: Callable[[str], None]) -> dict[str, tuple[Path, str]]:
    """Every run on ns-3 through Dask; per experiment its results directory and, if a run failed, why."""
    from topo.ns3 import runner
    from topo.evaluate.cluster import run_jobs
    from topo.report import write_report

    experiments = experiments_of(invs)
    why = runner.refuse(experiments)
    if why:
        raise ValueError(why)
    env = runner.environment()
    jobs = {inv.experiment: runner.make_jobs(exp, out / exp.name, {}, env) for inv, exp in zip(invs, experiments)}
    every = [job for js in jobs.values() for job in js]
    started, count = time.monotonic(), [0]

    def done(job, meta, failure):
        count[0] += 1
        what = failure or f"{meta['simulated_s']:.0f} s simulated in {meta['wall_s']:.0f} s"
        say(f"[{count[0]} of {len(every)}, {time.monotonic() - started:.0f} s] {job.label}: {what}")

    results = run_jobs(every, scheduler, workers, done,
                       lambda slots: say(f"{len(every)} ns-3 runs of {len(experiments)} experiments, {slots} at a time: "
                                         f"about {sum(map(estimate_cpu_s, experiments)) / slots / 60:.0f} minutes "
                                         f"on idle cores"))
    roots = {}
    for inv, exp in zip(invs, experiments):
        mine = jobs[inv.experiment]
        failures = [results[job.root] for job in mine if isinstance(results[job.root], str)]
        if not failures:
            write_report(exp, out / exp.name, [(job.variant, job.scheme, job.root, results[job.root]) for job in mine])
        roots[inv.experiment] = (out / exp.name, "; ".join(failures))
    return roots


def mininet_command(inv: Invocation, out: Path) -> list[str]:
    """The runner's command line for an experiment of the Mininet subset, with this Python."""
    return [sys.executable, *inv.command("mininet")[1:], "--out", str(out)]


def run_mininet(invs: list[Invocation], out: Path, say: Callable[[str], None]) -> dict[str, tuple[Path, str]]:
    """Each experiment through `python -m topo.run` on Mininet, one after another; its results directory is the
    one the runner names ("results: PATH")."""
    roots = {}
    for inv in invs:
        command = mininet_command(inv, out)
        say(" ".join(command))
        proc = subprocess.Popen(command, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True)
        root = None
        for line in proc.stdout:
            if line.startswith("results: "):
                root = Path(line.removeprefix("results: ").strip())
            else:
                sys.stdout.write(line)
        status = proc.wait()
        failure = "" if status == 0 and root else f"python -m topo.run {inv.experiment} exited with status {status}"
        roots[inv.experiment] = (root or out / inv.experiment, failure)
    return roots


def rows_of(conditions: list[Condition], engine: str, roots: dict[str, tuple[Path, str]], table_dir: Path,
            rcp: str = RCP_SCHEME) -> list[Row]:
    """The table's rows from the experiments' results directories, RCP's side the runs of preset `rcp`."""
    loaded = {}
    rows = []
    for c in conditions:
        if not c.runs:
            rows.append(make_row(c, engine, None, None))
            continue
        root, failure = roots[c.experiment]
        if failure:
            rows.append(make_row(c, engine, None, None, failure=f"run failed: {failure}"))
            continue
        if c.experiment not in loaded:
            loaded[c.experiment] = load_results(root)[1]
        by = loaded[c.experiment]
        summary = root / "summary.md"
        where = str(summary.relative_to(table_dir)) if summary.is_relative_to(table_dir) else str(summary)
        tcp = None if c.tcp_in_runs else by.get((c.variant, TCP_SCHEME))
        rows.append(make_row(c, engine, by.get((c.variant, rcp)), tcp, results=where))
    return rows


def run_suite(conditions: list[Condition], engine: str, out: Path, *, scheduler: str | None = None,
              workers: int | None = None, seeds: tuple[int, ...] = SEEDS,
              say: Callable[[str], None] = print, command: str = "", rcp: str = RCP_SCHEME) -> tuple[list[Row], str]:
    """The suite's rows on an engine for the RCP preset `rcp` (the default `rcp` unless another is to be
    compared), the table written into out (table.md, .csv, .json, the experiments' results directories below
    it); returns the rows and the Markdown. `command`: the command line that makes the table again, kept in
    table.json."""
    invs = invocations(conditions, seeds, rcp)
    started = time.monotonic()
    if engine == "ns3":
        roots = run_ns3(invs, out, scheduler, workers, say)
    elif engine == "mininet":
        roots = run_mininet(invs, out, say)
    else:
        raise ValueError(f"engine must be ns3 or mininet, got {engine!r}")
    rows = rows_of(conditions, engine, roots, out, rcp)
    minutes = (time.monotonic() - started) / 60
    preface = (f"# Evaluation: preset {rcp} against {TCP_SCHEME}, {engine} engine\n\n"
               f"Seeds {', '.join(map(str, seeds))}; {sum(1 for c in conditions if c.runs)} conditions run of "
               f"{len(conditions)}, {len(invs)} experiments, {minutes:.1f} minutes. Each cell is the mean over the "
               f"valid seeds (their range in brackets); targets judge the worst seed (docs/evaluate.md).")
    run = {"command": command, "engine": engine, "preset": rcp, "seeds": list(seeds), "wall_s": round(minutes * 60, 1)}
    return rows, write_table(rows, out, preface, run)

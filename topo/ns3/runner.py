"""`python -m topo.run EXPERIMENT --engine ns3`: every run of an experiment (sweep point x seed x scheme)
on ns-3, as many at a time as the machine has cores, each in a process of its own; then the same report
as the Mininet runner's (topo/report), from the same run directories.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import platform
import shutil
import subprocess
import time
from pathlib import Path

import psutil

from p4rcp.presets import describe_routers
from topo.experiment import Experiment
from topo.ns3 import build
from topo.ns3.engine import ENGINE, Job, refusal, run_job, tcp_algorithm, tcp_ccs
from topo.ns3.network import RouterOptions
from topo.ns3.workload import plan
from topo.report import write_report
from topo.schedule import RunDir

# Engine options (--engine-option KEY=VALUE): where the router follows ns-2 instead of the P4 program, and
# how many runs at a time.
OPTIONS = {"rtt_samples": "RTT samples at departure (p4rcp) or arrival (ns-2's rcp.cc)",
           "queue_sample": "q: departure-depth, the queue the last departure left (p4rcp), enqueue-depth (an older p4rcp) or at-read (ns-2's rcp.cc)",
           "jobs": "runs at a time (default: the machine's cores)"}


def parse_options(pairs: list[str]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or key not in OPTIONS:
            known = "; ".join(f"{k}: {v}" for k, v in OPTIONS.items())
            raise ValueError(f"--engine-option takes KEY=VALUE with KEY one of {', '.join(OPTIONS)} ({known}), "
                             f"got {pair!r}")
        options[key] = value
    RouterOptions(**{k: v for k, v in options.items() if k != "jobs"})     # refuses unknown values
    if "jobs" in options and not (options["jobs"].isdigit() and int(options["jobs"]) > 0):
        raise ValueError(f"--engine-option jobs takes a positive integer, got {options['jobs']!r}")
    return options


def refuse(experiments: list[Experiment]) -> str | None:
    """The first thing this engine cannot run, in one line (before anything runs), or None."""
    why = build.unavailable()
    if why:
        return f"the ns-3 engine cannot run: {why}"
    for exp in experiments:
        for name in exp.schemes:
            why = refusal(exp, name)
            if why:
                return f"{exp.source.name}: {why}"
    return None


def environment() -> dict:
    """What produced the results: p4rcp's commit, ns-3 and the module, the machine."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=build.ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    cppyy = _version("cppyy")
    return {"commit": git("rev-parse", "--short=12", "HEAD") + (" (with uncommitted changes)" if dirty else ""),
            "engine": f"ns-3 {build.ns3_version()} (PyPI wheel, cppyy {cppyy}), module {build.library_path().name}",
            "kernel": platform.release(),
            "machine": f"{os.cpu_count()} CPUs, {psutil.virtual_memory().total / 2 ** 30:.0f} GiB"}


def _version(package: str) -> str:
    import importlib.metadata
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def describe(exp: Experiment, scheme_name: str, router: RouterOptions) -> str:
    """What a scheme ran on ns-3, for the summary (recorded in each run.json)."""
    scheme = exp.scheme(scheme_name)
    algorithm = tcp_algorithm(exp, scheme)
    tcp = (f"ns-3's TCP ({algorithm}), initial window {scheme.initcwnd or 10} segments, SACK and timestamps, "
           f"Linux's minimum RTO (200 ms) and send-buffer growth")
    if scheme.is_tcp:
        ran = tcp
    else:
        ran = f"{scheme.cc} senders (the Rust hosts' transport, linked into ns-3)"
        if algorithm:
            ran += f", and {', '.join(sorted(tcp_ccs(exp, scheme)))} flows with {tcp}"
        if scheme.cc == "rcp":
            ran += (f"; {describe_routers(exp.rcp_params(scheme))}; RTT samples at {router.rtt_samples}, queue "
                    f"{router.queue_sample}")
    return f"preset {scheme.preset}: {ran}" if scheme.preset else ran


def make_jobs(exp: Experiment, root: Path, options: dict[str, str], env: dict | None = None) -> list[Job]:
    """Every run of the experiment (sweep point x seed x scheme) as a Job writing below root, which gets a copy
    of the experiment file; the engine's module is built here, once, before any run loads it."""
    root.mkdir(parents=True)
    shutil.copy(exp.source, root / exp.source.name)
    router = RouterOptions(**{k: v for k, v in options.items() if k != "jobs"})
    env = env if env is not None else environment()
    build.build()
    jobs = []
    for variant in exp.variants():
        for seed in exp.seeds:
            for scheme in exp.schemes:
                sub = root / (f"{variant.label}/" if variant.label else "") / scheme / f"seed{seed}"
                schedule = plan(exp, variant, exp.scheme(scheme), seed, RunDir(sub))
                jobs.append(Job(exp, variant, scheme, seed, sub, schedule, router, env,
                                describe(exp, scheme, router)))
    return jobs


def run_experiment(exp: Experiment, results: Path, options: dict[str, str], progress) -> Path:
    """Every run of the experiment; returns its results directory (results/EXPERIMENT/TIMESTAMP)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    root = results / exp.name / stamp
    jobs = make_jobs(exp, root, options)
    workers = min(len(jobs), int(options.get("jobs", os.cpu_count() or 1)))
    metas = {}
    # A fresh process per run (maxtasksperchild=1): ns-3's simulator and its attribute defaults are
    # process-wide. An interrupted experiment terminates its runs.
    pool = multiprocessing.get_context("spawn").Pool(workers, maxtasksperchild=1)
    try:
        pending = {pool.apply_async(run_job, (job,)): job for job in jobs}
        started = time.monotonic()
        while pending:
            # A line every few seconds: the runs give no progress of their own until they end.
            progress.phase(f"[{exp.name}] {len(jobs) - len(pending)} of {len(jobs)} runs done, {workers} at a time, "
                           f"{time.monotonic() - started:.0f} s")
            time.sleep(progress.HEARTBEAT_S)
            for result in [r for r in pending if r.ready()]:
                job = pending.pop(result)
                meta = result.get()
                meta["parallel_runs"] = workers
                (job.root / "run.json").write_text(json.dumps(meta, indent=1))
                metas[job.root] = meta
                progress.run_done()
                progress.phase(f"[{job.label}] done: {meta['simulated_s']:.1f} s simulated in {meta['wall_s']:.1f} s "
                               f"of wall time, {meta['cpu_s']:.1f} s of CPU")
        pool.close()
    finally:
        pool.terminate()
        pool.join()
    progress.phase(f"[{exp.name}] writing the report")
    runs = [(job.variant, job.scheme, job.root, metas[job.root]) for job in jobs]
    print(write_report(exp, root, runs))
    return root


__all__ = ["ENGINE", "OPTIONS", "make_jobs", "parse_options", "refuse", "run_experiment"]

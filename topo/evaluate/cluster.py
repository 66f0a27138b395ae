"""The suite's ns-3 runs as tasks of Dask's distributed scheduler: one run, one task.

By default a LocalCluster of one single-threaded worker per core; given a scheduler's address, the workers of
a user's cluster (each started in a checkout of the project with its environment and `make hosts` done, e.g.
`dask worker tcp://HOST:8786` from the checkout, with .venv's Python). A task runs its job in a fresh Python
process in a scratch directory of its worker (topo/evaluate/job.py) and returns the run's files, so that the
workers need no file system shared with the machine that writes the table.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from topo.ns3.engine import Job

RUN_TIMEOUT_S = 3600


class RunFailed(RuntimeError):
    pass


def run_remote(job: Job) -> tuple[dict, dict[str, bytes]]:
    """In a worker: the job in a process of its own, below a scratch directory; returns its run.json and every
    file it wrote (path relative to the run's directory -> bytes). RunFailed with the end of its stderr."""
    import topo
    project = Path(topo.__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(prefix="p4rcp-run-") as tmp:
        scratch = Path(tmp)
        local = replace(job, root=scratch / "run")
        (scratch / "job.pickle").write_bytes(pickle.dumps(local))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(project), os.environ.get("PYTHONPATH")))))
        done = subprocess.run([sys.executable, "-m", "topo.evaluate.job", str(scratch / "job.pickle")], cwd=scratch,
                              env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        if done.returncode != 0:
            tail = " | ".join(done.stderr.strip().splitlines()[-3:])
            raise RunFailed(f"{job.label}: exited with status {done.returncode}: {tail}")
        files = {str(p.relative_to(local.root)): p.read_bytes() for p in local.root.rglob("*") if p.is_file()}
    if "run.json" not in files:
        raise RunFailed(f"{job.label}: wrote no run.json")
    return json.loads(files["run.json"]), files


def open_client(scheduler: str | None, workers: int | None):
    """A Dask client: of the scheduler at that address, else of a new LocalCluster of `workers` single-threaded
    worker processes (default: one per core). Returns (client, cluster or None)."""
    from distributed import Client, LocalCluster

    if scheduler:
        return Client(scheduler), None
    # The runs' own processes, not the workers, hold the memory (ns-3 takes about 700 MB): no worker limit.
    cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                           dashboard_address=None, memory_limit=0)
    return Client(cluster), cluster


def run_jobs(jobs: list[Job], scheduler: str | None = None, workers: int | None = None,
             done: Callable[[Job, dict | None, str], None] = lambda job, meta, failure: None,
             started: Callable[[int], None] = lambda slots: None) -> dict[Path, dict | str]:
    """Every job as a task; each run's files written into its directory as it ends. Per job's directory: its
    run.json, or why it failed. `started(slots)` once the cluster is up, with how many runs it runs at a time;
    `done(job, meta, failure)` after each run."""
    from distributed import as_completed

    client, cluster = open_client(scheduler, workers)
    try:
        slots = sum(client.nthreads().values())
        started(slots)
        futures = {client.submit(run_remote, job, key=f"p4rcp-run-{i}-{job.label.replace(' ', '-')}", pure=False): job
                   for i, job in enumerate(jobs)}
        out: dict[Path, dict | str] = {}
        for future in as_completed(futures):
            job = futures[future]
            try:
                meta, files = future.result()
            except Exception as e:          # a run's failure is its row's, not the suite's
                out[job.root] = str(e)
                done(job, None, str(e))
                continue
            meta["parallel_runs"] = slots
            files["run.json"] = json.dumps(meta, indent=1).encode()
            for name, data in files.items():
                path = job.root / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            out[job.root] = meta
            done(job, meta, "")
        return out
    finally:
        client.close()
        if cluster is not None:
            cluster.close()

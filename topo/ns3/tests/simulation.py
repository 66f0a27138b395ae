"""What the ns-3 engine's tests share: experiment files written for a test, one run of the engine in the test's
process (ns-3 loaded once per test module), and its records."""

from __future__ import annotations

import json
from pathlib import Path

from topo.experiment import Experiment, load_experiment
from topo.schedule import RunDir


def experiment(tmp_path: Path, name: str, *, schemes: list[str], duration_s: float, long_flows: list[dict] = (),
               poisson: list[dict] = (), load: float | None = None, **topology) -> Experiment:
    """A dumbbell experiment: `long_flows` and `poisson` are [[long]] and [[poisson]] tables, `topology` its
    topology_params (pairs: as many as the flows need)."""
    pairs = max([int(f["sender"][1:]) for f in [*long_flows, *poisson]])
    lines = ['description = "test"', 'topology = "dumbbell"', f"schemes = {json.dumps(schemes)}",
             f"duration_s = {duration_s}", "seeds = [1]", *([f"load = {load}"] if load else []),
             "[topology_params]", *(f"{k} = {json.dumps(v)}" for k, v in {"pairs": pairs, **topology}.items())]
    for kind, flows in (("long", long_flows), ("poisson", poisson)):
        for flow in flows:
            lines += [f"[[{kind}]]", *(f"{k} = {json.dumps(v)}" for k, v in flow.items())]
    path = tmp_path / f"{name}.toml"
    path.write_text("\n".join(lines) + "\n")
    return load_experiment(path)


def long_flows(starts: list[float]) -> list[dict]:
    """Long flows hK -> rK starting at the given times."""
    return [{"sender": f"h{i + 1}", "receiver": f"r{i + 1}", "start_s": start} for i, start in enumerate(starts)]


def start_run(ns3, exp: Experiment, root: Path, scheme: str | None = None, router=None):
    """A run of `scheme` (the experiment's first by default), seed 1, set up at simulated time 0."""
    from topo.ns3.engine import Job, Run
    from topo.ns3.network import RouterOptions
    from topo.ns3.workload import plan
    ns, p4rcp = ns3
    ns.Simulator.Destroy()
    ns.Config.Reset()
    variant = exp.variants()[0]
    scheme = scheme or exp.schemes[0]
    job = Job(exp, variant, scheme, 1, root, plan(exp, variant, exp.scheme(scheme), 1, RunDir(root)),
              router or RouterOptions())
    run = Run(ns, p4rcp, job)
    run.setup()
    return run


def finish(run) -> dict:
    """Simulates the run to its end and writes its records; returns its run.json."""
    run.simulate()
    return run.finish()


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]

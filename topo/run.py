"""python -m topo.run EXPERIMENT [--schemes rcp,tcp] [--duration S] [--out DIR] [--engine ns3]

Runs an experiment (or a suite such as `default`) for every scheme in
Mininet with bmv2 switches (or, with --engine ns3, in ns-3: topo/ns3), and
writes results/EXPERIMENT/TIMESTAMP/: raw records per scheme, summary.md
and PNG plots.

The steps: load the experiments (topo/experiment.py), have the host binary
check them (topo/host_check.py), run each on the chosen engine, whose
runner.run_experiment(exp, results, options, progress) returns its results
directory (topo/mininet/runner.py, topo/ns3/runner.py), then count the void
runs; --report writes a results directory's report again (topo/report).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

from p4rcp.presets import PRESETS
from p4rcp.toolchain import ROOT, ToolchainMissing, bmv2_build_line
from topo.experiment import Experiment, ExperimentError, load_experiment, load_invocation, resolve
from topo.host_check import check_with_hosts
from topo.progress import Progress
from topo.report import void_runs, write_report


def report_again(root: Path) -> str:
    """summary.md and the plots of a results directory, again, from its raw data (after the report changed)."""
    metas = [(p.parent, json.loads(p.read_text())) for p in sorted(root.glob("**/run.json"))]
    if not metas:
        raise ExperimentError(f"{root}: no run.json below it; give a results/EXPERIMENT/TIMESTAMP directory")
    first = metas[0][1]
    saved = root / f"{first['experiment']}.toml"
    recorded = saved.is_file()
    source = saved if recorded else resolve(first["experiment"])
    present = {m["scheme"] for _, m in metas}
    declared = load_experiment(source, recorded=recorded).schemes
    schemes = [s for s in declared if s in present] + sorted(present - set(declared))
    exp = load_experiment(source, schemes, first["duration_s"], sorted({m.get("seed", 1) for _, m in metas}),
                          recorded=recorded)
    variants = {v.label: v for v in exp.variants()}
    missing = {m["variant"] for _, m in metas} - set(variants)
    if missing:
        raise ExperimentError(f"{root}: sweep points {sorted(missing)} are not in the experiment's sweep")
    order = list(variants)
    runs = sorted(((variants[m["variant"]], m["scheme"], d, m) for d, m in metas),
                  key=lambda r: (order.index(r[0].label), schemes.index(r[1])))
    return write_report(exp, root, runs)


def _seeds(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise ExperimentError(f"--seeds takes integers such as 1,2,3, got {text!r}") from None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m topo.run", description=__doc__.split("\n\n")[1])
    ap.add_argument("experiment", help="name in topo/experiments (e.g. default, fct, convergence) or a .toml path")
    ap.add_argument("--schemes", help=f"comma-separated, e.g. rcp,tcp, instead of the experiment's: presets "
                                      f"({', '.join(PRESETS)}) or the hosts' --cc (allegro, tcp:reno, ...)")
    ap.add_argument("--duration", type=float, help="override duration_s")
    ap.add_argument("--seeds", help="comma-separated seeds, e.g. 1,2,3 (override the experiment's seeds)")
    ap.add_argument("--out", default=str(ROOT / "results"))
    ap.add_argument("--pcap", action="store_true",
                    help="keep bmv2's capture of every switch port in each run's pcap/ (tools/wireshark/rcp.lua dissects RCP)")
    ap.add_argument("--expose-control-ports", action="store_true",
                    help="let other hosts reach the switches' Thrift ports (by default only this machine can: "
                         "docs/control_plane.md, 'Who can reach the switch')")
    ap.add_argument("--hold", action="store_true",
                    help="build the experiment's network, start its control plane and receivers, and stop at "
                         "Mininet's command line instead of running it")
    ap.add_argument("--report", action="store_true",
                    help="EXPERIMENT is a results/EXPERIMENT/TIMESTAMP directory: write its summary and plots "
                         "again from the raw data, without running anything")
    ap.add_argument("--control-plane", choices=("thread", "process"), default="thread",
                    help="mininet only: each switch's control loop as a thread of the runner (default) or as its own "
                         "python -m control_plane process (the standalone controller, which can be stopped and "
                         "started again mid-run)")
    ap.add_argument("--engine", choices=("mininet", "ns3"), default="mininet",
                    help="mininet: bmv2 switches and the Rust hosts in real time (default); ns3: the same "
                         "experiment simulated in ns-3 (docs/ns3.md)")
    ap.add_argument("--engine-option", action="append", default=[], metavar="KEY=VALUE",
                    help="ns3 only: rtt_samples=departure|arrival, queue_sample=enqueue-depth|at-read, jobs=N")
    args = ap.parse_args(argv)
    if args.report:
        try:
            print(report_again(Path(args.experiment)))
        except ExperimentError as e:
            return refused(e)
        return 0
    if args.engine_option and args.engine != "ns3":
        return refused("--engine-option is for --engine ns3")
    if args.control_plane != "thread" and args.engine != "mininet":
        return refused("--control-plane is for --engine mininet")
    try:
        experiments = load_invocation(args.experiment, args.schemes.split(",") if args.schemes else None,
                                      args.duration, _seeds(args.seeds) if args.seeds else None)
        for exp in experiments:
            check_with_hosts(exp)       # before any run: the host binary judges every scheme and workload
        if args.engine == "ns3":
            return run_ns3(experiments, args)
    except (ExperimentError, ToolchainMissing, RuntimeError) as e:
        return refused(e)
    return run_mininet(experiments, args)


def refused(why) -> int:
    """Why nothing ran, in one line; exit status 2."""
    print(f"topo.run: {why}", file=sys.stderr)
    return 2


def run_mininet(experiments: list[Experiment], args) -> int:
    """The experiments on the Mininet engine (topo/mininet), refused in one line before any network is built where
    the machine lacks what a run needs."""
    from topo.mininet import runner   # only here: ns-3 runs and reports need none of it

    try:
        build = runner.preflight()
    except (ToolchainMissing, RuntimeError) as e:
        return refused(e)
    if build["logging"]:
        print(bmv2_build_line(build), file=sys.stderr)
    options = runner.RunOptions(pcap=args.pcap, expose_control_ports=args.expose_control_ports,
                                environment=runner.environment(), control_plane=args.control_plane)
    if args.hold:
        exp = experiments[0]
        runner.hold(exp, exp.schemes[0], options, Path(args.out) / "hold" / time.strftime("%Y%m%d-%H%M%S"))
        return 0
    runs = sum(exp.run_count() for exp in experiments)
    progress = Progress(runs, sum(exp.run_count() * runner.expected_run_s(exp) for exp in experiments) / runs)
    # A shell starting us in the background ignores SIGINT for us; Ctrl-C or kill -INT must still clean up.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return run_all(experiments, lambda exp: runner.run_experiment(exp, Path(args.out), options, progress), progress,
                   "interrupted; network and processes cleaned up")


def run_ns3(experiments: list[Experiment], args) -> int:
    """The experiments on the ns-3 engine (topo/ns3), refused in one line before anything runs where it cannot
    run them."""
    from topo.ns3 import runner   # only here: Mininet runs need none of it

    mininet_only = [flag for flag, given in (("--pcap", args.pcap), ("--hold", args.hold),
                                             ("--expose-control-ports", args.expose_control_ports)) if given]
    if mininet_only:
        raise ExperimentError(f"{', '.join(mininet_only)}: for the Mininet engine (the ns-3 engine has no bmv2 "
                              f"switch or network to hold)")
    try:
        options = runner.parse_options(args.engine_option)
    except ValueError as e:
        raise ExperimentError(str(e)) from None
    why = runner.refuse(experiments)
    if why:
        raise ExperimentError(why)
    progress = Progress(sum(exp.run_count() for exp in experiments))
    return run_all(experiments, lambda exp: runner.run_experiment(exp, Path(args.out), options, progress),
                   progress, "interrupted")


def run_all(experiments: list[Experiment], run_one, progress: Progress, interrupted: str) -> int:
    """Every experiment by run_one (it returns its results directory), then the void-run count; Ctrl-C or
    SIGTERM stops them with `interrupted` (exit status 130)."""
    # SIGTERM unwinds like Ctrl-C, so every finally block cleans up.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    roots = []
    try:
        for exp in experiments:
            roots.append(run_one(exp))
            print(f"results: {roots[-1]}")
    except KeyboardInterrupt:
        print(f"\ntopo.run: {interrupted}", file=sys.stderr)
        return 130
    finally:
        progress.close()
    void, total, which = void_runs(roots)
    print(f"void runs: {void} of {total}" + "".join(f"\n  {w}" for w in which))
    return 0


if __name__ == "__main__":
    sys.exit(main())

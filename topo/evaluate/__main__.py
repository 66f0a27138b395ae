"""python -m topo.evaluate [--engine ns3|mininet] [--scheduler ADDRESS] [--workers N] [--only NAME;NAME]
                          [--seeds S,S] [--preset NAME] [--list]

Runs the evaluation suite (docs/evaluate.md): the RCP talk's conditions, each with the default preset `rcp`
and TCP Reno, and writes one table, a row per condition with PASS or FAIL against the targets, into
results/evaluate/ENGINE-TIMESTAMP/ (table.md, table.csv, table.json, and each experiment's results below).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from p4rcp.toolchain import ROOT
from p4rcp.presets import router_preset
from topo.evaluate.conditions import RCP_SCHEME, SEEDS, invocations, select
from topo.evaluate.suite import mininet_command, run_suite
from topo.experiment import ExperimentError


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m topo.evaluate", description=__doc__.split("\n\n")[1])
    ap.add_argument("--engine", choices=("ns3", "mininet"), default="ns3",
                    help="ns3: every condition, runs in parallel through Dask (default); mininet: the subset the "
                         "emulation reaches, one run at a time")
    ap.add_argument("--scheduler", help="a Dask scheduler's address (tcp://HOST:8786): run on that cluster's "
                                        "workers instead of a local cluster (ns3 only)")
    ap.add_argument("--workers", type=int, help="the local cluster's workers (default: one per core)")
    ap.add_argument("--only", help="the conditions to run, by name, separated by ';' (see --list)")
    ap.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="comma-separated seeds (default 1,2,3)")
    ap.add_argument("--preset", default=RCP_SCHEME,
                    help=f"the RCP preset judged (default {RCP_SCHEME}, the default RCP; p4rcp/presets.py)")
    ap.add_argument("--out", help="directory of the table (default results/evaluate/ENGINE-TIMESTAMP)")
    ap.add_argument("--list", action="store_true",
                    help="print the conditions and the experiments' command lines, and run nothing")
    args = ap.parse_args(argv)
    if args.scheduler and args.engine != "ns3":
        return refused("--scheduler is for the ns3 engine (Mininet runs need the whole machine, one at a time)")
    if args.workers is not None and args.workers < 1:
        return refused("--workers takes a positive number")
    try:
        try:
            seeds = tuple(int(s) for s in args.seeds.split(","))
        except ValueError:
            raise ValueError(f"--seeds takes integers such as 1,2,3, got {args.seeds!r}") from None
        router_preset(args.preset)
        conditions = select(args.engine, [n.strip() for n in args.only.split(";")] if args.only else None)
        out = Path(args.out) if args.out else ROOT / "results" / "evaluate" / f"{args.engine}-{time.strftime('%Y%m%d-%H%M%S')}"
        if args.list:
            for c in conditions:
                print(f"{c.name}: {c.varies}; " + (f"{c.experiment} {c.variant}".strip() + f"; targets {', '.join(c.targets)}"
                                                   if c.runs else f"not expressible: {c.why_not}"))
            for inv in invocations(conditions, seeds, args.preset):
                print(" ".join(mininet_command(inv, out) if args.engine == "mininet" else inv.command("ns3")))
            return 0
        _, text = run_suite(conditions, args.engine, out, scheduler=args.scheduler, workers=args.workers,
                            seeds=seeds, say=lambda line: print(line, file=sys.stderr, flush=True),
                            command=again(args.engine, args.only, seeds, args.preset), rcp=args.preset)
    except (ExperimentError, ValueError, RuntimeError) as e:
        return refused(e)
    print(text)
    print(f"table: {out / 'table.md'} (also table.csv, table.json)")
    return 0


def again(engine: str, only: str | None, seeds: tuple[int, ...], preset: str = RCP_SCHEME) -> str:
    """The command, from the repository's root, that runs the same conditions and seeds into a new directory
    (where and on how many workers they ran changes no figure)."""
    words = [".venv/bin/python", "-m", "topo.evaluate", "--engine", engine]
    if only:
        words += ["--only", only]
    if seeds != SEEDS:
        words += ["--seeds", ",".join(map(str, seeds))]
    if preset != RCP_SCHEME:
        words += ["--preset", preset]
    return shlex.join(words)


def refused(why) -> int:
    print(f"topo.evaluate: {why}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

"""python -m tools.records COMMAND: record a result, regenerate the documents from the records, check them.

    add NAME RESULTS_DIR [RESULTS_DIR ...] [--command CMD] [--note TEXT]
        record one experiment's results directory (results/EXPERIMENT/TIMESTAMP), or each experiment's of a
        suite (make run writes two), as docs/records/NAME.toml; the command is worked out from the runs
        (experiment or suite, engine, and the schemes, seeds and duration where they differ from its file).
        An evaluation's directory (results/evaluate/ENGINE-TIMESTAMP) is recorded alone: its table's rows,
        and the command its table.json names
    time NAME [--note TEXT] -- COMMAND ...
        run COMMAND from the repository's root and record its wall time and the end of its output (make
        test, a benchmark)
    rerun NAME [NAME ...] [--note TEXT]
        run each record's command again, replace the record with the new run, then generate (make record);
        a record's note described its old run and goes, unless --note gives a new one
    generate
        write docs/reproducing.md, every generated block and the headline figure from the records (make docs)
    check
        exit 1, saying what, when a generated text is stale or a document breaks the documentation checks
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tools.records import ROOT, lint, render, store


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.records", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    add = sub.add_parser("add", help="record results directories")
    add.add_argument("name")
    add.add_argument("directories", nargs="+", type=Path)
    add.add_argument("--command", help="the command that made them (default: worked out from the runs)")
    add.add_argument("--note", default="")
    add.add_argument("--force", action="store_true", help="replace a record of that name")
    timed = sub.add_parser("time", help="run a command and record its time")
    timed.add_argument("name")
    timed.add_argument("--note", default="")
    timed.add_argument("--force", action="store_true")
    timed.add_argument("command", nargs=argparse.REMAINDER)
    again = sub.add_parser("rerun", help="run records' commands again, record the new runs, regenerate")
    again.add_argument("names", nargs="+")
    again.add_argument("--note", default="")
    sub.add_parser("generate", help="regenerate the documents from the records")
    sub.add_parser("check", help="fail on stale generated texts or documentation problems")
    args = ap.parse_args(argv)
    try:
        if args.what in ("add", "time"):
            if (store.RECORDS_DIR / f"{args.name}.toml").exists() and not args.force:
                raise store.RecordError(f"docs/records/{args.name}.toml exists (--force replaces it)")
            if args.what == "add" and any(store.is_evaluation(d) for d in args.directories):
                if len(args.directories) != 1 or args.command:
                    raise store.RecordError("an evaluation is recorded alone, with the command its table.json gives")
                record = store.from_evaluation(args.name, args.directories[0], args.note)
            elif args.what == "add":
                record = store.from_results(args.name, args.directories, args.command, args.note)
            else:
                command = args.command[1:] if args.command[:1] == ["--"] else args.command
                if not command:
                    raise store.RecordError("time: give the command after --")
                record = store.timed(args.name, command, args.note)
            print(f"wrote {record.write().relative_to(ROOT)}; now run make docs")
            return 0
        if args.what == "rerun":
            known = store.load_all()
            missing = [name for name in args.names if name not in known]
            if missing:
                raise store.RecordError(f"no record {', '.join(missing)}; the records: {', '.join(known)}")
            records = [known[name] for name in args.names]
            for old in records:
                print(f"rerun {old.name}: {old.command}", flush=True)
                print(f"wrote {store.rerun(old, args.note).write().relative_to(ROOT)}", flush=True)
            args.what = "generate"
        if args.what == "generate":
            for path in render.generate():
                print(f"wrote {path.relative_to(ROOT)}")
            return 0
        problems = render.stale()
        for doc in lint.documents():
            problems += [str(f) for f in lint.results_outside_blocks(doc) + lint.references(doc)
                         + lint.unknown_schemes(doc)]
        problems += [str(f) for f in lint.project_history() + lint.code_references()]
        problems += lint.unrunnable_claims(render.load_claims())
        if lint.line_count() > lint.LINE_BUDGET:
            problems.append(f"the documentation has {lint.line_count()} lines, over its budget of {lint.LINE_BUDGET}")
        for p in problems:
            print(p, file=sys.stderr)
        return 1 if problems else 0
    except store.RecordError as e:
        print(f"tools.records: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

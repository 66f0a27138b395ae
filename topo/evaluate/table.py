"""The suite's one table: a row per condition, RCP's and TCP's figures side by side, and each target's verdict;
written as Markdown (table.md), CSV (table.csv) and JSON (table.json, every seed's figures)."""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from p4rcp.analysis import Spread
from topo.evaluate.conditions import Condition
from topo.evaluate.figures import FIGURES, SchemeRuns, fct_over, worst_bin
from topo.evaluate.targets import TARGETS, Verdict, judge

PASS, FAIL, NOT_RUN = "PASS", "FAIL", "NOT RUN"

# The columns both sides show: (header, figure, format).
SHOWN = (("FCT (s)", "mean_fct_s", ".3f"), ("FCT/FCT_PS", "fct_ratio_ps", ".2f"),
         ("FCT/exact PS", "fct_ratio_ps_exact", ".2f"), ("drops", "drops", ".0f"),
         ("queue mean", "mean_queue_pkts", ".1f"), ("queue peak", "max_queue_pkts", ".0f"),
         ("utilisation", "utilisation", ".2f"))


@dataclass
class Row:
    condition: str
    varies: str
    experiment: str                   # EXPERIMENT or EXPERIMENT (sweep point); "" where nothing ran
    engine: str
    rcp: dict[str, list] = field(default_factory=dict)    # figure -> one value per valid seed
    tcp: dict[str, list] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    status: str = NOT_RUN
    note: str = ""                    # why not run, void runs, what failed
    results: str = ""                 # the experiment's summary, relative to the table

    def cell(self, side: str, figure: str, spec: str) -> str:
        values = [v for v in getattr(self, side).get(figure, []) if v is not None]
        if not values:
            return "-"
        spread = Spread.of(values)
        return "never" if math.isinf(spread.mean) else spread.format(spec)


def _side(runs: SchemeRuns | None) -> dict[str, list]:
    if runs is None:
        return {}
    return {name: runs.per_seed(name) for name in FIGURES if name not in ("worst_bin_ratio_ps", "fct_over_tcp")}


def make_row(condition: Condition, engine: str, rcp: SchemeRuns | None, tcp: SchemeRuns | None,
             results: str = "", failure: str = "") -> Row:
    """A condition's row from its runs at its sweep point: RCP's (and TCP's: its own runs, or for a mix, the TCP
    flows of RCP's runs), judged by the condition's targets for this engine (pure)."""
    experiment = f"{condition.experiment}" + (f" ({condition.variant})" if condition.variant else "") \
        if condition.runs else ""
    row = Row(condition.name, condition.varies, experiment, engine, results=results)
    if not condition.runs:
        row.note = f"cannot be expressed: {condition.why_not}"
        return row
    if failure:                       # a run that did not finish is a void run: the row fails
        row.status, row.note = FAIL, failure
        return row
    if rcp is None:
        row.status, row.note = FAIL, "no runs of RCP found"
        return row
    row.rcp = _side(rcp)
    row.rcp["worst_bin_ratio_ps"] = [worst_bin(rcp.fct_flows)]
    if tcp is not None:
        row.tcp = _side(tcp)
        row.tcp["worst_bin_ratio_ps"] = [worst_bin(tcp.fct_flows)]
        row.rcp["fct_over_tcp"] = fct_over(rcp, tcp)
    applicable = [TARGETS[t] for t in condition.targets if engine in TARGETS[t].engines]
    row.verdicts = [judge(t, row.rcp.get(t.figure, [])) for t in applicable]
    void = rcp.void + (tcp.void if tcp else 0)
    problems = rcp.problems + (tcp.problems if tcp else [])
    if void:
        row.note = f"{void} void run(s): " + "; ".join(problems)
    row.status = PASS if not void and all(v.passed for v in row.verdicts) else FAIL
    return row


def headers() -> list[str]:
    return (["condition", "talk's condition", "experiment"]
            + [f"{side} {header}" for header, _, _ in SHOWN for side in ("RCP", "TCP")]
            + ["result", "targets (worst seed)", "note", "figures"])


def cells(row: Row) -> list[str]:
    return ([row.condition, row.varies, row.experiment]
            + [row.cell(side, figure, spec) for _, figure, spec in SHOWN for side in ("rcp", "tcp")]
            + [row.status, "; ".join(v.text() for v in row.verdicts), row.note, row.results])


def markdown(rows: list[Row], preface: str = "") -> str:
    def escape(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")
    lines = [preface, ""] if preface else []
    lines += ["| " + " | ".join(headers()) + " |", "|" + "---|" * len(headers())]
    for row in rows:
        values = cells(row)
        values[-1] = f"[summary]({row.results})" if row.results else ""
        lines.append("| " + " | ".join(escape(v) for v in values) + " |")
    passed = sum(r.status == PASS for r in rows)
    failed = sum(r.status == FAIL for r in rows)
    lines += ["", f"{passed} PASS, {failed} FAIL, {len(rows) - passed - failed} not run, of {len(rows)} conditions."]
    return "\n".join(lines) + "\n"


def as_csv(rows: list[Row]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(headers())
    for row in rows:
        writer.writerow(cells(row))
    return out.getvalue()


def as_json(rows: list[Row], run: dict | None = None) -> str:
    """The rows with the figures' and targets' meanings, and `run`: how the table was made (the command that
    makes it again, its wall time, the seeds), which a record of the evaluation (tools/records) keeps."""
    def number(v):
        return None if v is None else ("inf" if math.isinf(v) else v)
    return json.dumps({
        "run": run or {},
        "figures": FIGURES,
        "targets": {name: {"claim": t.claim, "figure": t.figure, "op": t.op, "bound": t.bound,
                           "engines": list(t.engines)} for name, t in TARGETS.items()},
        "rows": [{"condition": r.condition, "varies": r.varies, "experiment": r.experiment, "engine": r.engine,
                  "status": r.status, "note": r.note, "results": r.results,
                  "rcp": {k: [number(v) for v in vs] for k, vs in r.rcp.items()},
                  "tcp": {k: [number(v) for v in vs] for k, vs in r.tcp.items()},
                  "targets": [{"target": v.target.name, "measured": number(v.measured), "passed": v.passed}
                              for v in r.verdicts]}
                 for r in rows]}, indent=1)


def write_table(rows: list[Row], out: Path, preface: str = "", run: dict | None = None) -> str:
    """table.md, table.csv and table.json in out; returns the Markdown."""
    out.mkdir(parents=True, exist_ok=True)
    text = markdown(rows, preface)
    (out / "table.md").write_text(text)
    (out / "table.csv").write_text(as_csv(rows))
    (out / "table.json").write_text(as_json(rows, run))
    return text

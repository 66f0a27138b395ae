"""The documents' numbers, from the records: docs/reproducing.md, the generated blocks of the other documents
and the README's headline figure. Nothing here holds a number of its own: each comes from a record's table
cell, named by a claim of docs/records/claims.toml, so two documents can only quote the same cell alike."""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from tools.records import CLAIMS_FILE, HEADLINE_PNG, REPRODUCING, ROOT
from tools.records.store import EXPERIMENTS_DIR, Record, RecordError, load_all

NOT_RECORDED = "not yet recorded"
GENERATED = re.compile(r"<!-- generated: ([a-z-]+) -->\n(.*?)<!-- end generated: \1 -->", re.S)
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
# The documents that hold generated blocks (reproducing.md is generated whole).
DOCUMENTS = ["README.md", "docs/experiments.md", "docs/ns3.md", "docs/benchmarks.md", "docs/tutorial.md",
             "docs/evaluate.md", "docs/porting.md"]


@dataclass
class Quote:
    label: str
    text: str               # the cell as the summary gave it, for the reader
    value: object           # its number(s), for the verdict: a float, a list of floats (None: "never")


def value_of(cell: str):
    """A cell's number: "1.20 (1.13-1.26)" -> 1.20; "14.5 / 13.5 / never" -> [14.5, 13.5, None];
    "1.17 (1.15-1.19), 1176" -> 1.17 (the count after the comma is the bin's flows)."""
    if " / " in cell:
        return [value_of(part) for part in cell.split(" / ")]
    if cell.strip().startswith("never"):
        return None
    match = NUMBER.match(cell.strip())
    return float(match.group()) if match else None


def _short(cell: str) -> str:
    """A by-size cell without its flow count: "1.17 (1.15-1.19), 1176" -> "1.17 (1.15-1.19)"."""
    head, sep, tail = cell.rpartition(", ")
    return head if sep and tail.strip().isdigit() else cell


def quotes(claim: dict, record: Record) -> list[Quote]:
    """The cells a claim quotes from its record; RecordError naming the claim when the record lacks one (a
    record made again may hold other rows: the claim's quote then changes with it)."""
    try:
        return _quotes(claim, record)
    except RecordError as e:
        raise RecordError(f"claim {claim['id']} (docs/records/claims.toml), record {record.name}: {e}") from None


def _quotes(claim: dict, record: Record) -> list[Quote]:
    out = []
    for q in claim.get("quote", []):
        result = record.result(q.get("experiment", claim["experiment"]))
        table = result.table(q.get("table", ""), q.get("section", ""))
        if q["row"] == "*":
            col = table.column(q["column"])
            cells = [(r[0], r[col]) for r in table.rows]
            out.append(Quote(q["label"], ", ".join(f"{row}: {_short(c)}" for row, c in cells),
                             [value_of(c) for _, c in cells]))
        else:
            cell = table.cell(q["row"], q["column"])
            out.append(Quote(q["label"], _short(cell), value_of(cell)))
    return out


SAFE = {"max": max, "min": min, "all": all, "any": any, "abs": abs, "len": len, "None": None}


def verdict(claim: dict, found: list[Quote]) -> str:
    values = {q.label: q.value for q in found}
    try:
        holds = eval(claim["holds"], {"__builtins__": {}}, SAFE | values)      # the committed claims file's
    except TypeError:
        holds = False               # a "never" where a number was needed: it did not happen
    return "holds" if holds else "does not hold"


@dataclass
class Row:
    claim: dict
    record: Record | None
    current: str
    verdict: str


def evaluate(claims: dict, records: dict[str, Record]) -> list[Row]:
    rows = []
    for claim in claims.get("claim", []):
        name = claim.get("record", "")
        if not name:
            rows.append(Row(claim, None, NOT_RECORDED, NOT_RECORDED))
            continue
        if name not in records:
            raise RecordError(f"claim {claim['id']!r} names record {name!r}, which docs/records/ does not hold")
        found = quotes(claim, records[name])
        current = claim["current"].format(**{q.label: q.text for q in found})
        rows.append(Row(claim, records[name], current, verdict(claim, found)))
    return rows


def load_claims() -> dict:
    return tomllib.loads(CLAIMS_FILE.read_text())


# --- docs/reproducing.md ----------------------------------------------------------------------------------

def _when(record: Record) -> str:
    return f"`{record.name}` ({record.engine or 'command'}, {record.commit[:7]}, {record.date})"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def reproducing(claims: dict, records: dict[str, Record]) -> str:
    rows = evaluate(claims, records)
    out = ["# Reproducing the papers", "",
           "Each paper figure or claim that p4rcp reproduces, the experiment and command that reproduce it, the",
           "number p4rcp's latest record gives, the paper's number, and the verdict. Generated by `make docs`",
           "(`python -m tools.records generate`) from the records in `docs/records/` and the claims in",
           "`docs/records/claims.toml`: edit those, not this page.", "",
           "A cell is the mean over the run's valid seeds with their range in brackets, as the run's",
           "`summary.md` gives it. \"Not yet recorded\": no record holds this claim's experiment yet; run its",
           "command, then record it (`docs/experiments.md`, \"Recording a result\").", ""]
    papers = claims["papers"]
    numbered = 0
    for key, paper in papers.items():
        mine = [(numbered + i, r) for i, r in enumerate((r for r in rows if r.claim["paper"] == key), 1)]
        if not mine:
            continue
        numbered += len(mine)
        out += [f"## {paper['short']}", "", paper["cite"], "",
                "| # | paper's figure or claim | paper | p4rcp | verdict | experiment (engine), record | command |",
                "|---|---|---|---|---|---|---|"]
        for i, r in mine:
            c = r.claim
            where = f"`{c['experiment']}` ({c['engine']}), " + (_when(r.record) if r.record else NOT_RECORDED)
            command = (f"`{c['command']}`" if c["command"] else f"no experiment yet: {c['missing']}") + \
                (f" ({c['note']})" if c.get("note") else "")
            out.append(f"| {i} | {c['figure']}: {c['claim']} | {c['paper_says']} | {r.current} | "
                       f"{r.verdict}{': ' + c['criterion'] if r.record else ''} | {where} | {command} |")
        out += [""]
    out += ["## Records", "",
            "| record | command | engine | commit | date | machine | wall time | runs valid |",
            "|---|---|---|---|---|---|---|---|"]
    for rec in records.values():
        valid = ", ".join(f"{r.experiment} {r.valid_runs}/{r.runs}" for r in rec.results) or \
            f"exit status {rec.exit_status}"
        out.append(f"| `{rec.name}` | `{rec.command}`" + (f" ({rec.note})" if rec.note else "")
                   + f" | {rec.engine or '-'} | {rec.commit} | "
                   f"{rec.date} | {rec.machine['cpus']}, Linux {rec.machine['kernel']}; {rec.machine['software']} | "
                   f"{_minutes(rec.wall_s)} | {valid} |")
    return "\n".join(out) + "\n"


# --- generated blocks of the other documents ----------------------------------------------------------------

def block_headline(claims: dict, records: dict[str, Record]) -> str:
    """The README's headline: the claims marked headline, one table row each."""
    rows = [r for r in evaluate(claims, records) if r.claim.get("headline")]
    head = claims["headline"]
    lines = ["| the papers' result | p4rcp | the paper | verdict, record |", "|---|---|---|---|"]
    for r in rows:
        c = r.claim
        where = f"{r.verdict}, {_when(r.record)}" if r.record else NOT_RECORDED
        lines.append(f"| {c['headline']} | {r.current} | {c['paper_says']} | {where} |")
    source = records.get(head["record"])
    if source:
        lines += ["", f"The figure: `{head['experiment']}` on {source.engine}, record {_when(source)}, drawn by "
                      f"`make docs` from the record alone."]
    return "\n".join(lines)


def _time_of(records: dict[str, Record], kind: str, experiment: str = "", engine: str = "",
             command: str = "") -> str:
    for rec in reversed(list(records.values())):
        full = rec.kind == "experiment" and not any(w in rec.command for w in ("--seeds", "--duration", "--schemes"))
        if kind == "experiment" and full and rec.experiment == experiment and rec.engine == engine:
            return f"{_minutes(rec.wall_s)} (record `{rec.name}`, {rec.machine['cpus']})"
        if kind == "command" and rec.kind == "command" and rec.command == command and rec.exit_status == 0:
            return f"{_minutes(rec.wall_s)} (record `{rec.name}`, {rec.machine['cpus']}; {rec.machine['software']})"
    return NOT_RECORDED


def block_timings(claims: dict, records: dict[str, Record]) -> str:
    return "\n".join([
        "| command | recorded wall time |", "|---|---|",
        f"| `make run` | {_time_of(records, 'experiment', 'default', 'mininet')} |",
        f"| `make sim EXP=default` | {_time_of(records, 'experiment', 'default', 'ns3')} |",
        f"| `make test` | {_time_of(records, 'command', command='make test')} |"])


def block_catalogue(claims: dict, records: dict[str, Record]) -> str:
    rows = evaluate(claims, records)
    names = sorted(p.stem for p in EXPERIMENTS_DIR.glob("*.toml")
                   if "suite" not in tomllib.loads(p.read_text()))
    lines = ["| experiment | recorded (engine: wall time, record) | a headline result |", "|---|---|---|"]
    for name in names:
        recorded = [f"{rec.engine}: {_minutes(res.wall_s)}, `{rec.name}`" for rec in records.values()
                    for res in rec.results if res.experiment == name]
        headline = next((f"{r.current} ({r.claim['figure']})" for r in rows
                         if r.claim["experiment"] == name and r.record), "")
        lines.append(f"| `{name}` | {'; '.join(recorded) or NOT_RECORDED} | {headline} |")
    return "\n".join(lines)


def block_engines(claims: dict, records: dict[str, Record]) -> str:
    """One command's main tables on two engines, each scheme's rows side by side."""
    spec = claims["compare"]
    present = [records.get(n) for n in spec["records"]]
    if not all(present):
        return f"The comparison of the engines on one command: {NOT_RECORDED} (records {', '.join(spec['records'])})."
    lines = [f"`{present[0].command}` (less `--engine ns3`) on both engines: "
             + " and ".join(_when(r) for r in present) + ".", ""]
    for res in present[0].results:
        tables = [rec.result(res.experiment).table() for rec in present]
        columns = [c for c in spec["columns"] if all(c in t.header for t in tables)]
        lines += [f"| `{res.experiment}` | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
        for row in tables[0].rows:
            for rec, table in zip(present, tables):
                lines.append(f"| {row[0]}, {rec.engine} | " + " | ".join(_short(table.cell(row[0], c))
                                                                       for c in columns) + " |")
        lines += [""]
    return "\n".join(lines).rstrip()


def block_benchmarks(claims: dict, records: dict[str, Record]) -> str:
    lines = []
    for target in ("bench-dataplane", "bench-control", "bench-hosts"):
        rec = next((r for r in reversed(list(records.values()))
                    if r.kind == "command" and r.command == f"make {target}"), None)
        if rec is None:
            lines += [f"`make {target}`: {NOT_RECORDED}.", ""]
            continue
        lines += [f"`make {target}`, record {_when(rec)}, {rec.machine['cpus']}, {rec.machine['software']}; "
                  f"exit status {rec.exit_status}; the end of its output:", "", "```", *rec.tail, "```", ""]
    return "\n".join(lines).rstrip()


FIRST_RUN = {"fct-short": ["mean FCT / FCT_PS", "mean FCT (s)", "retransmitted (% of packets)", "utilisation"],
             "convergence-short": ["Jain", "utilisation, steady state", "mean queue, steady state (pkts)",
                                   "joining flows to their fair share, per join (RTTs)"]}


def block_first_run(claims: dict, records: dict[str, Record]) -> str:
    """The default suite's main tables as its latest record per engine gives them (a full run preferred)."""
    lines = []
    for engine, make in (("mininet", "make run"), ("ns3", "make sim EXP=default")):
        mine = [r for r in records.values() if r.experiment == "default" and r.engine == engine]
        mine.sort(key=lambda r: (not any(w in r.command for w in ("--seeds", "--duration")), r.date))
        if not mine:
            lines += [f"`{make}`: {NOT_RECORDED}.", ""]
            continue
        rec = mine[-1]
        lines += [f"`{make}` ({engine}), record {_when(rec)}: `{rec.command}`", ""]
        for res in rec.results:
            table = res.table()
            columns = [c for c in FIRST_RUN.get(res.experiment, []) if c in table.header]
            lines += [f"| {res.experiment} | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
            lines += [f"| {row[0]} | " + " | ".join(table.cell(row[0], c) for c in columns) + " |"
                      for row in table.rows]
            lines += [""]
    return "\n".join(lines).rstrip()


EVALUATION_COLUMNS = ["RCP FCT/FCT_PS", "TCP FCT/FCT_PS", "RCP FCT/exact PS", "RCP drops", "RCP queue mean",
                      "RCP utilisation"]


def block_evaluation(claims: dict, records: dict[str, Record]) -> str:
    """The latest recorded evaluation of the whole suite on ns-3 for the default preset: per condition RCP's and
    TCP's main figures, the result, and each target it missed with the worst seed's figure."""
    whole = (lambda r: r.kind == "evaluation" and r.engine == "ns3"
             and not any(w in r.command for w in ("--preset", "--only", "--seeds")))
    rec = next((r for r in reversed(sorted(records.values(), key=lambda r: r.date)) if whole(r)), None)
    if rec is None:
        return f"The evaluation on ns-3: {NOT_RECORDED} (`make evaluate`, then `python -m tools.records add NAME DIR`)."
    table = rec.result("evaluate").table()
    counts = {s: sum(1 for r in table.rows if table.cell(r[0], "result") == s) for s in ("PASS", "FAIL")}
    lines = [f"`{rec.command}`, record {_when(rec)}, {rec.machine['cpus']}, {_minutes(rec.wall_s)}; "
             f"{rec.result('evaluate').valid_runs} of {rec.result('evaluate').runs} runs valid; {counts['PASS']} "
             f"PASS, {counts['FAIL']} FAIL, {len(table.rows) - sum(counts.values())} not run.", "",
             "| condition | " + " | ".join(EVALUATION_COLUMNS) + " | result | targets missed (worst seed) |",
             "|---|" + "---|" * (len(EVALUATION_COLUMNS) + 2)]
    for row in table.rows:
        name = row[0]
        missed = "; ".join(t.strip() for t in table.cell(name, "targets (worst seed)").split(";")
                           if t.strip().endswith("FAIL"))
        result = table.cell(name, "result")
        lines.append(f"| {name} | " + " | ".join(table.cell(name, c) for c in EVALUATION_COLUMNS)
                     + f" | {result} | {missed or ('-' if result == 'PASS' else table.cell(name, 'note'))} |")
    return "\n".join(lines)


TNA_PROFILES_COMMAND = "make check-tna-backend"


def block_tna_profiles(claims: dict, records: dict[str, Record]) -> str:
    """The TNA profiles' resources as the latest record of `make check-tna-backend` ends: the compiler and
    the table of tools/tna_resources.py."""
    rec = next((r for r in reversed(list(records.values()))
                if r.kind == "command" and r.command == TNA_PROFILES_COMMAND), None)
    if rec is None:
        return f"`{TNA_PROFILES_COMMAND}`: {NOT_RECORDED} (it needs p4c's Tofino back end)."
    # The table's heading, "bf-p4c VERSION:", not the echo of a compile's command line before it.
    start = next((i for i, line in enumerate(rec.tail) if line.startswith("bf-p4c ") and line.endswith(":")), None)
    if rec.exit_status != 0 or start is None:
        return f"`{TNA_PROFILES_COMMAND}`, record {_when(rec)}: exit status {rec.exit_status}, no table."
    return "\n".join([f"`{TNA_PROFILES_COMMAND}`, record {_when(rec)}, {rec.machine['cpus']}; "
                      f"{rec.tail[start].rstrip(':')}; each cell is used of the device's:", "",
                      *rec.tail[start + 1:]])


BLOCKS = {"headline": block_headline, "first-run": block_first_run, "timings": block_timings,
          "catalogue": block_catalogue, "engines": block_engines, "benchmarks": block_benchmarks,
          "evaluation": block_evaluation, "tna-profiles": block_tna_profiles}


def fill_blocks(text: str, claims: dict, records: dict[str, Record], where: str = "") -> str:
    def fill(match):
        name = match.group(1)
        if name not in BLOCKS:
            raise RecordError(f"{where}: unknown generated block {name!r} (known: {', '.join(BLOCKS)})")
        return f"<!-- generated: {name} -->\n{BLOCKS[name](claims, records)}\n<!-- end generated: {name} -->"
    return GENERATED.sub(fill, text)


# --- the headline figure ------------------------------------------------------------------------------------

def headline_source(claims: dict, records: dict[str, Record]) -> tuple[dict, str] | None:
    """The figure's data (header, rows of the record's fct_vs_size CSV) and a digest of it, or None."""
    head = claims["headline"]
    rec = records.get(head["record"])
    if rec is None:
        return None
    data = rec.result(head["experiment"]).figures.get(head["figure"])
    if data is None:
        raise RecordError(f"record {rec.name}: no {head['figure']} in {head['experiment']}")
    digest = hashlib.sha256(repr((data["header"], data["rows"])).encode()).hexdigest()[:16]
    return data, f"docs/records/{rec.name}.toml {head['experiment']} {head['figure']} sha256:{digest}"


def draw_headline(claims: dict, records: dict[str, Record], path: Path = HEADLINE_PNG) -> Path | None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    found = headline_source(claims, records)
    if found is None:
        return None
    data, source = found
    col = {name: i for i, name in enumerate(data["header"])}
    schemes = list(dict.fromkeys(r[col["scheme"]] for r in data["rows"]))
    fig, (ax, ax_ratio) = plt.subplots(1, 2, figsize=(9, 3.4))
    ps = {}
    for scheme in schemes:
        mine = [r for r in data["rows"] if r[col["scheme"]] == scheme]
        xs = [float(r[col["mean_packets"]]) for r in mine]
        ax.plot(xs, [float(r[col["mean_fct_s"]]) for r in mine], "o-", ms=3, label=scheme)
        ax_ratio.plot(xs, [float(r[col["mean_fct_over_ps"]]) for r in mine], "o-", ms=3, label=scheme)
        ps.update({x: float(r[col["ps_fct_s"]]) for x, r in zip(xs, mine)})
    xs = sorted(ps)
    ax.plot(xs, [ps[x] for x in xs], "k-", lw=1.5, label="processor sharing")
    ax_ratio.axhline(1.0, color="k", lw=1.5, label="processor sharing")
    ax.set(xscale="log", yscale="log", xlabel="flow size (packets; each point: its flows' mean size)",
           ylabel="mean FCT (s)", title=claims["headline"]["title"])
    ax_ratio.set(xscale="log", xlabel="flow size (packets)", ylabel="mean FCT / FCT_PS",
                 title="relative to processor sharing")
    for axis in (ax, ax_ratio):
        axis.legend(fontsize=7)
        axis.title.set_fontsize(9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90, metadata={"Software": None, "Source": source})
    plt.close(fig)
    return path


# --- everything ---------------------------------------------------------------------------------------------

def expected() -> dict[Path, str]:
    """Every generated text as the records make it: path -> content."""
    claims, records = load_claims(), load_all()
    out = {REPRODUCING: reproducing(claims, records)}
    for name in DOCUMENTS:
        path = ROOT / name
        if path.is_file():
            out[path] = fill_blocks(path.read_text(), claims, records, name)
    return out


def generate() -> list[Path]:
    """Write every generated text and the headline figure; the paths that changed."""
    changed = []
    for path, text in expected().items():
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            changed.append(path)
    claims, records = load_claims(), load_all()
    if stale_figure(claims, records):
        changed.append(draw_headline(claims, records))
    return changed


def stale_figure(claims: dict, records: dict[str, Record]) -> str:
    """Why the committed headline figure is not the one the records make; "" when it is."""
    found = headline_source(claims, records)
    if found is None:
        return ""
    if not HEADLINE_PNG.is_file():
        return f"{HEADLINE_PNG.relative_to(ROOT)} is missing"
    from PIL import Image
    drawn_from = Image.open(HEADLINE_PNG).text.get("Source", "")
    if drawn_from != found[1]:
        return f"{HEADLINE_PNG.relative_to(ROOT)} was drawn from {drawn_from or 'nothing recorded'}, not {found[1]}"
    return ""


def stale() -> list[str]:
    """What `make docs` would change, one line each; empty when the documents match their records."""
    problems = [f"{path.relative_to(ROOT)} is stale against docs/records/ (run make docs)"
                for path, text in expected().items() if not path.is_file() or path.read_text() != text]
    figure = stale_figure(load_claims(), load_all())
    return problems + ([figure + " (run make docs)"] if figure else [])

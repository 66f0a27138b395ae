"""Records: one TOML file per recorded run in docs/records/, written by `python -m tools.records add` or
`time`, read by the generator. A record holds what a reader needs to trust and repeat a number: the exact
command, the commit, the date, the machine, and the rows of the run's summary tables as summary.md gave
them (cells verbatim: "1.20 (1.13-1.26)" is the mean over seeds with their range)."""

from __future__ import annotations

import csv
import json
import os
import platform
import re
import shlex
import subprocess
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import tomli_w

from tools.records import RECORDS_DIR, ROOT

NAME = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
STAMP = re.compile(r"^\d{8}-\d{6}$")
EXPERIMENTS_DIR = ROOT / "topo" / "experiments"
TAIL_LINES = 16             # of a timed command's output: a benchmark's verdicts, a test run's summary, a table


class RecordError(Exception):
    """A record that cannot be made or read; the message says which and why."""


@dataclass
class Table:
    section: str            # the sweep point's heading ("load=0.7"), "" without a sweep
    title: str              # the line above the table in summary.md, "" for the main table
    header: list[str]
    rows: list[list[str]]

    def column(self, name: str) -> int:
        if name not in self.header:
            raise RecordError(f"no column {name!r} in table {self.title or 'summary'!r}: {self.header}")
        return self.header.index(name)

    def cell(self, row: str, column: str) -> str:
        col = self.column(column)
        for r in self.rows:
            if r[0] == row:
                return r[col]
        raise RecordError(f"no row {row!r} in table {self.title or 'summary'!r}: {[r[0] for r in self.rows]}")


@dataclass
class Result:
    """One experiment's results directory within a record."""
    experiment: str
    directory: str
    runs: int
    valid_runs: int
    wall_s: float
    setting: str = ""
    tables: list[Table] = field(default_factory=list)
    figures: dict[str, dict] = field(default_factory=dict)     # CSV name -> {"header": [...], "rows": [[...]]}

    def table(self, title: str = "", section: str = "") -> Table:
        """The table whose title contains `title` (case-insensitive; "" or "summary": the main table)."""
        want = "" if title.lower() in ("", "summary") else title.lower()
        found = [t for t in self.tables if t.section == section
                 and (t.title == "" if not want else want in t.title.lower())]
        if len(found) != 1:
            raise RecordError(f"{self.experiment}: {len(found)} tables match {title!r} in section {section!r}: "
                              f"{[(t.section, t.title) for t in self.tables]}")
        return found[0]


@dataclass
class Record:
    name: str
    kind: str               # "experiment" (results directories), "evaluation" (an evaluation's table) or "command"
    experiment: str         # the experiment or suite; "" for a command
    engine: str             # "mininet", "ns3", or "" for a command
    command: str
    commit: str
    date: str
    wall_s: float
    machine: dict[str, str]
    note: str = ""
    results: list[Result] = field(default_factory=list)
    exit_status: int | None = None
    tail: list[str] = field(default_factory=list)     # a timed command's last lines of output

    def result(self, experiment: str) -> Result:
        found = [r for r in self.results if r.experiment == experiment]
        if not found:
            raise RecordError(f"record {self.name}: no results of {experiment!r} "
                              f"(it has {[r.experiment for r in self.results]})")
        return found[0]

    @property
    def path(self) -> Path:
        return RECORDS_DIR / f"{self.name}.toml"

    def to_toml(self) -> dict:
        out = {"name": self.name, "kind": self.kind, "experiment": self.experiment, "engine": self.engine,
               "command": self.command, "commit": self.commit, "date": self.date, "wall_s": round(self.wall_s),
               "note": self.note, "machine": self.machine}
        if self.exit_status is not None:
            out |= {"exit_status": self.exit_status, "tail": self.tail}
        if self.results:
            out["result"] = [{"experiment": r.experiment, "directory": r.directory, "runs": r.runs,
                              "valid_runs": r.valid_runs, "wall_s": round(r.wall_s), "setting": r.setting,
                              "table": [{"section": t.section, "title": t.title, "header": t.header, "rows": t.rows}
                                        for t in r.tables],
                              "figure": [{"file": name, **data} for name, data in r.figures.items()]}
                             for r in self.results]
        return out

    def write(self) -> Path:
        RECORDS_DIR.mkdir(parents=True, exist_ok=True)
        header = (f"# A recorded run of p4rcp, written by `python -m tools.records add` (or `time`): the numbers\n"
                  f"# documents quote come from here (docs/reproducing.md). Edit only `note`.\n")
        self.path.write_text(header + tomli_w.dumps(self.to_toml()))
        return self.path


def load(path: Path) -> Record:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise RecordError(f"{path}: {e}") from None
    results = [Result(experiment=r["experiment"], directory=r["directory"], runs=r["runs"],
                      valid_runs=r["valid_runs"], wall_s=r["wall_s"], setting=r.get("setting", ""),
                      tables=[Table(**t) for t in r.get("table", [])],
                      figures={f["file"]: {"header": f["header"], "rows": f["rows"]} for f in r.get("figure", [])})
               for r in data.get("result", [])]
    record = Record(name=data["name"], kind=data["kind"], experiment=data["experiment"], engine=data["engine"],
                    command=data["command"], commit=data["commit"], date=data["date"], wall_s=data["wall_s"],
                    machine=data["machine"], note=data.get("note", ""), results=results,
                    exit_status=data.get("exit_status"), tail=data.get("tail", []))
    if record.name != path.stem:
        raise RecordError(f"{path}: its name is {record.name!r}, its file {path.stem!r}")
    return record


def load_all(directory: Path = RECORDS_DIR) -> dict[str, Record]:
    return {p.stem: load(p) for p in sorted(directory.glob("*.toml")) if p.name != "claims.toml"}


# --- building a record from results directories -----------------------------------------------------------

def parse_summary(text: str) -> tuple[str, list[Table]]:
    """summary.md's setting line ("Bottleneck: ...") and every Markdown table with its section and title."""
    setting, section, tables = "", "", []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            section = line[3:].strip()
        elif line.startswith("Bottleneck:") and not setting:
            setting = line.strip()
        elif line.startswith("|") and i + 1 < len(lines) and re.match(r"^\|(-+\|)+$", lines[i + 1].strip()):
            above = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            title = above.strip() if above.strip().endswith(":") else ""
            header = _cells(line)
            rows, i = [], i + 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            tables.append(Table(section, title, header, rows))
            continue
        i += 1
    return setting, tables


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _stamp_time(directory: Path) -> float:
    if not STAMP.match(directory.name):
        raise RecordError(f"{directory}: not a results directory (results/EXPERIMENT/YYYYMMDD-HHMMSS)")
    return time.mktime(time.strptime(directory.name, "%Y%m%d-%H%M%S"))


def _shown(directory: Path) -> str:
    """A results directory as a record names it: from the repository's root, or results/PARENT/NAME."""
    try:
        return str(directory.resolve().relative_to(ROOT))
    except ValueError:
        return f"results/{directory.parent.name}/{directory.name}"


def _machine(meta: dict) -> dict[str, str]:
    """The machine and software a run's run.json names."""
    env = meta.get("environment", {})
    software = env.get("engine") or f"simple_switch {env.get('simple_switch', '?')}, {env.get('p4c', '?')}"
    return {"cpus": env.get("machine", "?"), "kernel": env.get("kernel", "?"), "software": software}


def result_of(directory: Path) -> tuple[Result, list[dict]]:
    """One results directory as a Result, and its runs' run.json."""
    summary = directory / "summary.md"
    if not summary.is_file():
        raise RecordError(f"{directory}: no summary.md (write it with python -m topo.run --report {directory})")
    metas = [json.loads(p.read_text()) for p in sorted(directory.rglob("run.json"))]
    if not metas:
        raise RecordError(f"{directory}: no run.json below it")
    # From the directory's timestamp (the runs' start) to the last run's end (run.json is written as a run
    # ends): the report, which may be written again later, is not counted.
    ended = max(p.stat().st_mtime for p in directory.rglob("run.json"))
    setting, tables = parse_summary(summary.read_text())
    figures = {}
    for path in sorted(directory.glob("fct_vs_size*.csv")):
        with path.open() as f:
            reader = csv.reader(f)
            header = next(reader)
            figures[path.name] = {"header": header, "rows": [row for row in reader]}
    return Result(experiment=directory.parent.name, directory=_shown(directory), runs=len(metas),
                  valid_runs=sum(1 for m in metas if m.get("valid")), wall_s=ended - _stamp_time(directory),
                  setting=setting, tables=tables, figures=figures), metas


def suite_of(experiments: list[str]) -> str | None:
    """The suite file (topo/experiments) whose members are exactly these experiments, in this order."""
    for path in sorted(EXPERIMENTS_DIR.glob("*.toml")):
        suite = tomllib.loads(path.read_text()).get("suite")
        if suite == experiments:
            return path.stem
    return None


def command_of(experiment: str, engine: str, metas: list[dict]) -> str:
    """The topo.run command that makes these runs: the experiment (or suite) and the options by which the runs
    differ from its file (schemes, seeds, duration)."""
    words = [".venv/bin/python", "-m", "topo.run", experiment]
    if engine == "ns3":
        words += ["--engine", "ns3"]
    path = EXPERIMENTS_DIR / f"{experiment}.toml"
    spec = tomllib.loads(path.read_text()) if path.is_file() else {}
    members = [tomllib.loads((EXPERIMENTS_DIR / f"{m}.toml").read_text()) for m in spec.get("suite", [])] or [spec]
    ran = {m["scheme"] for m in metas}
    listed = spec.get("schemes") or members[0].get("schemes") or sorted(ran)
    if set(listed) != ran:
        words += ["--schemes", ",".join([s for s in listed if s in ran] + sorted(ran - set(listed)))]
    seeds = sorted({m.get("seed", 1) for m in metas})
    if members[0].get("seeds") and seeds != sorted(members[0]["seeds"]):
        words += ["--seeds", ",".join(map(str, seeds))]
    durations = {m["duration_s"] for m in metas}
    if len(durations) == 1 and members[0].get("duration_s") and durations != {float(members[0]["duration_s"])}:
        words += ["--duration", f"{durations.pop():g}"]
    return shlex.join(words)


def from_results(name: str, directories: list[Path], command: str | None = None, note: str = "") -> Record:
    if not NAME.match(name):
        raise RecordError(f"record name {name!r}: lower-case letters, digits, '.' and '-' only")
    results, metas = [], []
    for d in directories:
        result, ms = result_of(Path(d))
        results.append(result)
        metas += ms
    engines = {m.get("engine", "mininet") for m in metas}
    commits = {m.get("environment", {}).get("commit", "?") for m in metas}
    if len(engines) != 1 or len(commits) != 1:
        raise RecordError(f"one record is one engine at one commit; these runs have {sorted(engines)}, "
                          f"{sorted(commits)}")
    engine, commit = engines.pop(), commits.pop()
    experiments = [r.experiment for r in results]
    experiment = experiments[0] if len(experiments) == 1 else suite_of(experiments)
    if experiment is None:
        raise RecordError(f"{experiments}: not one experiment and no suite of exactly these; record them apart")
    starts = [_stamp_time(Path(d)) for d in directories]
    return Record(name=name, kind="experiment", experiment=experiment, engine=engine,
                  command=command or command_of(experiment, engine, metas), commit=commit,
                  date=time.strftime("%Y-%m-%d", time.localtime(min(starts))),
                  wall_s=max(s + r.wall_s for s, r in zip(starts, results)) - min(starts),
                  machine=_machine(metas[0]), note=note, results=results)


# --- an evaluation's table -----------------------------------------------------------------------------------

EVALUATION = "evaluate"      # the experiment name of an evaluation record's one result


def is_evaluation(directory: Path) -> bool:
    """A directory that `python -m topo.evaluate` wrote: its table, not one experiment's summary."""
    return (directory / "table.md").is_file() and (directory / "table.json").is_file()


def from_evaluation(name: str, directory: Path, note: str = "") -> Record:
    """The evaluation suite's table (docs/evaluate.md) as a record: the table's rows verbatim, the command that
    makes it again, and the commit and machine its runs give."""
    if not NAME.match(name):
        raise RecordError(f"record name {name!r}: lower-case letters, digits, '.' and '-' only")
    if not is_evaluation(directory):
        raise RecordError(f"{directory}: no table.md and table.json (an evaluation's directory, "
                          f"results/evaluate/ENGINE-TIMESTAMP)")
    run = json.loads((directory / "table.json").read_text()).get("run") or {}
    if not run.get("command"):
        raise RecordError(f"{directory}: its table.json does not say how it was made (written by an older "
                          f"topo.evaluate): run the evaluation again")
    metas = [json.loads(p.read_text()) for p in sorted(directory.rglob("run.json"))]
    if not metas:
        raise RecordError(f"{directory}: no run.json below it")
    commits = {m.get("environment", {}).get("commit", "?") for m in metas}
    if len(commits) != 1:
        raise RecordError(f"one record is one commit; the runs below {directory} have {sorted(commits)}")
    setting, tables = parse_summary((directory / "table.md").read_text())
    if not tables:
        raise RecordError(f"{directory}/table.md: no table")
    started = (directory / "table.json").stat().st_mtime - run["wall_s"]
    result = Result(experiment=EVALUATION, directory=_shown(directory), runs=len(metas),
                    valid_runs=sum(1 for m in metas if m.get("valid")), wall_s=run["wall_s"], setting=setting,
                    tables=tables)
    return Record(name=name, kind="evaluation", experiment=EVALUATION, engine=run["engine"], command=run["command"],
                  commit=commits.pop(), date=time.strftime("%Y-%m-%d", time.localtime(started)),
                  wall_s=run["wall_s"], note=note, results=[result], machine=_machine(metas[0]))


# --- a timed command --------------------------------------------------------------------------------------

def this_machine() -> dict[str, str]:
    memory = ""
    try:
        kib = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                       if line.startswith("MemTotal:")))
        memory = f", {round(kib / 2 ** 20)} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    return {"cpus": f"{os.cpu_count()} CPUs{memory}", "kernel": platform.release(), "software": _toolchain()}


def _toolchain() -> str:
    found = []
    for tool in ("simple_switch", "p4c-bm2-ss"):
        where = subprocess.run(["bash", "-c", f"PATH=$PATH:{os.environ.get('P4_PREFIX', '/opt/p4')}/bin "
                                              f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
        found.append(f"{tool} {'at ' + where if where else 'not installed'}")
    return ", ".join(found)


def _commit() -> str:
    out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return out.stdout.strip() + ("+changes" if dirty else "")


def timed(name: str, command: list[str], note: str = "") -> Record:
    """Run a command from the repository's root, and record how long it took and how it ended."""
    if not NAME.match(name):
        raise RecordError(f"record name {name!r}: lower-case letters, digits, '.' and '-' only")
    commit, started = _commit(), time.time()
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall = time.time() - started
    lines = [line.rstrip()[:160] for line in proc.stdout.splitlines() if line.strip()]
    return Record(name=name, kind="command", experiment="", engine="", command=shlex.join(command), commit=commit,
                  date=time.strftime("%Y-%m-%d", time.localtime(started)), wall_s=wall, machine=this_machine(),
                  note=note, exit_status=proc.returncode, tail=lines[-TAIL_LINES:])


# --- running a record's command again ---------------------------------------------------------------------

RESULTS_LINE = re.compile(r"^results: (\S+)$")
TABLE_LINE = re.compile(r"^table: (\S+)/table\.md\b")


def rerun(record: Record, note: str = "") -> Record:
    """Run a record's command again from the repository's root, its output shown as it goes, and make the
    record of the new run under the same name (the old record's note described the old run: `note` replaces
    it). RecordError when the command fails or names no results directory."""
    command = shlex.split(record.command)
    if record.kind == "command":
        return timed(record.name, command, note)
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    directories = []
    said = TABLE_LINE if record.kind == "evaluation" else RESULTS_LINE
    for line in proc.stdout:
        print(line, end="", flush=True)
        m = said.match(line.strip())
        if m:
            directories.append(ROOT / m.group(1))
    if proc.wait() != 0:
        raise RecordError(f"{record.name}: `{record.command}` exited with status {proc.returncode}; "
                          f"docs/records/{record.name}.toml is unchanged")
    if not directories:
        line = "table: DIRECTORY/table.md" if record.kind == "evaluation" else "results: DIRECTORY"
        raise RecordError(f"{record.name}: `{record.command}` printed no '{line}' line")
    if record.kind == "evaluation":
        return from_evaluation(record.name, directories[-1], note)
    return from_results(record.name, directories, record.command, note)

"""Checks that keep the documentation honest, run by tools/tests/test_docs.py (`make test`):

- results: a number a document quotes about a result (a ratio to processor sharing, a Jain's index, drops,
  a run's time, ...) or a table of results stands only inside a generated block, where it comes from a record;
- history: no development diary in the project: no numbered work sessions, no issue numbers, no dated
  headings (history belongs in git log and CHANGELOG.md);
- references: every file a document names exists, and every section it names by title is in that document;
- schemes: every scheme, preset and experiment a document or a claim's command names is one a run takes;
- size: the documentation stays under its line budget.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

from p4rcp.presets import PRESETS
from tools.records import REPRODUCING, ROOT
from tools.records.render import GENERATED

LINE_BUDGET = 2800


def documents(root: Path = ROOT) -> list[Path]:
    """The documentation: README, docs/*.md, hosts/README.md and CHANGELOG.md."""
    return [p for p in [root / "README.md", root / "CHANGELOG.md", *sorted((root / "docs").glob("*.md")),
                        root / "hosts" / "README.md"] if p.is_file()]


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    what: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}: {self.text.strip()[:120]}"


def _outside_generated(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line not inside a generated block."""
    inside = set()
    for match in GENERATED.finditer(text):
        first = text.count("\n", 0, match.start()) + 1
        inside.update(range(first, first + match.group(0).count("\n") + 1))
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if n not in inside]


# --- results outside generated blocks ---------------------------------------------------------------------

NUM = r"~?\d+(?:\.\d+)?"
RESULT_PHRASES = [
    (rf"\b{NUM}\s*(?:x|×)\s*(?:the\s+)?(?:FCT_PS|processor sharing|PS)\b", "a ratio to processor sharing"),
    (rf"FCT\s*/\s*FCT_PS\s*(?:of|=|:|is|at|was)?\s*{NUM}", "a ratio to processor sharing"),
    (rf"\bJain(?:'s index)?\s*(?:of|=|:|is|was)?\s*~?[01]\.\d", "a Jain's index"),
    (rf"\butili[sz]ation\s*(?:of|=|:|is|was)?\s*~?(?:0\.\d+|1\.00?)\b", "a utilisation"),
    (rf"\b(?:peak|mean|standing) queue\s*(?:of|=|:|is|was)?\s*{NUM}", "a queue measured"),
    (rf"\b{NUM}\s*(?:packets|%)\s*(?:were\s+)?(?:dropped|lost|retransmitted)\b", "losses measured"),
    (rf"\b(?:dropped|drops|lost|retransmitted|retransmits)\s*(?:only\s*)?{NUM}\b(?!\s*(?:ms|s)\b)", "losses measured"),
    (rf"\b{NUM}\s*RTTs\b", "a time in round trips"),
    (rf"\bmean FCT\s*(?:of|=|:|is|was)?\s*{NUM}", "a flow completion time"),
    (rf"\b{NUM}\s*(?:x|times)\s+(?:longer|faster|slower|more|less)\b", "a measured factor"),
    (rf"\b(?:takes?|took|about|in)\s+~?{NUM}\s*(?:min|minutes|hours?)\b", "a run time"),
    (rf"\b{NUM}\s*(?:PASS|FAIL)\b", "a benchmark verdict"),
    (rf"\b{NUM}%\s+of\s+(?:the\s+)?(?:link|capacity|its share)\b", "a share of the link"),
    (rf"\b\d+\s+of\s+\d+\s+runs?\s+(?:void|valid)\b", "a run count"),
]
RESULT_COLUMNS = re.compile(r"FCT_PS|Jain|utili[sz]ation|goodput|dropped|retransmitted|mean FCT|peak queue|"
                            r"CPU ratio|CPU/pkt|instructions|to fair share|joins?\b", re.I)
DECIMAL = re.compile(r"\b\d+\.\d+\b")


def results_outside_blocks(path: Path, text: str | None = None) -> list[Finding]:
    """Result numbers in prose, and result tables, outside the generated blocks of one document
    (docs/reproducing.md is generated whole)."""
    if path.resolve() == REPRODUCING.resolve():
        return []
    text = path.read_text() if text is None else text
    name = _name(path)
    found = []
    lines = _outside_generated(text)
    for n, line in lines:
        for pattern, what in RESULT_PHRASES:
            if re.search(pattern, line, re.I):
                found.append(Finding(name, n, what + " outside a generated block", line))
                break
    # A table whose header names a result and whose rows hold decimals is a table of results.
    numbered = dict(lines)
    for n, line in lines:
        if line.startswith("|") and RESULT_COLUMNS.search(line) and re.match(r"^\|(\s*-+\s*\|)+$",
                                                                          numbered.get(n + 1, "").strip()):
            k = n + 2
            while numbered.get(k, "").startswith("|"):
                if DECIMAL.search(numbered[k]):
                    found.append(Finding(name, k, "a table of results outside a generated block", numbered[k]))
                    break
                k += 1
    return found


# --- development history ----------------------------------------------------------------------------------

# Written in pieces so that this file does not match its own patterns.
_S, _I = "sess" + "ion", "iss" + "ue"
HISTORY = [
    (rf"\b{_S}s?[ -]#?\d+", "a numbered work session"),
    (rf"\b(?:this|that|last|previous|next|same|earlier|later|each|every) {_S}\b(?!\s+(?:of|key|id|token))",
     "a work session"),
    (rf"\b{_I}s?[ -]#\d+|\b{_I}s? \d+", "an issue number"),
    (rf"\buntil {_I}\b", "an issue number"),
]
DATED_HEADING = re.compile(r"^#{1,6} .*\b(?:19|20)\d\d-\d\d-\d\d\b")
DATED_COMMENT = re.compile(r"^\s*(?:#|//|--|/?\*)\s*\(?(?:19|20)\d\d-\d\d-\d\d\b")
HISTORY_SUFFIXES = {".md", ".py", ".rs", ".p4", ".cc", ".h", ".toml", ".lua", ".sh", ".cff", ".txt"}


def tracked_files(root: Path = ROOT) -> list[Path]:
    """Files git tracks or would track (untracked but not ignored), that exist."""
    out = subprocess.run(["git", "-C", str(root), "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                         capture_output=True, text=True, check=True).stdout
    return [root / p for p in out.split("\0") if p and (root / p).is_file()]


def history(path: Path, text: str | None = None) -> list[Finding]:
    """Mentions of the project's own development history in one file. CHANGELOG.md's version headings carry
    their release dates, and the records their run dates: those are the places for history."""
    text = path.read_text(errors="replace") if text is None else text
    name = _name(path)
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        for pattern, what in HISTORY:
            if re.search(pattern, line, re.I):
                found.append(Finding(name, n, what, line))
                break
        else:
            if path.suffix == ".md" and path.name != "CHANGELOG.md" and DATED_HEADING.match(line):
                found.append(Finding(name, n, "a dated heading", line))
            elif path.suffix != ".md" and DATED_COMMENT.match(line):
                found.append(Finding(name, n, "a dated comment", line))
    return found


def project_history(root: Path = ROOT) -> list[Finding]:
    return [f for p in tracked_files(root) if p.suffix in HISTORY_SUFFIXES or p.name == "Makefile"
            for f in history(p)]


# --- references ---------------------------------------------------------------------------------------------

TOP_LEVEL = ("p4src/", "control_plane/", "topo/", "hosts/", "p4rcp/", "tools/", "ptf_tests/", "docs/")
PLACEHOLDER = re.compile(r"[A-Z]{3,}|[*{}<>]|\.\.\.")
CODE_PATH = re.compile(r"`([\w.-]+(?:/[\w.-]+)+/?)`")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#([^)\s]+))?\)")
SECTION_REF = re.compile(r"`?((?:\.\./)?(?:docs/)?[\w-]+\.md|hosts/README\.md|README)`?\)?(?:'s)?,?\s+"
                         r"[\"']([^\"']+)[\"']")


def _headings(path: Path) -> list[str]:
    return [line.lstrip("#").strip().replace("`", "") for line in path.read_text().splitlines()
            if re.match(r"^#{1,6} ", line)]


def _anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _resolve(doc: Path, target: str, root: Path) -> Path | None:
    """A path a document names: relative to the document, to the repository, or (hosts/README.md's own
    paths) to hosts/."""
    target = target.rstrip("/")
    for base in (doc.parent, root, root / "hosts"):
        if (base / target).exists():
            return base / target
    return None


def references(path: Path, root: Path = ROOT) -> list[Finding]:
    """Files and sections a document names that do not exist. CHANGELOG.md names what is gone."""
    if path.name == "CHANGELOG.md":
        return []
    text = path.read_text()
    name = _name(path, root)
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        for match in CODE_PATH.finditer(line):
            target = match.group(1)
            if (target.startswith(TOP_LEVEL) or path.name == "README.md" and target.startswith(("src/", "tests/"))) \
                    and not PLACEHOLDER.search(target) and not target.startswith(("docs/records/", "build/")) \
                    and _resolve(path, target, root) is None:
                found.append(Finding(name, n, f"names {target}, which does not exist", line))
        for match in LINK.finditer(line):
            target, anchor = match.group(1), match.group(2)
            if re.match(r"^[a-z]+:", target):
                continue
            resolved = _resolve(path, target, root)
            if resolved is None:
                found.append(Finding(name, n, f"links to {target}, which does not exist", line))
            elif anchor and resolved.suffix == ".md" and anchor not in {_anchor(h) for h in _headings(resolved)}:
                found.append(Finding(name, n, f"links to #{anchor}, which {target} has no heading for", line))
        found += _section_references(path, name, n, line, root)
    return found


def _section_references(path: Path, name: str, n: int, line: str, root: Path) -> list[Finding]:
    """`docs/design.md, "Policing"`, [design.md](design.md), "Policing", README, 'The toolchain': the document
    must have a heading that starts with the section's name."""
    found = []
    for match in SECTION_REF.finditer(line):
        target, section = match.group(1), match.group(2).replace("`", "")
        target = "README.md" if target == "README" else target
        doc = _resolve(path, target, root) or _resolve(path, f"docs/{target}", root)
        if doc is None:
            found.append(Finding(name, n, f"names {target}, which does not exist", line))
        elif not any(h.startswith(section) for h in _headings(doc)):
            found.append(Finding(name, n, f"names section \"{section}\" of {target}, which has none", line))
    return found


CODE_SUFFIXES = {".py", ".rs", ".p4", ".cc", ".h", ".toml", ".lua", ".sh"}


# A repository path in code, its comments and help texts: topo/mininet/network.py, hosts/src/tcp/.
REPO_PATH = re.compile(r"(?<![\w/.$-])((?:p4src|control_plane|topo|hosts|p4rcp|tools|ptf_tests|docs)/[\w.-]+"
                       r"(?:/[\w.-]+)*/?)([*{]?)")


def _path_exists(path: Path, target: str, glob: bool, root: Path) -> bool:
    """`target` names a file or folder; followed by * or { (rcp-queue-disc.{h,cc}), it is the start of names."""
    if not glob:
        return _resolve(path, target, root) is not None
    folder, _, stem = target.rpartition("/")
    return any(p.name.startswith(stem) for p in (root / folder).glob("*")) if (root / folder).is_dir() else False


def code_references(root: Path = ROOT) -> list[Finding]:
    """Files, documents and sections that the code, its comments and the experiment files name, which must
    exist."""
    found = []
    for path in tracked_files(root):
        if path.suffix not in CODE_SUFFIXES and path.name != "Makefile" or "records" in path.parts:
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for m in REPO_PATH.finditer(line):
                target = m.group(1).rstrip(".")
                if not PLACEHOLDER.search(target) and not target.startswith(("docs/records/", "build/")) \
                        and not _path_exists(path, target, bool(m.group(2)), root):
                    found.append(Finding(_name(path, root), n, f"names {target}, which does not exist", line))
            if ".md" in line or "README" in line:
                found += _section_references(path, _name(path, root), n, line, root)
                found += [Finding(_name(path, root), n, f"names {m.group(1)}, which does not exist", line)
                          for m in MD_NAME.finditer(line)
                          if _resolve(path, m.group(1), root) is None and _resolve(path, f"docs/{m.group(1)}", root) is None]
    return found


# The project's documents by name (docs/NAME.md, hosts/README.md, upper-case names such as README.md); not the
# files runs and tools write (summary.md, an archive's TOOLCHAIN-MANIFEST.md).
MD_NAME = re.compile(r"(?<![\w/.-])((?:docs/[\w-]+|hosts/README|(?!TOOLCHAIN-MANIFEST)[A-Z][A-Z_-]+)\.md)\b")


def _name(path: Path, root: Path = ROOT) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def line_count(root: Path = ROOT) -> int:
    return sum(len(p.read_text().splitlines()) for p in documents(root))


# --- scheme names -------------------------------------------------------------------------------------------

CC_SOURCE = ROOT / "hosts" / "src" / "cc" / "mod.rs"
EXPERIMENT_FILES = ROOT / "topo" / "experiments"
SCHEME_WORD = re.compile(r"^(?:rcp|vivace|allegro|reno|pcc|tcp|fixed)(?:[-:][\w.]+)*$")
SOURCE_FILE = re.compile(r"\.(?:cc|h|rs|py|toml|p4|md|lua|sh)$")      # ns-2's rcp-host.cc is a file
SCHEME_LISTS = [re.compile(r"--schemes[ =]([\w.:,-]+)"), re.compile(r"--preset[ =]([\w.:-]+)"),
                re.compile(r"--cc[ =]([\w.:-]+)")]


def hosts_cc_names(source: Path = CC_SOURCE) -> set[str]:
    """The names p4rcp-host --cc takes, read from CcSpec::parse's match arms; fixed and tcp take an argument."""
    body = source.read_text().split("pub fn parse(", 1)[1].split("_ => Err(", 1)[0]
    return set(re.findall(r'"([a-z0-9-]+)" =>', body))


def scheme_names(root: Path = ROOT) -> set[str]:
    """Every name a run takes as a scheme: the presets, the hosts' --cc names, and the [scheme.NAME] tables of
    the shipped experiments."""
    tables = {name for p in sorted((root / "topo" / "experiments").glob("*.toml"))
              for name in tomllib.loads(p.read_text()).get("scheme", {})}
    return set(PRESETS) | hosts_cc_names(root / "hosts" / "src" / "cc" / "mod.rs") | tables


def is_scheme(name: str, known: set[str]) -> bool:
    head, sep, arg = name.partition(":")
    return name in known or bool(sep and arg and head in ("tcp", "fixed") and head in known)


def unknown_schemes(path: Path, text: str | None = None, known: set[str] | None = None,
                    stems: set[str] | None = None) -> list[Finding]:
    """Schemes and presets a document names (`--schemes a,b`, `--preset x`, `--cc x`, or a scheme-like word
    in backticks) that no run takes, outside the generated blocks. A backticked word that is a source file's
    name (`rcp-queue-disc`) is not a scheme. CHANGELOG.md names what is gone."""
    if path.name == "CHANGELOG.md" or path.resolve() == REPRODUCING.resolve():
        return []
    text = path.read_text() if text is None else text
    known = scheme_names() if known is None else known
    stems = {p.name.split(".")[0] for p in tracked_files()} if stems is None else stems
    found = []
    for n, line in _outside_generated(text):
        names = [w for rx in SCHEME_LISTS for m in rx.finditer(line) for w in m.group(1).split(",")]
        names += [w for w in re.findall(r"`([\w.:-]+)`", line)
                  if SCHEME_WORD.match(w) and w not in stems and not SOURCE_FILE.search(w)]
        for name in names:
            if not PLACEHOLDER.search(name) and not is_scheme(name, known):
                found.append(Finding(_name(path), n, f"names the scheme {name}, which no run takes", line))
    return found


def unrunnable_claims(claims: dict, known: set[str] | None = None) -> list[str]:
    """The claims whose command names an experiment or a scheme that does not exist."""
    known = scheme_names() if known is None else known
    bad = []
    for claim in claims.get("claim", []):
        command = claim.get("command", "")
        m = re.search(r"topo\.run (\S+)|make (?:run|sim) EXP=(\S+)", command)
        if m and not (EXPERIMENT_FILES / f"{m.group(1) or m.group(2)}.toml").is_file():
            bad.append(f"claim {claim['id']}: no experiment {m.group(1) or m.group(2)}: {command}")
        bad += [f"claim {claim['id']}: no scheme {w}: {command}" for rx in SCHEME_LISTS
                for m in rx.finditer(command) for w in m.group(1).split(",") if not is_scheme(w, known)]
    return bad

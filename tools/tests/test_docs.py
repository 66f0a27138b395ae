"""The documentation's checks: its numbers come from the records, it carries no development history, it
names only files and sections that exist, and it stays within its budget. Each check is also shown to fail
on a text that breaks it, so that a passing check means something."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tools.records import HEADLINE_PNG, REPRODUCING, ROOT, lint, render
from tools.records.store import load_all

DOCS = lint.documents()


def test_the_documentation_is_where_the_checks_look():
    names = {str(p.relative_to(ROOT)) for p in DOCS}
    assert {"README.md", "CHANGELOG.md", "hosts/README.md", "docs/reproducing.md", "docs/design.md",
            "docs/tutorial.md", "docs/experiments.md", "docs/schemes.md"} <= names


def test_generated_texts_and_the_figure_match_the_records():
    assert render.stale() == []


def test_the_headline_figure_is_small():
    assert HEADLINE_PNG.stat().st_size < 150_000


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_result_is_quoted_outside_a_generated_block(doc):
    assert [str(f) for f in lint.results_outside_blocks(doc)] == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_file_and_section_a_document_names_exists(doc):
    assert [str(f) for f in lint.references(doc)] == []


def test_every_document_and_section_the_code_names_exists():
    assert [str(f) for f in lint.code_references()] == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_document_says_what_it_is_for_in_its_first_lines(doc):
    lines = doc.read_text().splitlines()
    assert lines[0].startswith("# ") and lines[1] == ""
    purpose = lines[2]
    assert purpose and not purpose.startswith(("#", "|", "```", "<!--", "!["))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_scheme_a_document_names_is_one_a_run_takes(doc):
    assert [str(f) for f in lint.unknown_schemes(doc)] == []


def test_every_claim_command_names_an_experiment_and_schemes_that_exist():
    assert lint.unrunnable_claims(render.load_claims()) == []


def test_the_documentation_keeps_to_its_line_budget():
    assert lint.line_count() <= lint.LINE_BUDGET


def test_no_development_history_in_the_project():
    assert [str(f) for f in lint.project_history()] == []


def test_every_claim_reads_cells_its_record_holds():
    claims, records = render.load_claims(), load_all()
    rows = render.evaluate(claims, records)
    assert {r.verdict for r in rows} <= {"holds", "does not hold", render.NOT_RECORDED}
    for row in rows:
        assert row.claim["paper"] in claims["papers"]
        if row.record:
            assert "{" not in row.current, row.claim["id"]
            assert row.claim["criterion"]


# --- each check fails when it should ---------------------------------------------------------------------

def test_the_stale_check_sees_a_record_change():
    claims, records = render.load_claims(), load_all()
    page = render.reproducing(claims, records)
    table = records["default-ns3"].result("fct-short").table()
    col = table.column("mean FCT / FCT_PS")
    row = next(r for r in table.rows if r[0] == "rcp")
    row[col] = "9.99"
    assert render.reproducing(claims, records) != page
    readme = (ROOT / "README.md").read_text()
    assert render.fill_blocks(readme, claims, records) != readme


def test_the_result_check_flags_results_in_prose_and_tables(tmp_path):
    doc = tmp_path / "doc.md"
    text = "\n".join([
        "# A page", "", "What it is for.", "",
        "RCP's flows took 1.21 x FCT_PS and TCP's 2.13 x FCT_PS.",
        "Jain's index 0.998 once they shared the link; the new flows joined in 9.2 RTTs.",
        "The run took about 6 minutes, and 186 packets were dropped.",
        "",
        "| scheme | mean FCT / FCT_PS |", "|---|---|", "| rcp | 1.20 |", "",
        "<!-- generated: headline -->", "RCP 1.20 x FCT_PS, Jain 1.000", "<!-- end generated: headline -->", "",
        "Design values are not results: alpha = 0.4, beta = 0.4, T = min(10 ms, d0), an epoch of 16.4 ms.",
    ])
    found = lint.results_outside_blocks(doc, text)
    assert sorted(f.line for f in found) == [5, 6, 7, 11]
    assert all(f.line < 13 for f in found)          # the generated block and the design values pass


def test_the_history_check_flags_sessions_issues_and_dated_headings(tmp_path):
    words = {"s": "sess" + "ion", "i": "iss" + "ue"}
    text = "\n".join([
        "# Notes", "",
        "Measured in {s} 19 on this machine.".format(**words),
        "Until {i} 32 the queue was sampled on enqueue.".format(**words),
        "As {i} #26 asked.".format(**words),
        "What this {s} changed.".format(**words),
        "## 2026-11-26, the benchmark again",
        "A P4Runtime {s} key is fine, and so is a TCP connection.".format(**words),
    ])
    found = lint.history(tmp_path / "notes.md", text)
    assert sorted(f.line for f in found) == [3, 4, 5, 6, 7]
    code = "# 2026-11-24: retuned the gains\nx = 1  # gains of the ns-2 router\n"
    assert [f.line for f in lint.history(tmp_path / "law.py", code)] == [1]


def test_the_reference_check_flags_missing_files_and_sections(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "design.md").write_text("# Design\n\nWhat it is.\n\n## The law\n")
    (tmp_path / "topo").mkdir()
    (tmp_path / "topo" / "queue.h").write_text("")
    nowhere, queue = "topo/" + "nowhere.py", "topo/" + "queue"    # in pieces: this file names no missing file
    page = docs / "page.md"
    page.write_text("# Page\n\nSee [the design](design.md#the-law), `docs/design.md`, \"The law\",\n"
                    "[nothing](gone.md), [a section](design.md#policing), docs/design.md, \"Policing\",\n"
                    f"and `{nowhere}`.\n")
    found = lint.references(page, tmp_path)
    assert sorted(f.what.split(",")[0] for f in found) == sorted([
        "links to gone.md", "links to #policing", "names section \"Policing\" of docs/design.md",
        f"names {nowhere}"])
    design = "docs/" + "design.md"           # in pieces, so that this file names no section itself
    (tmp_path / "law.py").write_text(f'# the law ({design}, "The law"); its limits ({design}, \'Limits\')\n'
                                     f'# the queue ({queue}.{{h,cc}}, {queue}.*), the runner ({nowhere})\n')
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    found = lint.code_references(tmp_path)
    assert [f.what for f in found] == ['names section "Limits" of docs/design.md, which has none',
                                       f"names {nowhere}, which does not exist"]


def test_the_reproducing_page_is_generated_whole():
    assert REPRODUCING.read_text().splitlines()[0] == "# Reproducing the papers"
    assert lint.results_outside_blocks(REPRODUCING) == []      # all of it comes from the records


def test_documents_quote_only_blocks_the_generator_knows(tmp_path):
    claims, records = render.load_claims(), load_all()
    with pytest.raises(render.RecordError, match="unknown generated block"):
        render.fill_blocks("<!-- generated: nonsense -->\nx\n<!-- end generated: nonsense -->", claims, records)
    assert Path(ROOT / "docs" / "records" / "claims.toml").is_file()


def test_the_scheme_check_flags_schemes_no_run_takes(tmp_path):
    known = lint.scheme_names()
    assert {"rcp", "rcp-plain", "reno-iw2", "allegro", "vivace-loss-p4rcp", "tcp", "fixed"} <= known
    assert lint.is_scheme("tcp:reno", known) and lint.is_scheme("fixed:8mbit", known)
    assert not lint.is_scheme("vivace:2", known) and not lint.is_scheme("rcp-ff", known)
    text = "\n".join([
        "# Schemes", "", "What to run.", "",
        "Run `rcp-plain`, `tcp:bbr` or `fixed:RATE`; `rcp-queue-disc` is a file, and so is `rcp-host.cc`.",
        "python -m topo.run flash-crowd --schemes rcp,rcp-ff,tcp",
        "python -m control_plane --preset rcp-fast --topology t.toml --switch s1",
        "Or `vivace-fast`.",
    ])
    found = lint.unknown_schemes(tmp_path / "schemes.md", text, known, stems={"rcp-queue-disc"})
    assert [(f.line, f.what.split()[3].rstrip(",")) for f in found] == [(6, "rcp-ff"), (7, "rcp-fast"), (8, "vivace-fast")]
    claims = {"claim": [{"id": "a", "command": "make sim EXP=no-such-experiment"},
                        {"id": "b", "command": ".venv/bin/python -m topo.run fct --schemes rcp,rcp-ff"},
                        {"id": "c", "command": "make run EXP=fct"}]}
    assert [b.split(":")[0] for b in lint.unrunnable_claims(claims, known)] == ["claim a", "claim b"]

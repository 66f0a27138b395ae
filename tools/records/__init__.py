"""Recorded results and the documents generated from them: `python -m tools.records` (`make docs`).

Every result a document quotes comes from a record: a small committed TOML file in docs/records/, one per
recorded run (an experiment or a suite of them, or a timed command), holding the command, the commit, the
date, the machine and the rows of the run's summary tables. From the records and the paper claims of
docs/records/claims.toml this package writes docs/reproducing.md, every generated block of the other
documents (between `<!-- generated: NAME -->` markers) and the README's headline figure; the tests in
tools/tests/ fail when one of them is stale, or when a document quotes a result outside a generated block.

- store: records: read, write, and build one from results directories (`add`) or a timed command (`time`);
- render: claims against records, docs/reproducing.md, the generated blocks, the headline figure;
- lint: the documentation checks (results outside generated blocks, development history, dead references).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECORDS_DIR = ROOT / "docs" / "records"
CLAIMS_FILE = RECORDS_DIR / "claims.toml"
REPRODUCING = ROOT / "docs" / "reproducing.md"
HEADLINE_PNG = ROOT / "docs" / "img" / "headline.png"

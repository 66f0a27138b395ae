"""The resources a Tofino compile used, as Markdown: `python3 -m tools.tna_resources --target T --log LOG DIR`.

DIR is bf-p4c's output folder (`-o DIR`, compiled with `-g` so that it writes `pipe/logs/resources.json`
and `pipe/logs/phv.json`, the logs whose formats `backends/tofino/compiler_interfaces/schemas/` of p4c
specifies); LOG is what bf-p4c printed. The summary: stages, SRAM and TCAM blocks, map RAMs, stateful
(meter) ALUs, hash bits, gateways and logical tables, each against what the device has; PHV containers
by width; the warnings the compiler gave; then the same per stage. Standard library only (make runs it
with /usr/bin/python3, as before the project's environment exists).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

TARGETS = {"tofino": "Tofino 1 (`--target tofino --arch tna`)", "tofino2": "Tofino 2 (`--target tofino2 --arch t2na`)"}
# Per stage: (what, its key in a stage of resources.json, its list in there, how many the device has).
STAGE_RESOURCES = (
    ("SRAM blocks", "rams", "srams", lambda r: r["nRows"] * r["nColumns"]),
    ("TCAM blocks", "tcams", "tcams", lambda r: r["nRows"] * r["nColumns"]),
    ("map RAMs", "map_rams", "maprams", lambda r: r["nRows"] * r["nUnits"]),
    ("stateful ALUs", "meter_alus", "meters", lambda r: r["nAlus"]),
    ("hash bits", "hash_bits", "bits", lambda r: r["nBits"]),
    ("gateways", "gateways", "gateways", lambda r: r["nRows"] * r["nUnits"]),
    ("logical tables", "logical_tables", "ids", lambda r: r["size"]),
)
WARNING = re.compile(r"\bwarning\b", re.IGNORECASE)


class ResourcesError(RuntimeError):
    pass


def _one(folder: Path, name: str) -> Path:
    found = sorted(folder.rglob(name))
    if len(found) != 1:
        raise ResourcesError(f"{folder}: expected one {name} (bf-p4c -g writes it in pipe/logs/), found "
                             f"{len(found)}: {[str(p) for p in found]}")
    return found[0]


def stage_usage(resources: dict) -> list[dict]:
    """Per MAU stage: how many of each resource it uses, and how many it has."""
    out = []
    for stage in sorted(resources["resources"]["mau"]["mau_stages"], key=lambda s: s["stage_number"]):
        row = {"stage": stage["stage_number"]}
        for what, key, items, capacity in STAGE_RESOURCES:
            res = stage.get(key) or {}
            row[what] = (len(res.get(items, [])), capacity(res) if res else 0)
        out.append(row)
    return out


def phv_usage(resources: dict, phv: dict) -> list[tuple[str, int, int]]:
    """(kind and width, containers holding a field, containers the device has) per container type."""
    available = {}
    for kind, types in resources["resources"].get("phv_containers", {}).items():
        for t in types:
            available[kind, t["width"]] = set(t["addresses"])
    used: dict[tuple[str, int], set[int]] = {}
    for c in phv.get("containers", []):
        if c.get("slices"):
            kind = c.get("container_type", "normal")
            used.setdefault((kind, c["bit_width"]), set()).add(c["phv_number"])
    return [(f"{kind} {width}-bit", len(used.get((kind, width), ())), len(addrs))
            for (kind, width), addrs in sorted(available.items()) if addrs or used.get((kind, width))]


def summary(target: str, folder: Path, log: str) -> str:
    resources = json.loads(_one(folder, "resources.json").read_text())
    phv = json.loads(_one(folder, "phv.json").read_text())
    stages = stage_usage(resources)
    used_stages = [s["stage"] for s in stages if s["logical tables"][0]]
    n_stages = resources["resources"]["mau"]["nStages"]
    warnings = [line.strip() for line in log.splitlines() if WARNING.search(line)]
    lines = [f"### {TARGETS.get(target, target)}", "",
             f"bf-p4c {resources.get('compiler_version', '?')}; {len(warnings)} warning(s).", "",
             "| resource | used | of |", "|---|---|---|",
             f"| stages | {max(used_stages) + 1 if used_stages else 0} | {n_stages} |"]
    for what, *_ in STAGE_RESOURCES:
        # resources.json lists the stages the program uses (Tofino 2: 12 of 20); every stage has the same
        # resources, so the device has nStages times one stage's
        per_stage = max((s[what][1] for s in stages), default=0)
        lines.append(f"| {what} | {sum(s[what][0] for s in stages)} | {per_stage * n_stages} |")
    for what, used, available in phv_usage(resources, phv):
        lines.append(f"| PHV containers, {what} | {used} | {available} |")
    lines += ["", "| stage | " + " | ".join(w for w, *_ in STAGE_RESOURCES) + " |",
              "|---" * (len(STAGE_RESOURCES) + 1) + "|"]
    for s in stages:
        if s["stage"] <= max(used_stages, default=-1):
            lines.append(f"| {s['stage']} | " + " | ".join(str(s[w][0]) for w, *_ in STAGE_RESOURCES) + " |")
    if warnings:
        lines += ["", "Warnings:", ""] + [f"- {w}" for w in warnings]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tools.tna_resources", description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", required=True, help="bf-p4c's --target: tofino, tofino2")
    ap.add_argument("--log", type=Path, required=True, help="what bf-p4c printed")
    ap.add_argument("folder", type=Path, help="bf-p4c's -o folder")
    args = ap.parse_args(argv)
    try:
        sys.stdout.write(summary(args.target, args.folder, args.log.read_text()))
    except (OSError, ResourcesError, KeyError, ValueError) as e:
        print(f"tna_resources: {args.folder}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

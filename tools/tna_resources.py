"""The resources a Tofino compile used, as Markdown: `python3 -m tools.tna_resources --target T --log LOG DIR`;
`python3 -m tools.tna_resources --profiles P1,P2,... ROOT`: one table of every profile's compiles in
ROOT/PROFILE/TARGET/ (make check-tna-backend), written also as ROOT/profiles.json.

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


def _logs(folder: Path) -> tuple[dict, dict]:
    """resources.json and phv.json of the compile in folder."""
    return (json.loads(_one(folder, "resources.json").read_text()),
            json.loads(_one(folder, "phv.json").read_text()))


def summary(target: str, folder: Path, log: str) -> str:
    resources, phv = _logs(folder)
    stages = stage_usage(resources)
    whole = totals(folder, resources, phv)
    warnings = [line.strip() for line in log.splitlines() if WARNING.search(line)]
    lines = [f"### {TARGETS.get(target, target)}", "",
             f"bf-p4c {whole['compiler']}; {len(warnings)} warning(s).", "",
             "| resource | used | of |", "|---|---|---|"]
    lines += [f"| {what} | {whole[what][0]} | {whole[what][1]} |" for what in ("stages", *(w for w, *_ in STAGE_RESOURCES))]
    for what, used, available in phv_usage(resources, phv):
        lines.append(f"| PHV containers, {what} | {used} | {available} |")
    lines += ["", "| stage | " + " | ".join(w for w, *_ in STAGE_RESOURCES) + " |",
              "|---" * (len(STAGE_RESOURCES) + 1) + "|"]
    lines += [f"| {s['stage']} | " + " | ".join(str(s[w][0]) for w, *_ in STAGE_RESOURCES) + " |"
              for s in stages if s["stage"] < whole["stages"][0]]
    if warnings:
        lines += ["", "Warnings:", ""] + [f"- {w}" for w in warnings]
    return "\n".join(lines) + "\n"


def totals(folder: Path, resources: dict, phv: dict) -> dict:
    """One compile's use of the device, whole: each resource (used, the device's), the compiler, the binary."""
    stages = stage_usage(resources)
    used_stages = [s["stage"] for s in stages if s["logical tables"][0]]
    n_stages = resources["resources"]["mau"]["nStages"]
    out = {"compiler": resources.get("compiler_version", "?"),
           "stages": (max(used_stages) + 1 if used_stages else 0, n_stages)}
    for what, *_ in STAGE_RESOURCES:
        # resources.json lists the stages the program uses (Tofino 2: 12 of 20); every stage has the same
        # resources, so the device has nStages times one stage's
        per_stage = max((s[what][1] for s in stages), default=0)
        out[what] = (sum(s[what][0] for s in stages), per_stage * n_stages)
    phv_rows = phv_usage(resources, phv)
    out["PHV containers"] = (sum(u for _, u, _ in phv_rows), sum(a for _, _, a in phv_rows))
    # The assembler's output (bf-p4c runs bfas where it is installed): the binary a driver loads.
    binaries = sorted(folder.rglob("*.bin"))
    out["binary"] = str(binaries[0].relative_to(folder)) if binaries else None
    return out


PROFILE_COLUMNS = ("stages", "SRAM blocks", "TCAM blocks", "stateful ALUs", "hash bits", "gateways",
                   "PHV containers")


def profiles_table(root: Path, profiles: list[str]) -> tuple[str, dict]:
    """Every profile's compile for every target found in ROOT/PROFILE/TARGET/, as one Markdown table (used
    of the device's; the stages left to a host program) and as a dict."""
    found: dict[str, dict[str, dict]] = {}
    for profile in profiles:
        targets = [t for t in TARGETS if (root / profile / t).is_dir()]
        if not targets:
            raise ResourcesError(f"{root / profile}: no compile for any of {', '.join(TARGETS)}")
        found[profile] = {t: totals(root / profile / t, *_logs(root / profile / t)) for t in targets}
    compilers = sorted({c["compiler"] for per in found.values() for c in per.values()})
    lines = [f"bf-p4c {', '.join(compilers)}:", "",
             "| profile | target | " + " | ".join(PROFILE_COLUMNS) + " | stages left | binary |",
             "|---" * (len(PROFILE_COLUMNS) + 4) + "|"]
    for profile, per in found.items():
        for target, t in per.items():
            used, of = t["stages"]
            lines.append(f"| {profile} | {TARGETS[target].split(' (')[0]} | "
                         + " | ".join(f"{t[c][0]} of {t[c][1]}" for c in PROFILE_COLUMNS)
                         + f" | {of - used} | {t['binary'] or 'none (no assembler)'} |")
    return "\n".join(lines) + "\n", found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tools.tna_resources", description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", help="bf-p4c's --target: tofino, tofino2")
    ap.add_argument("--log", type=Path, help="what bf-p4c printed")
    ap.add_argument("--profiles", help="comma-separated profiles: FOLDER holds PROFILE/TARGET/ for each")
    ap.add_argument("folder", type=Path, help="bf-p4c's -o folder; with --profiles, the folder of the profiles'")
    args = ap.parse_args(argv)
    if not args.profiles and not (args.target and args.log):
        ap.error("give --target and --log (one compile), or --profiles (every profile's compiles)")
    try:
        if args.profiles:
            text, found = profiles_table(args.folder, [p for p in args.profiles.split(",") if p])
            (args.folder / "profiles.json").write_text(json.dumps(found, indent=1) + "\n")
            sys.stdout.write(text)
        else:
            sys.stdout.write(summary(args.target, args.folder, args.log.read_text()))
    except (OSError, ResourcesError, KeyError, ValueError) as e:
        print(f"tna_resources: {args.folder}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A run directory's raw records, read once: flows, per-flow rate samples, receiver times, control records."""

from __future__ import annotations

import json
from pathlib import Path

from p4rcp.analysis import join_receiver_times


def read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue   # a line cut by a killed process
    return rows


def void_runs(roots: list[Path]) -> tuple[int, int, list[str]]:
    """Over the results directories of one invocation: (void runs, runs, each void run's path below results/
    with its first problem)."""
    void, total = [], 0
    for root in roots:
        for path in sorted(root.glob("**/run.json")):
            meta = json.loads(path.read_text())
            total += 1
            if not meta["valid"]:
                problem = meta["problems"][0] if meta["problems"] else "no reason recorded"
                void.append(f"{root.parent.name}/{path.parent.relative_to(root)}: {problem}")
    return len(void), total, void


def load_run(run_dir: Path, meta: dict, exp, topology) -> dict:
    """Everything the report needs from one run directory."""
    flows, rates = [], {}
    for path in sorted(run_dir.glob("flows_*.jsonl")):
        host = path.stem.removeprefix("flows_")
        records = read_jsonl(path)
        for r in records:
            r["host"] = host
        flows += records
        starts = {r["flow_id"]: r["start_unix_s"] for r in records}
        for line in read_jsonl(run_dir / f"trace_{host}.jsonl"):
            if line.get("event") == "sample" and line["flow_id"] in starts:
                rates.setdefault(f"{host}/{line['flow_id']}", []).append(
                    (starts[line["flow_id"]] + line["t_s"], line.get("goodput_kbps") or 0.0))
    received = [r for path in sorted(run_dir.glob("recv_*.jsonl")) for r in read_jsonl(path)]
    join_receiver_times(flows, received, {name: h.ip for name, h in topology.hosts.items()})
    control = {}
    for sw, port in topology.bottlenecks:
        control[(sw, port)] = [r for r in read_jsonl(run_dir / f"control_{sw}.jsonl") if r["port"] == port]
    return {"meta": meta, "flows": flows, "rates": rates, "control": control, "topology": topology}



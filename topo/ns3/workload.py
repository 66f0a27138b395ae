"""What a run starts on the ns-3 engine: the same schedule as on Mininet (topo/schedule.py), read from the
host commands instead of executed. A Poisson source's arrivals are those its `p4rcp-host traffic` command
would start (`--plan` prints them), so both engines see the same flows for a seed; long flows start, stop
and are numbered as schedule() says; every flow runs the scheme (--cc) and DSCP its command gives it, with
the controller seed the hosts would give it.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from topo.schedule import BandwidthChange, Launch, RunDir, first_error_line, long_flow_id, schedule

PLAN_TIMEOUT_S = 120
# An ns-3 link shapes bits: a Poisson source's load counts every frame at its own length, where on bmv2, which
# shapes packets per second, it counts slots (p4rcp-host traffic --load-unit; docs/experiments.md, "Load").
LOAD_UNIT = "bytes"
POISSON_FLOW_BASE = 0x4000_0000   # Poisson flows' ids: this + index (the hosts draw a random base)


@dataclass(frozen=True)
class Flow:
    host: str                 # sender
    receiver: str
    start_s: float
    flow_id: int
    size_bytes: int | None    # None: open-ended, sends for duration_s
    duration_s: float | None
    index: int | None         # position in its Poisson workload; None for a long flow
    cc: str                   # its scheme, as its command's --cc
    dscp: int = 0
    generator_seed: int | None = None  # a Poisson flow's: its generator's --seed, which seeds its controller

    @property
    def is_tcp(self) -> bool:
        return self.cc == "tcp" or self.cc.startswith("tcp:")


@dataclass(frozen=True)
class Plan:
    flows: list[Flow]
    events: list[BandwidthChange]
    planned: dict[str, int]   # Poisson sender -> flows its generator planned


def plan(exp, variant, scheme, seed: int, out: RunDir) -> Plan:
    topology = variant.topology
    items = schedule(exp, variant, scheme, seed, out)
    launches = {item.flow_id: item for item in items if isinstance(item, Launch) and item.kind == "long"}
    flows, planned = [], {}
    receiver_of = {f.sender: f.receiver for f in [*exp.long_flows, *exp.poisson]}
    for i, flow in enumerate(exp.long_flows):
        stop = flow.stop_s if flow.stop_s is not None else exp.duration_s
        flow_id = long_flow_id(seed, i)
        command = launches[flow_id].command
        flows.append(Flow(flow.sender, flow.receiver, flow.start_s, flow_id, None, stop - flow.start_s, None,
                          option(command, "--cc"), int(option(command, "--dscp", "0"))))
    for item in items:
        if isinstance(item, Launch) and item.kind == "poisson":
            arrivals = arrivals_of(item.command + ["--mss", str(topology.mss_bytes), "--load-unit", LOAD_UNIT])
            planned[item.host] = len(arrivals)
            cc, generator_seed = option(item.command, "--cc"), int(option(item.command, "--seed"))
            flows += [Flow(item.host, receiver_of[item.host], t, POISSON_FLOW_BASE + k, size, None, k, cc,
                           generator_seed=generator_seed)
                      for k, (t, size) in enumerate(arrivals)]
    return Plan(flows, [e for e in items if isinstance(e, BandwidthChange)], planned)


def option(command: list[str], name: str, default: str | None = None) -> str:
    """The value of a host command's option."""
    if name in command:
        return command[command.index(name) + 1]
    if default is None:
        raise ValueError(f"{Path(command[0]).name} command without {name}: {' '.join(command)}")
    return default


def arrivals_of(traffic_command: list[str]) -> list[tuple[float, int]]:
    """(time, size) of every flow a `p4rcp-host traffic` command starts, in order."""
    done = subprocess.run(traffic_command + ["--plan"], capture_output=True, text=True, timeout=PLAN_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"{Path(traffic_command[0]).name} traffic --plan failed: "
                           f"{first_error_line(done.stderr + done.stdout)}")
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    if [r["index"] for r in rows] != list(range(len(rows))):
        raise RuntimeError("p4rcp-host traffic --plan: arrivals out of order")
    return [(float(r["t_s"]), int(r["size_bytes"])) for r in rows]

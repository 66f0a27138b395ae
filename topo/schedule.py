"""What a run starts and when: the host commands of one scheme, sweep point and seed.

Each engine starts what it lists (the ns-3 engine asks the host binary for a Poisson source's arrivals,
topo/ns3/workload.py); before any run, the runner has the host binary check the same commands
(topo/host_check.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from topo import hosts

if TYPE_CHECKING:
    from topo.experiment import Experiment, Scheme, Variant


@dataclass
class RunDir:
    root: Path

    def flows(self, host: str) -> Path:
        return self.root / f"flows_{host}.jsonl"

    def trace(self, host: str) -> Path:
        return self.root / f"trace_{host}.jsonl"

    def recv(self, host: str) -> Path:
        return self.root / f"recv_{host}.jsonl"

    def capture(self, flow_id: int) -> Path:
        """An external scheme's flow, as its receiving host saw it (headers only)."""
        return self.root / f"capture_{flow_id}.pcap"

    def stderr(self, host: str, kind: str) -> Path:
        """What a host program printed on stderr (its last line names why it failed)."""
        return self.root / f"stderr_{host}_{kind}.log"


@dataclass(frozen=True)
class Launch:
    """A host program to start at `at_s` seconds into the run."""
    at_s: float
    host: str
    kind: str                 # "long" (one flow of a set duration), "poisson" (a traffic generator)
    command: list[str]
    flow_id: int | None = None
    receiver: str | None = None   # a long flow's receiving host
    stop_s: float | None = None   # an external sender: stopped then if it has not ended by itself


@dataclass(frozen=True)
class BandwidthChange:
    at_s: float
    bottleneck_scale: float   # of the topology's bottleneck rates


def long_flow_id(seed: int, index: int) -> int:
    """The id of the index-th long flow of a seed; it also seeds the flow's controller."""
    return 1000 * seed + index


def schedule(exp: Experiment, variant: Variant, scheme: Scheme, seed: int,
             out: RunDir) -> list[Launch | BandwidthChange]:
    """The run's launches and bandwidth changes, in time order.

    The seed fixes the Poisson workloads and the long flows' ids, from which the senders seed their
    controllers: every scheme of one seed sees the same flows."""
    topology = variant.topology
    cc = scheme.cc
    items: list[Launch | BandwidthChange] = []
    for i, flow in enumerate(exp.long_flows):
        stop = flow.stop_s if flow.stop_s is not None else exp.duration_s
        flow_id = long_flow_id(seed, i)
        receiver_ip = topology.hosts[flow.receiver].ip
        flow_cc = exp.tcp_cc if i < variant.tcp_flows else flow.cc or cc
        if scheme.is_external and flow_cc == cc:
            command = scheme.sender_command(sender_ip=topology.hosts[flow.sender].ip, receiver_ip=receiver_ip,
                                            duration_s=stop - flow.start_s, flow_id=flow_id)
        else:
            command = hosts.long_flow(receiver_ip, flow_cc, stop - flow.start_s, flow_id, out.flows(flow.sender),
                                      out.trace(flow.sender), dscp=flow.dscp)
        items.append(Launch(flow.start_s, flow.sender, "long", command, flow_id, flow.receiver,
                            stop if scheme.is_external else None))
    C = topology.switch(topology.bottlenecks[0][0]).ports[topology.bottlenecks[0][1]].capacity_bps
    for i, src in enumerate(exp.poisson):
        share = variant.load / len(exp.poisson)
        items.append(Launch(0.0, src.sender, "poisson",
                            hosts.poisson(topology.hosts[src.receiver].ip, cc, share, C, src.sizes, exp.duration_s,
                                          seed=1000 * seed + i, out=out.flows(src.sender),
                                          exact_load=src.exact_load, repeat_every_s=src.repeat_every_s,
                                          arrivals=src.arrivals)))
    items += [BandwidthChange(e.at_s, e.bottleneck_scale) for e in exp.events]
    return sorted(items, key=lambda item: item.at_s)


def receivers(exp: Experiment) -> list[str]:
    return sorted({f.receiver for f in [*exp.long_flows, *exp.poisson]})


def first_error_line(text: str) -> str:
    """The line of a program's output that says what went wrong (clap's 'error: ...', or our own)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return next((line for line in lines if line.startswith(("error", "p4rcp-host"))), lines[0] if lines else
                "exited without a message")

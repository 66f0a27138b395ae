"""The Mininet engine's runs: every run of an experiment (sweep point x seed x scheme) with bmv2 switches and the
Rust hosts in real time, each in a network of its own (network.py), then the report (topo/report).

run_experiment is the engine's entry (topo/run.py picks the engine); run_scheme is one run; hold stops at
Mininet's command line in the experiment's network instead.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from control_plane.driver import SwitchUnavailable
from p4rcp import dataplane as dp
from p4rcp import monitor as causes
from p4rcp.monitor import INPUT_DROP_SHARE, MEMORY_SAMPLE_S, Monitor
from p4rcp.params import RcpParams
from p4rcp.processes import stop_processes
from p4rcp.stalls import PortLimits, find_stalls
from p4rcp.toolchain import BUILD_JSON, ROOT, ToolchainMissing, bmv2_build, find_tool, tool_version
from topo import hosts
from topo.experiment import Experiment, Variant
from topo.mininet import external
from topo.mininet.network import CONTROL_PLANES, InputCounts, Network, SwitchOptions
from topo.progress import Progress
from topo.report import read_jsonl, write_report
from topo.schedule import BandwidthChange, Launch, RunDir, long_flow_id, receivers, schedule

GRACE_S = 20.0                  # for senders to finish after the last flow's end
RECEIVER_START_S = 0.5          # receivers listen before the first sender starts


@dataclass(frozen=True)
class RunOptions:
    """What the command line adds to an experiment's runs."""
    pcap: bool = False                    # bmv2's capture of every switch port, in each run's pcap/
    expose_control_ports: bool = False    # the switches' Thrift ports reachable from other hosts
    environment: dict = field(default_factory=dict)   # what ran it (commit, bmv2, p4c, kernel), into run.json
    control_plane: str = "thread"         # each switch's control loop: a thread here, or its own process
                                          # (python -m control_plane; topo/mininet/network.py CONTROL_PLANES)
    memory_sample_s: float = MEMORY_SAMPLE_S   # every process's resident memory this often, into memory.jsonl

    def __post_init__(self):
        if self.control_plane not in CONTROL_PLANES:
            raise ValueError(f"control plane must run as one of {', '.join(CONTROL_PLANES)}, got {self.control_plane!r}")

    def switch_options(self, out: RunDir) -> SwitchOptions:
        return SwitchOptions(pcap_dir=out.root / "pcap" if self.pcap else None,
                             expose_control_ports=self.expose_control_ports)


@dataclass
class HostProcess:
    """A host program of the run: what it is, its process, where its stderr goes."""
    host: str
    kind: str                  # "receiver", "long", "poisson", "capture"
    proc: subprocess.Popen
    stderr: Path
    flow_id: int | None = None
    exit_status: int | None = None      # when it exited by itself during the run; None: still running then
    started_unix_s: float = 0.0
    launch: Launch | None = None
    stopped: bool = False               # an external sender the runner stopped at its flow's end
    cpu_pct: float | None = None        # of one core over its life, measured when stopped

    def describe(self) -> str:
        what = {"receiver": "receiver", "long": "long-flow sender", "poisson": "traffic generator",
                "capture": "capture"}[self.kind]
        return f"{what} {self.host}" + (f" (flow {self.flow_id})" if self.flow_id is not None else "")

    def ending(self) -> str:
        """How it ended, in words: its exit status, or the signal that killed it."""
        return _ending(self.exit_status)

    def measure_cpu(self) -> None:
        """CPU of the program and its children over its life so far, in % of one core (a busy-waiting
        sender: 100); the last measure stands once it has exited."""
        try:
            top = psutil.Process(self.proc.pid)
            cpu = sum(sum(p.cpu_times()[:2]) for p in [top, *top.children(recursive=True)])
            self.cpu_pct = 100 * cpu / max(1e-6, time.time() - top.create_time())
        except psutil.Error:
            pass


def start_host(network: Network, host: str, kind: str, command: list[str], out: RunDir,
               flow_id: int | None = None, launch: Launch | None = None) -> HostProcess:
    stderr = out.stderr(host, kind if flow_id is None else f"{kind}_{flow_id}")
    with open(stderr, "ab") as f:       # the child keeps its own descriptor
        proc = network.host(host).popen(command, stdout=subprocess.DEVNULL, stderr=f)
    return HostProcess(host, kind, proc, stderr, flow_id, started_unix_s=time.time(), launch=launch)


def last_line(path: Path) -> str:
    """The last line a program printed, to say why it failed."""
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no stderr)"
    return lines[-1].strip() if lines else "(it printed nothing)"


def traffic_plan(stderr: Path) -> dict | None:
    """What a traffic generator planned: its first stderr line, {"event": "traffic_plan", "flows", ...}."""
    try:
        for line in stderr.read_text(errors="replace").splitlines():
            if '"traffic_plan"' in line:
                plan = json.loads(line)
                return plan if isinstance(plan.get("flows"), int) else None
    except (OSError, ValueError, AttributeError):
        pass
    return None


def planned_flows(stderr: Path) -> int | None:
    plan = traffic_plan(stderr)
    return None if plan is None else plan["flows"]


def host_problems(processes: list[HostProcess], out: RunDir, exp: Experiment, seed: int) -> list[str]:
    """What the host programs say about the run: a program that exited with a failure, a receiver that died
    before the end, a long flow that did not complete, a traffic generator that recorded fewer flows than it
    planned. Each names the program and the last line it printed."""
    problems = []
    for p in processes:
        if p.kind == "receiver" and p.exit_status is not None:
            problems.append(f"{p.describe()} {p.ending()} during the run: {last_line(p.stderr)}")
        elif p.kind == "poisson":
            planned = planned_flows(p.stderr)
            recorded = len(read_jsonl(out.flows(p.host)))
            if p.exit_status not in (None, 0):
                problems.append(f"{p.describe()} {p.ending()}: {last_line(p.stderr)}")
            elif planned is None:
                problems.append(f"{p.describe()} never said what it planned: {last_line(p.stderr)}")
            elif recorded < planned:
                problems.append(f"{p.describe()} recorded {recorded} of the {planned} flows it planned: "
                                f"{last_line(p.stderr)}")
    senders = {p.flow_id: p for p in processes if p.kind == "long"}
    for i, flow in enumerate(exp.long_flows):
        flow_id = long_flow_id(seed, i)
        records = [r for r in read_jsonl(out.flows(flow.sender)) if r.get("flow_id") == flow_id]
        if not records or not records[-1].get("completed"):
            why = records[-1].get("error", "not completed") if records else "no record"
            sender = senders.get(flow_id)
            printed = f"; {sender.describe()} {sender.ending()}, its last words: {last_line(sender.stderr)}" \
                if sender is not None and sender.exit_status not in (None, 0) else ""
            problems.append(f"long flow {flow.sender}->{flow.receiver} (id {flow_id}) did not complete: {why}"
                            f"{printed}")
    return problems


def stall_limits(topology, params: RcpParams) -> dict[tuple[str, int], PortLimits]:
    """What a stall of each RCP port is measured against (p4rcp/stalls.py): its rate in data frames, its queue,
    the fastest sender NIC as a multiple of its capacity, the loop's longest period."""
    nics_bps = [h.access_mbps * 1e6 for h in topology.hosts.values() if h.access_mbps is not None]
    limits = {}
    for sw in topology.switches.values():
        for sp in sw.rcp_ports:
            speedup = max(1.0, max(nics_bps, default=0.0) / sp.capacity_bps)
            limits[sw.name, sp.number] = PortLimits(C_pps=sp.capacity_bps / (8 * topology.data_frame_bytes),
                                                    queue_pkts=sp.queue_depth_pkts, access_speedup=speedup,
                                                    T_max_s=params.T_max_s)
    return limits


def run_scheme(exp: Experiment, variant: Variant, scheme_name: str, out: RunDir, seed: int = 1,
               options: RunOptions = RunOptions(), progress: Progress | None = None) -> dict:
    """One scheme, one sweep point, one seed: returns the run's metadata (validity and why not, CPU, paths).

    A simple_switch that dies ends the run at once (its next tick), void: nothing after can be measured."""
    own_progress = progress is None       # its heartbeat thread is this call's to stop
    progress = progress or Progress(1)
    out.root.mkdir(parents=True, exist_ok=True)
    topology = variant.topology
    scheme = exp.scheme(scheme_name)
    if options.control_plane == "process" and exp.events:
        raise ValueError(f"{exp.name}: bandwidth changes need the control plane in the runner's process "
                         "(the standalone controller takes no change of capacity)")
    label = f"{exp.name}{' ' + variant.label if variant.label else ''} {scheme.name} seed {seed}"
    progress.phase(f"[{label}] building the network")
    params = exp.rcp_params(scheme, topology)
    network = Network(topology, BUILD_JSON, out.root, rcp_params=params, switch_options=options.switch_options(out),
                      control_plane=options.control_plane, router=scheme.router).start()
    processes: list[HostProcess] = []
    meta = {"experiment": exp.name, "variant": variant.label, "scheme": scheme.name, "cc": scheme.cc, "seed": seed,
            "preset": scheme.preset, "scheme_description": scheme.describe(params),
            "duration_s": exp.duration_s, "load": variant.load,
            "load_unit": "slots",   # bmv2 shapes packets per second: p4rcp-host traffic's default unit
            "capacity_bps": {f"{s}:{p}": topology.switch(s).ports[p].capacity_bps for s, p in topology.bottlenecks},
            "queue_pkts": {f"{s}:{p}": topology.switch(s).ports[p].queue_depth_pkts for s, p in topology.bottlenecks},
            "environment": options.environment, "problems": [], "void_causes": [], "events": [],
            "rcp_weights": {str(d): w for d, w in params.dscp_weights.items()}}

    def void(cause: str, message: str) -> None:
        meta["problems"].append(message)
        if cause not in meta["void_causes"]:
            meta["void_causes"].append(cause)

    monitor = counts = sampled = None
    died: dict[str, int] = {}
    try:
        if scheme.initcwnd is not None:
            network.set_initcwnd(topology.senders, scheme.initcwnd)
        for name in receivers(exp):
            command = (scheme.receiver_command(receiver_ip=topology.hosts[name].ip) if scheme.is_external
                       else hosts.recv(out.recv(name)))
            processes.append(start_host(network, name, "receiver", command, out))
        plan = schedule(exp, variant, scheme, seed, out)
        if scheme.is_external:
            for item in plan:
                if isinstance(item, Launch):
                    interface = network.host(item.receiver).defaultIntf().name
                    processes.append(start_host(network, item.receiver, "capture", external.capture_command(
                        interface, topology.hosts[item.host].ip, scheme.port, out.capture(item.flow_id)), out,
                        item.flow_id))
        time.sleep(RECEIVER_START_S)
        counts, sampled = InputCounts(network), InputCounts(network)   # the monitor thread has its own
        before = counts.read()
        queue_before = network.bottleneck_counts()

        def unread() -> dict[str, int]:
            try:
                return {sw: k - p - (before[sw][0] - before[sw][1]) for sw, (k, p) in sampled.read().items()}
            except SwitchUnavailable:      # a switch died: the run ends at the next tick
                return {}

        def labelled_pids() -> dict[str, int]:
            """The run's processes by what they are, for their resident memory."""
            pids = {f"{sw} simple_switch": pid for sw, pid in network.switch_pids().items()}
            pids["runner" + (" (control loops)" if not network.controllers else "")] = os.getpid()
            pids.update({f"{sw} control plane": c.pid for sw, c in network.controllers.items()})
            pids.update({f"{host} link emulator": e.pid for host, e in zip(network.emulator_hosts, network.emulators)})
            pids.update({p.describe(): p.proc.pid for p in processes if p.exit_status is None and not p.stopped})
            return pids

        monitor = Monitor(network.switch_pids(), unread, samples_path=out.root / "cpu.jsonl",
                          host_pids=[p.pid for p in network.emulators], memory_pids=labelled_pids,
                          memory_every_s=options.memory_sample_s).start()
        base_pps = {b: topology.switch(b[0]).ports[b[1]].queue_rate_pps for b in topology.bottlenecks}
        t0, t0_unix = time.monotonic(), time.time()
        meta["start_unix_s"] = t0_unix
        while True:
            elapsed = time.monotonic() - t0
            died = network.dead_switches()
            if died:
                for sw, status in sorted(died.items()):
                    void(causes.SWITCH_DIED, f"simple_switch {sw} {_ending(status)} {elapsed:.1f} s into the run; "
                                             "the run ended there")
                meta["switch_died"] = {"switches": sorted(died), "detected_unix_s": time.time(),
                                       "elapsed_s": elapsed}
                progress.phase(f"[{label}] VOID: {meta['problems'][-1]}; cleaning up")
                break
            while plan and plan[0].at_s <= elapsed:
                item = plan.pop(0)
                if isinstance(item, BandwidthChange):
                    for (sw, port), pps in base_pps.items():
                        network.set_bottleneck(sw, port, max(1, round(pps * item.bottleneck_scale)))
                    meta["events"].append({"unix_s": time.time(), "bottleneck_scale": item.bottleneck_scale})
                else:
                    started = start_host(network, item.host, item.kind, item.command, out, item.flow_id, item)
                    processes.append(started)
                    monitor.host_pids.append(started.proc.pid)
            for p in processes:
                if p.exit_status is None and not p.stopped and p.proc.poll() is not None:
                    p.exit_status = p.proc.returncode
                elif p.exit_status is None and not p.stopped and p.launch is not None and p.launch.stop_s is not None:
                    p.measure_cpu()               # an external sender: what it costs, busy-waiting or not
                    if elapsed >= p.launch.stop_s:
                        stop_processes([p.proc])  # its flow ends at its set time
                        p.stopped = True
            senders = [p for p in processes if p.kind in ("long", "poisson")]
            running = sum(p.exit_status is None and not p.stopped for p in senders)
            progress.tick(label, elapsed, exp.duration_s, running, _flows_left(senders, out),
                          monitor.last_total_pct)
            if elapsed >= exp.duration_s and not plan and (running == 0 or elapsed >= exp.duration_s + GRACE_S):
                break
            # wake for the next launch on time: flows set 10 ms apart (a flash crowd) must start 10 ms apart
            time.sleep(min(0.2, max(0.0, plan[0].at_s - (time.monotonic() - t0))) if plan else 0.2)
        monitor.stop()
        if not died:
            progress.phase(f"[{label}] checking the run")
            time.sleep(0.5)      # frames still inside bmv2 would look lost
            after = counts.read()
            meta["bottleneck_drops"] = {link: (into - queue_before[link][0]) - (out - queue_before[link][1])
                                        for link, (into, out) in network.bottleneck_counts().items()}
            for sw, (kernel_after, pipeline_after) in after.items():
                delivered = kernel_after - before[sw][0]
                lost = delivered - (pipeline_after - before[sw][1])
                if delivered and lost > max(10, INPUT_DROP_SHARE * delivered):
                    void(causes.OVERRUN, f"{sw}: bmv2 did not read {lost} of {delivered} frames (input overrun"
                                         f"{monitor.backlog_peak(sw)})")
            for cause, message in monitor.findings():
                void(cause, message)
            records = [r for sw in topology.switches for r in read_jsonl(out.root / f"control_{sw}.jsonl")
                       if r["time"] >= t0_unix]
            # (XCP's loop runs at d and keeps no packet counts: the stall check reads RCP's records only)
            for stall in find_stalls([r for r in records if "input_packets" in r],
                                     stall_limits(topology, exp.rcp_params(scheme))):
                void(causes.STALL, stall.describe(t0_unix))
            # A long flow runs for a set time: one still running is a fault. A Poisson workload can hold a
            # heavy-tailed flow that needs longer than the run; its generator is stopped (below) and records
            # the flows it had not finished as not completed ("flows done" counts them).
            hung = sum(p.exit_status is None and not p.stopped for p in processes if p.kind == "long")
            if hung:
                void(causes.HOST, f"{hung} long-flow sender(s) still running {GRACE_S:.0f} s after the end")
            meta["access_links"] = network.access_link_stats()
        meta["traffic_cut_short"] = sum(p.exit_status is None for p in processes if p.kind == "poisson")
    finally:
        for p in processes:
            if p.exit_status is None and not p.stopped and p.proc.poll() is not None:
                p.exit_status = p.proc.returncode
        stop_processes([p.proc for p in processes])
        if monitor is not None:
            monitor.stop()
        for reader in (counts, sampled):
            if reader is not None:
                reader.close()
        network.stop()
        if monitor is not None:
            with open(out.root / "memory.jsonl", "w") as f:
                f.writelines(json.dumps(s) + "\n" for s in monitor.memory)
    if scheme.is_external:
        meta["external_cpu_pct"] = external_records(processes, scheme, topology, out)
    if not died:         # what the hosts say after their switch died is only that
        for problem in host_problems(processes, out, exp, seed):
            void(causes.HOST, problem)
    meta["valid"] = not meta["problems"]
    (out.root / "run.json").write_text(json.dumps(meta, indent=1))
    if own_progress:
        progress.close()
    return meta


def _ending(status: int | None) -> str:
    """How a process ended, from its exit status (negative: the signal that killed it)."""
    if status is not None and status < 0:
        try:
            return f"was killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"was killed by signal {-status}"
    return f"exited with status {status}"


def external_records(processes: list[HostProcess], scheme, topology, out: RunDir) -> dict[str, float | None]:
    """An external scheme's flows, measured by p4rcp from the captures at the receivers, written as the flow
    records and goodput samples p4rcp-host writes (external.py); returns each sender's CPU (% of a core:
    a busy-waiting sender shows 100)."""
    cpu = {}
    for p in processes:
        if p.kind != "long":
            continue
        failed = f"{p.ending()}: {last_line(p.stderr)}" if p.exit_status not in (None, 0) else None
        external.write_records(out.capture(p.flow_id), flow_id=p.flow_id, scheme=scheme,
                               start_unix_s=p.started_unix_s, sender_failed=failed, flows=out.flows(p.host),
                               trace=out.trace(p.host), receiver_ip=topology.hosts[p.launch.receiver].ip)
        cpu[f"{p.host} (flow {p.flow_id})"] = None if p.cpu_pct is None else round(p.cpu_pct, 1)
    return cpu


def _flows_left(senders: list[HostProcess], out: RunDir) -> int:
    """Flows not finished yet: long-flow senders still running, and each traffic generator's planned flows
    minus those it has recorded."""
    left = 0
    for p in senders:
        if p.exit_status is not None:
            continue
        if p.kind == "long":
            left += 1
        else:
            planned = planned_flows(p.stderr)
            if planned is not None:
                left += max(0, planned - _count_lines(out.flows(p.host)))
    return left


def _count_lines(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def environment() -> dict:
    """What produced the results: p4rcp's commit, the simple_switch and p4c builds, the kernel."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else "unknown"
    build = bmv2_build()
    return {"commit": git("rev-parse", "--short=12", "HEAD") + (" (with uncommitted changes)"
                                                                if git("status", "--porcelain", "--untracked-files=no")
                                                                else ""),
            "simple_switch": f"{build['version']}{' (logging build)' if build['logging'] else ' (speed build)'}",
            "p4c": tool_version("p4c") or "not installed", "kernel": platform.release(),
            "machine": f"{os.cpu_count()} CPUs, {psutil.virtual_memory().total / 2 ** 30:.0f} GiB"}


def run_experiment(exp: Experiment, results: Path, options: RunOptions = RunOptions(),
                   progress: Progress | None = None) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    root = results / exp.name / stamp
    root.mkdir(parents=True)
    shutil.copy(exp.source, root / exp.source.name)     # what ran, for --report
    progress = progress or Progress(exp.run_count(), expected_run_s(exp))
    runs = []
    for variant in exp.variants():
        for seed in exp.seeds:       # seeds outermost: the schemes of one seed run close together in time
            for scheme in exp.schemes:
                sub = root / (f"{variant.label}/" if variant.label else "") / scheme / f"seed{seed}"
                runs.append((variant, scheme, sub, run_scheme(exp, variant, scheme, RunDir(sub), seed, options,
                                                              progress)))
                progress.run_done()
    progress.phase(f"[{exp.name}] writing the report")
    summary = write_report(exp, root, runs)
    print(summary)
    return root


def expected_run_s(exp: Experiment) -> float:
    """A run's wall time before any has been measured: its duration plus set-up and drain."""
    return exp.duration_s + 10.0


def hold(exp: Experiment, scheme_name: str, options: RunOptions, work: Path) -> None:
    """The experiment's network (its first sweep point), its control plane and receivers running, at Mininet's
    command line; everything is cleaned up when the CLI exits, as after a run."""
    from mininet.cli import CLI   # only here: the command line needs a terminal or a script

    variant = exp.variants()[0]
    topology = variant.topology
    scheme = exp.scheme(scheme_name)
    out = RunDir(work)
    work.mkdir(parents=True, exist_ok=True)
    network = Network(topology, BUILD_JSON, work, rcp_params=exp.rcp_params(scheme, topology),
                      switch_options=options.switch_options(out), control_plane=options.control_plane,
                      router=scheme.router).start()
    processes = []
    try:
        for name in receivers(exp):
            processes.append(start_host(network, name, "receiver", hosts.recv(out.recv(name)), out))
        print(hold_banner(exp, variant, scheme, work), flush=True)
        CLI(network.net)
    finally:
        stop_processes([p.proc for p in processes])
        network.stop()
        print(f"topo.run: network stopped and cleaned up; records of the flows you ran are in {work}")


def hold_banner(exp: Experiment, variant: Variant, scheme, work: Path) -> str:
    topology = variant.topology
    flows = [*exp.long_flows, *exp.poisson]
    src, dst = (flows[0].sender, flows[0].receiver) if flows else (topology.senders[0], topology.receivers[0])
    sw, port = topology.bottlenecks[0]
    cli = f"{find_tool('simple_switch_CLI')} --thrift-port {topology.switch(sw).thrift_port}"
    return f"""
p4rcp: the network of {exp.name}{' (' + variant.label + ')' if variant.label else ''} is up, RCP's control plane \
running ({scheme.name}: {scheme.describe(exp.rcp_params(scheme))}).
Hosts: {', '.join(topology.hosts)}; receivers listening on {', '.join(receivers(exp))}. Bottleneck: {sw} port {port}.

  Read R (kb/s) and the counters of the bottleneck port, from this prompt:
    sh echo 'register_read {dp.REG_RATE} {dp.rate_cell(port)}' | {cli}     (weight class 0: {dp.RATE_NONE} - its stamp)
    sh echo 'counter_read {dp.COUNTER_INPUT} {port}' | {cli}
    sh echo 'register_read {dp.REG_QUEUE_DEPTH} {port}' | {cli}
  Start a flow by hand (1 MB, RCP; --cc tcp, allegro, vivace, fixed:5mbit ... as well):
    {src} {hosts.HOST_BINARY} send --to {topology.hosts[dst].ip} --cc rcp --size 1M
  The control loop's records: {work}/control_{sw}.jsonl
  exit (or Ctrl-D) stops the network and cleans up.
"""

def preflight() -> dict:
    """Everything a run needs, checked before any network is built; returns the simple_switch build."""
    build = bmv2_build()
    if not BUILD_JSON.is_file():
        raise ToolchainMissing(f"{BUILD_JSON} missing: run 'make build'")
    if not hosts.HOST_BINARY.is_file():
        raise ToolchainMissing(f"{hosts.HOST_BINARY} missing: run 'make hosts'")
    busy = [p for p in range(9090, 9100) if _port_in_use(p)]
    if busy:
        raise RuntimeError(f"Thrift ports {busy} are in use: is another simple_switch running?")
    return build


def _port_in_use(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0

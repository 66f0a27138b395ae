"""python -m topo.run EXPERIMENT [--schemes rcp,tcp] [--duration S] [--out DIR]

Runs an experiment (or a suite such as `default`) for every scheme in
Mininet with bmv2 switches, and writes results/EXPERIMENT/TIMESTAMP/: raw
records per scheme, summary.md and PNG plots.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from control_plane.bmv2_thrift import Bmv2ThriftDriver
from p4rcp.processes import stop_processes
from p4rcp.toolchain import BUILD_JSON, ROOT
from p4rcp.toolchain import ToolchainMissing, bmv2_build, bmv2_build_line
from topo import hosts
from topo.experiment import Experiment, ExperimentError, Variant, load_experiment, load_suite, resolve
from topo.network import Network, SwitchOptions
from topo.report import read_jsonl, void_runs, write_report

# A run is INVALID when the machine, not the network, limited it.
CPU_SATURATED_PCT = 95.0        # total CPU, all cores
SWITCH_SATURATED_PCT = 95.0     # one simple_switch, of one core
SATURATED_SAMPLE_SHARE = 0.10   # share of samples above those
OTHER_WORK_PCT = 20.0           # processes that are not this run's, in % of one core: the machine is shared
INPUT_DROP_SHARE = 0.001        # frames the kernel delivered but bmv2 never read
GRACE_S = 20.0                  # for senders to finish after the last flow's end
CPU_SAMPLE_S = 0.5


@dataclass
class RunDir:
    root: Path

    def flows(self, host: str) -> Path:
        return self.root / f"flows_{host}.jsonl"

    def trace(self, host: str) -> Path:
        return self.root / f"trace_{host}.jsonl"

    def recv(self, host: str) -> Path:
        return self.root / f"recv_{host}.jsonl"


@dataclass
class Monitor:
    """Samples CPU (total, stolen by the hypervisor, per process) and the frames each switch has not read yet,
    and tracks the processes it is told about."""
    switch_pids: dict[str, int]
    unread: Callable[[], dict[str, int]] = dict     # per switch: frames the kernel delivered, minus those bmv2 read
    samples: list[dict] = field(default_factory=list)
    host_pids: list[int] = field(default_factory=list)
    _host_procs: dict[int, psutil.Process] = field(default_factory=dict)
    _other_procs: dict[int, psutil.Process] = field(default_factory=dict)
    other_work: dict[str, int] = field(default_factory=dict)    # name -> samples in which it was busy
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> "Monitor":
        psutil.cpu_percent()
        psutil.cpu_times_percent()
        self._procs = {name: psutil.Process(pid) for name, pid in self.switch_pids.items()}
        for proc in self._procs.values():
            proc.cpu_percent()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(CPU_SAMPLE_S):
            sample = {"time": time.time(), "total_pct": psutil.cpu_percent(),
                      "steal_pct": psutil.cpu_times_percent().steal}
            for name, proc in self._procs.items():
                try:
                    sample[f"{name}_pct"] = proc.cpu_percent()
                except psutil.Error:
                    sample[f"{name}_pct"] = None
            sample["hosts_pct"] = self._hosts_pct()
            sample["other_pct"] = self._others_pct()
            sample.update({f"{name}_unread": n for name, n in self.unread().items()})
            self.samples.append(sample)

    def _hosts_pct(self) -> float:
        """CPU of the host programs (senders, receivers, link emulators), in % of a core.

        psutil measures CPU between two calls on the same Process object, so the objects are kept: a fresh
        one reports 0 on its first call. (Mininet's popen execs the program itself: no children to scan.)
        """
        total = 0.0
        for pid in list(self.host_pids):
            try:
                if pid not in self._host_procs:
                    self._host_procs[pid] = psutil.Process(pid)
                total += self._host_procs[pid].cpu_percent()
            except psutil.Error:
                self.host_pids.remove(pid)
                self._host_procs.pop(pid, None)
        return total

    def _others_pct(self) -> float:
        """CPU of user processes that are not this run's (the runner and everything it started), in % of a
        core: other work on the machine competes with the emulation. Kernel threads count as the run's (they
        carry its packets)."""
        ours = {os.getpid(), *(p.pid for p in psutil.Process().children(recursive=True))}
        total = 0.0
        for proc in psutil.process_iter(["ppid"]):
            if proc.pid in ours or proc.pid == 2 or proc.info["ppid"] == 2:
                continue
            known = self._other_procs.setdefault(proc.pid, proc)
            try:
                pct = known.cpu_percent()
                if pct >= OTHER_WORK_PCT:
                    self.other_work[known.name()] = self.other_work.get(known.name(), 0) + 1
                total += pct
            except psutil.Error:
                self._other_procs.pop(proc.pid, None)
        return total

    def stop(self):
        self._stop.set()
        self._thread.join(2)

    def backlog_peak(self, switch: str) -> str:
        """When the switch fell furthest behind, and what the machine did then: for an overrun's message."""
        series = [(s["time"], s[f"{switch}_unread"], s) for s in self.samples if f"{switch}_unread" in s]
        if not series:
            return ""
        t, unread, sample = max(series, key=lambda x: x[1])
        return (f"; most unread, {unread} frames, at {t - self.samples[0]['time']:.1f} s: total CPU "
                f"{sample['total_pct']:.0f}%, stolen {sample['steal_pct']:.0f}%, {switch} {sample.get(f'{switch}_pct') or 0:.0f}%")

    def verdict(self) -> list[str]:
        problems = []
        n = len(self.samples)
        if n == 0:
            return problems
        busy = sum(s["other_pct"] >= OTHER_WORK_PCT for s in self.samples)
        if busy / n > SATURATED_SAMPLE_SHARE:
            names = ", ".join(sorted(self.other_work, key=self.other_work.get, reverse=True)[:3])
            problems.append(f"other processes used >= {OTHER_WORK_PCT:.0f}% of a core in {busy}/{n} samples "
                            f"(the machine was not this run's alone: {names})")
        hot = sum(s["total_pct"] >= CPU_SATURATED_PCT for s in self.samples)
        if hot / n > SATURATED_SAMPLE_SHARE:
            problems.append(f"total CPU >= {CPU_SATURATED_PCT:.0f}% in {hot}/{n} samples")
        for name in self.switch_pids:
            busy = sum((s.get(f"{name}_pct") or 0) >= SWITCH_SATURATED_PCT for s in self.samples)
            if busy / n > SATURATED_SAMPLE_SHARE:
                problems.append(f"simple_switch {name} >= {SWITCH_SATURATED_PCT:.0f}% of a core in {busy}/{n} samples")
        return problems


@dataclass
class InputCounts:
    """Per switch: frames the kernel delivered to its interfaces, and frames its pipeline counted. Their
    difference is what bmv2 has not read yet, or never will (its libpcap rings overflowed)."""
    network: Network
    _drivers: dict[str, Bmv2ThriftDriver] = field(default_factory=dict)

    def read(self) -> dict[str, tuple[int, int]]:
        counts = {}
        for sw in self.network.topology.switches.values():
            if sw.name not in self._drivers:
                self._drivers[sw.name] = Bmv2ThriftDriver(sw.thrift_port)
                self._drivers[sw.name].connect()
            kernel = sum(int(Path(f"/sys/class/net/{sw.name}-eth{port}/statistics/rx_packets").read_text())
                         for port in sw.ports)
            pipeline = sum(self._drivers[sw.name].read_ingress_packets(port) for port in sw.ports)
            counts[sw.name] = (kernel, pipeline)
        return counts

    def close(self) -> None:
        for driver in self._drivers.values():
            driver.close()


@dataclass(frozen=True)
class RunOptions:
    """What the command line adds to an experiment's runs."""
    pcap: bool = False                    # bmv2's capture of every switch port, in each run's pcap/
    expose_control_ports: bool = False    # the switches' Thrift ports reachable from other hosts

    def switch_options(self, out: RunDir) -> SwitchOptions:
        return SwitchOptions(pcap_dir=out.root / "pcap" if self.pcap else None,
                             expose_control_ports=self.expose_control_ports)


def run_scheme(exp: Experiment, variant: Variant, scheme_name: str, out: RunDir, seed: int = 1,
               options: RunOptions = RunOptions()) -> dict:
    """One scheme, one sweep point, one seed: returns the run's metadata (validity, CPU, paths)."""
    out.root.mkdir(parents=True, exist_ok=True)
    topology = variant.topology
    scheme = exp.scheme(scheme_name)
    network = Network(topology, BUILD_JSON, out.root, rcp_params=exp.rcp_overrides(scheme),
                      switch_options=options.switch_options(out)).start()
    procs: list[subprocess.Popen] = []
    meta = {"experiment": exp.name, "variant": variant.label, "scheme": scheme.name, "cc": scheme.cc, "seed": seed,
            "duration_s": exp.duration_s, "load": variant.load,
            "capacity_bps": {f"{s}:{p}": topology.switch(s).ports[p].capacity_bps for s, p in topology.bottlenecks},
            "queue_pkts": {f"{s}:{p}": topology.switch(s).ports[p].queue_depth_pkts for s, p in topology.bottlenecks},
            "problems": [], "events": []}
    monitor = counts = sampled = None
    try:
        if scheme.initcwnd is not None:
            network.set_initcwnd(topology.senders, scheme.initcwnd)
        receivers = sorted({f.receiver for f in [*exp.long_flows, *exp.poisson]})
        for name in receivers:
            procs.append(network.host(name).popen(hosts.recv(out.recv(name))))
        time.sleep(0.5)
        counts, sampled = InputCounts(network), InputCounts(network)   # the monitor thread has its own
        before = counts.read()
        monitor = Monitor(network.switch_pids(), lambda: {sw: k - p - (before[sw][0] - before[sw][1])
                                                          for sw, (k, p) in sampled.read().items()},
                          host_pids=[p.pid for p in network.emulators]).start()
        schedule = _schedule(exp, variant, scheme.cc, seed, out, topology)
        base_C = {b: topology.switch(b[0]).ports[b[1]].queue_rate_pps for b in topology.bottlenecks}
        t0 = time.monotonic()
        senders = []
        while True:
            elapsed = time.monotonic() - t0
            while schedule and schedule[0][0] <= elapsed:
                _, what = schedule.pop(0)
                if isinstance(what, float):        # a bandwidth event
                    for (sw, port), pps in base_C.items():
                        network.set_bottleneck(sw, port, max(1, round(pps * what)))
                    meta["events"].append({"unix_s": time.time(), "bottleneck_scale": what})
                else:
                    host, cmd, kind = what
                    proc = network.host(host).popen(cmd)
                    senders.append((proc, kind))
                    procs.append(proc)
                    monitor.host_pids.append(proc.pid)
            running = sum(p.poll() is None for p, _ in senders)
            _progress(f"[{exp.name}{' ' + variant.label if variant.label else ''} {scheme.name} seed {seed}] "
                      f"{min(elapsed, exp.duration_s):5.1f}/{exp.duration_s:.0f} s, senders running {running}, "
                      f"cpu {monitor.samples[-1]['total_pct'] if monitor.samples else 0:3.0f}%")
            if elapsed >= exp.duration_s and (not schedule) and (running == 0 or elapsed >= exp.duration_s + GRACE_S):
                break
            time.sleep(0.2)
        _progress("")
        monitor.stop()
        time.sleep(0.5)      # frames still inside bmv2 would look lost
        after = counts.read()
        for sw, (kernel_after, pipeline_after) in after.items():
            delivered = kernel_after - before[sw][0]
            lost = delivered - (pipeline_after - before[sw][1])
            if delivered and lost > max(10, INPUT_DROP_SHARE * delivered):
                meta["problems"].append(f"{sw}: bmv2 did not read {lost} of {delivered} frames (input overrun"
                                        f"{monitor.backlog_peak(sw)})")
        meta["problems"] += monitor.verdict()
        # A long flow runs for a set time: one still running is a fault. A Poisson workload can hold a
        # heavy-tailed flow that needs longer than the run; its generator is stopped (below) and records
        # the flows it had not finished as not completed ("flows done" counts them).
        hung = sum(p.poll() is None for p, kind in senders if kind == "long")
        if hung:
            meta["problems"].append(f"{hung} long-flow sender(s) still running {GRACE_S:.0f} s after the end")
        meta["problems"] += _unfinished_long_flows(exp, out, seed)
        meta["traffic_cut_short"] = sum(p.poll() is None for p, kind in senders if kind == "poisson")
        meta["access_links"] = network.access_link_stats()
    finally:
        stop_processes(procs)
        if monitor is not None:
            monitor.stop()
        for reader in (counts, sampled):
            if reader is not None:
                reader.close()
        network.stop()
        if monitor is not None:
            with open(out.root / "cpu.jsonl", "w") as f:
                f.writelines(json.dumps(s) + "\n" for s in monitor.samples)
    meta["valid"] = not meta["problems"]
    (out.root / "run.json").write_text(json.dumps(meta, indent=1))
    return meta


def _unfinished_long_flows(exp: Experiment, out: RunDir, seed: int) -> list[str]:
    """A long flow sends for a set time and then closes: one whose sender did not record it completed (a
    timeout, a refused connection) did not run the experiment's schedule."""
    problems = []
    for i, flow in enumerate(exp.long_flows):
        flow_id = 1000 * seed + i
        records = [r for r in read_jsonl(out.flows(flow.sender)) if r.get("flow_id") == flow_id]
        if not records or not records[-1].get("completed"):
            why = records[-1].get("error", "not completed") if records else "no record"
            problems.append(f"long flow {flow.sender}->{flow.receiver} (id {flow_id}) did not complete: {why}")
    return problems


def _schedule(exp: Experiment, variant: Variant, cc: str, seed: int, out: RunDir, topology) -> list:
    """(time, what) sorted: host commands to start, and bandwidth scales to apply.

    The seed fixes the Poisson workloads and the long flows' ids, from which the senders seed their
    controllers: every scheme of one seed sees the same flows."""
    items = []
    for i, flow in enumerate(exp.long_flows):
        stop = flow.stop_s if flow.stop_s is not None else exp.duration_s
        ip = topology.hosts[flow.receiver].ip
        items.append((flow.start_s, (flow.sender, hosts.long_flow(ip, cc, stop - flow.start_s, 1000 * seed + i,
                                                                    out.flows(flow.sender), out.trace(flow.sender)),
                                     "long")))
    C = topology.switch(topology.bottlenecks[0][0]).ports[topology.bottlenecks[0][1]].capacity_bps
    for i, src in enumerate(exp.poisson):
        share = variant.load / len(exp.poisson)
        ip = topology.hosts[src.receiver].ip
        items.append((0.0, (src.sender, hosts.poisson(ip, cc, share, C, src.sizes, exp.duration_s,
                                                      seed=1000 * seed + i, out=out.flows(src.sender)), "poisson")))
    items += [(e.at_s, e.bottleneck_scale) for e in exp.events]
    return sorted(items, key=lambda item: item[0])


def _progress(line: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r" + line.ljust(100))
        if not line:
            sys.stderr.write("\r")
    elif line:
        now = int(time.monotonic())
        if now != getattr(_progress, "last", None) and now % 5 == 0:   # a line every 5 s in logs
            sys.stderr.write(line + "\n")
        _progress.last = now
    sys.stderr.flush()


def run_experiment(exp: Experiment, results: Path, options: RunOptions = RunOptions()) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    root = results / exp.name / stamp
    root.mkdir(parents=True)
    shutil.copy(exp.source, root / exp.source.name)     # what ran, for --report
    runs = []
    for variant in exp.variants():
        for seed in exp.seeds:       # seeds outermost: the schemes of one seed run close together in time
            for scheme in exp.schemes:
                sub = root / (f"{variant.label}/" if variant.label else "") / scheme / f"seed{seed}"
                runs.append((variant, scheme, sub, run_scheme(exp, variant, scheme, RunDir(sub), seed, options)))
    summary = write_report(exp, root, runs)
    print(summary)
    return root


def report_again(root: Path) -> str:
    """summary.md and the plots of a results directory, again, from its raw data (after the report changed)."""
    metas = [(p.parent, json.loads(p.read_text())) for p in sorted(root.glob("**/run.json"))]
    if not metas:
        raise ExperimentError(f"{root}: no run.json below it; give a results/EXPERIMENT/TIMESTAMP directory")
    first = metas[0][1]
    saved = root / f"{first['experiment']}.toml"
    source = saved if saved.is_file() else resolve(first["experiment"])
    present = {m["scheme"] for _, m in metas}
    declared = load_experiment(source).schemes
    schemes = [s for s in declared if s in present] + sorted(present - set(declared))
    exp = load_experiment(source, schemes, first["duration_s"], sorted({m.get("seed", 1) for _, m in metas}))
    variants = {v.label: v for v in exp.variants()}
    missing = {m["variant"] for _, m in metas} - set(variants)
    if missing:
        raise ExperimentError(f"{root}: sweep points {sorted(missing)} are not in the experiment's sweep")
    order = list(variants)
    runs = sorted(((variants[m["variant"]], m["scheme"], d, m) for d, m in metas),
                  key=lambda r: (order.index(r[0].label), schemes.index(r[1])))
    return write_report(exp, root, runs)


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


def _seeds(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise ExperimentError(f"--seeds takes integers such as 1,2,3, got {text!r}") from None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m topo.run", description=__doc__.split("\n\n")[1])
    ap.add_argument("experiment", help="name in topo/experiments (e.g. default, fct, convergence) or a .toml path")
    ap.add_argument("--schemes", help="comma-separated subset, e.g. rcp,tcp")
    ap.add_argument("--duration", type=float, help="override duration_s")
    ap.add_argument("--seeds", help="comma-separated seeds, e.g. 1,2,3 (override the experiment's seeds)")
    ap.add_argument("--out", default=str(ROOT / "results"))
    ap.add_argument("--pcap", action="store_true",
                    help="keep bmv2's capture of every switch port in each run's pcap/ (tools/rcp.lua dissects RCP)")
    ap.add_argument("--expose-control-ports", action="store_true",
                    help="let other hosts reach the switches' Thrift ports (by default only this machine can: "
                         "docs/control_plane.md, 'Who can reach the switch')")
    ap.add_argument("--report", action="store_true",
                    help="EXPERIMENT is a results/EXPERIMENT/TIMESTAMP directory: write its summary and plots "
                         "again from the raw data, without running anything")
    args = ap.parse_args(argv)
    if args.report:
        try:
            print(report_again(Path(args.experiment)))
        except ExperimentError as e:
            print(f"topo.run: {e}", file=sys.stderr)
            return 2
        return 0
    try:
        path = resolve(args.experiment)
        suite = load_suite(path)
        members = suite.members if suite else [path]
        schemes = args.schemes.split(",") if args.schemes else (suite.schemes if suite else None)
        seeds = _seeds(args.seeds) if args.seeds else None
        experiments = [load_experiment(m, schemes, args.duration, seeds) for m in members]
        build = preflight()
    except (ExperimentError, ToolchainMissing, RuntimeError) as e:
        print(f"topo.run: {e}", file=sys.stderr)
        return 2
    if build["logging"]:
        print(bmv2_build_line(build), file=sys.stderr)
    options = RunOptions(pcap=args.pcap, expose_control_ports=args.expose_control_ports)
    # SIGTERM unwinds like Ctrl-C, so every finally block cleans up.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    # A shell starting us in the background ignores SIGINT for us; Ctrl-C or kill -INT must still clean up.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    roots = []
    try:
        for exp in experiments:
            roots.append(run_experiment(exp, Path(args.out), options))
            print(f"results: {roots[-1]}")
    except KeyboardInterrupt:
        print("\ntopo.run: interrupted; network and processes cleaned up", file=sys.stderr)
        return 130
    void, total, which = void_runs(roots)
    print(f"void runs: {void} of {total}" + "".join(f"\n  {w}" for w in which))
    return 0


if __name__ == "__main__":
    sys.exit(main())

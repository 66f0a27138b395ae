"""One run (scheme, sweep point, seed) of an experiment on ns-3, in simulated time.

The run builds the topology (topo/ns3/network.py), starts one ControlLoop per switch with RCP ports over
the simulated switch (topo/ns3/driver.py): the project's own loop and law, stepped every T of simulated
time with the simulation's clock (for the xcp scheme, XCP routers: XcpQueueDisc on those ports and one
XcpLoop per switch, stepped every control interval d); the hosts' applications start the flows of the same schedule as on
Mininet (topo/ns3/workload.py): the Rust hosts' own transport (HostSender, HostReceiver, linked from
hosts/) for every UDP scheme, ns-3's TCP for tcp. The simulation advances in slices up to the next
control-loop step or bandwidth change. It writes the run directory the Mininet runner writes (topo/run.py,
run_scheme), with the hosts' own records.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from control_plane.loop import ControlLoop, program_switch
from control_plane.xcp_loop import XcpLoop
from p4rcp.params import RcpParams
from p4rcp.protocol import HOSTS_MAX_RATE_KBPS, RCP_MIN_RATE_KBPS
from topo.experiment import Experiment, Scheme, Variant
from topo.hosts import LONG_FLOW_CLOSE_S, LONG_FLOW_SAMPLE_S
from topo.ns3 import build
from topo.ns3.driver import Ns3Driver
from topo.ns3.network import RouterOptions, SimNetwork
from topo.ns3.workload import LOAD_UNIT, Flow, Plan
from topo.schedule import RunDir, receivers

ENGINE = "ns3"
GRACE_S = 20.0                 # as topo/run.py: flows still running this long after the end are cut short
POISSON_TIMEOUT_S = 60.0       # the hosts' --timeout default, which the traffic generator's flows keep
# Linux's largest socket buffers (net.ipv4.tcp_wmem / tcp_rmem, third field): the Mininet hosts' TCP.
LINUX_SNDBUF, LINUX_RCVBUF = 4 * 2**20, 6 * 2**20
RCP_RECV_WINDOW = 16 * 2**20   # the hosts' receiver window (hosts/src/transport/receiver.rs, RECV_WINDOW)
LINUX_MIN_RTO_S, LINUX_SYN_RTO_S, LINUX_DELACK_S = 0.2, 1.0, 0.04
# TIME_WAIT lasts two of these. ns-3 finds a packet's socket by a linear search over the node's sockets,
# and with its default (120 s) the closed connections of a Poisson workload piled up by the thousand (at
# 2.4 Gb/s most of the CPU went there). Ports are not reused within it either way.
TCP_MAX_SEGMENT_LIFETIME_S = 0.05
# ns-3's TCP for the hosts' tcp:ALGO (Linux's "reno" is NewReno).
TCP_ALGORITHMS = {"cubic": "ns3::TcpCubic", "reno": "ns3::TcpNewReno", "newreno": "ns3::TcpNewReno"}
PROGRESS_EVERY_S = 30.0


def _is_tcp(cc: str) -> bool:
    return cc == "tcp" or cc.startswith("tcp:")


def _tcp_type(cc: str) -> str | None:
    """ns-3's TypeId of a TCP cc (tcp, tcp:ALGO), None if ns-3 has none for it."""
    return TCP_ALGORITHMS.get(cc.removeprefix("tcp").removeprefix(":") or "cubic")


def tcp_ccs(exp: Experiment, scheme: Scheme) -> set[str]:
    """The TCP schemes the runs of a scheme start: the scheme's own, tcp_cc for a sweep's tcp_flows, and the long
    flows' own."""
    ccs = {scheme.cc} if scheme.is_tcp else set()
    if exp.tcp_flows or exp.sweep.get("tcp_flows"):
        ccs.add(exp.tcp_cc)
    return ccs | {f.cc for f in exp.long_flows if f.cc and _is_tcp(f.cc)}


def tcp_algorithm(exp: Experiment, scheme: Scheme) -> str | None:
    """ns-3's TypeId of the TCP that a scheme's runs start (ns-3's TCP is one per simulation), None if they
    start none."""
    types = {_tcp_type(cc) for cc in tcp_ccs(exp, scheme)}
    return next(iter(types)) if len(types) == 1 else None


def refusal(exp: Experiment, scheme_name: str) -> str | None:
    """Why this engine cannot run a scheme of the experiment, in one line, or None. Every scheme of the hosts
    runs (their own transport; the host binary judged the names when the experiment was loaded), TCP as
    ns-3's TCP; the router model lacks weights and policing."""
    scheme = exp.scheme(scheme_name)
    if scheme.is_external:
        return (f"scheme {scheme_name} is an external program, which the ns-3 engine cannot run: run it on "
                f"Mininet")
    if scheme.cc == "rcp":
        params = exp.rcp_params(scheme)
        missing = [what for what, used in (("weighted sharing (dscp_weights)", bool(params.dscp_weights)),
                                           ("policing", params.police),
                                           ("DSCP-marked long flows", any(f.dscp for f in exp.long_flows)))
                   if used]
        if missing:
            return (f"scheme {scheme_name} uses {', '.join(missing)}, which the ns-3 model of the router "
                    f"(topo/ns3/model/rcp-queue-disc.cc) does not have: run it on Mininet")
    ccs = tcp_ccs(exp, scheme)
    unknown = sorted(cc for cc in ccs if _tcp_type(cc) is None)
    if unknown:
        return (f"scheme {scheme_name} runs {', '.join(unknown)}, which the ns-3 engine cannot run: its TCP "
                f"runs {', '.join('tcp:' + a for a in TCP_ALGORITHMS)} (tcp = tcp:cubic)")
    if len({_tcp_type(cc) for cc in ccs}) > 1:
        return (f"scheme {scheme_name} runs {', '.join(sorted(ccs))} together, which the ns-3 engine cannot: "
                f"ns-3's TCP is one congestion control per simulation")
    return None


@dataclass(frozen=True)
class Job:
    """Everything one run needs, picklable: it runs in a process of its own."""
    exp: Experiment
    variant: Variant
    scheme: str
    seed: int
    root: Path
    plan: Plan
    router: RouterOptions = RouterOptions()
    environment: dict = field(default_factory=dict)
    description: str = ""         # what the scheme ran, for the summary

    @property
    def label(self) -> str:
        v = f" {self.variant.label}" if self.variant.label else ""
        return f"{self.exp.name}{v} {self.scheme} seed {self.seed}"


def run_job(job: Job) -> dict:
    """Runs one job in this process (a fresh one: ns-3's simulator is a process-wide singleton) and returns
    its run.json."""
    ns, p4rcp = build.load()
    try:
        return Run(ns, p4rcp, job).execute()
    finally:
        ns.Simulator.Destroy()


class Run:
    def __init__(self, ns, p4rcp, job: Job):
        self.ns, self.p4rcp, self.job = ns, p4rcp, job
        self.exp, self.topology = job.exp, job.variant.topology
        self.scheme = job.exp.scheme(job.scheme)
        self.out = RunDir(job.root)
        self.epoch = time.time()
        self.loops: dict[str, ControlLoop | XcpLoop] = {}
        self.xcp = self.scheme.router == "xcp"
        self.drivers: dict[str, Ns3Driver] = {}
        self.senders: dict[tuple[str, bool], object] = {}  # (host, TCP?) -> its sender application
        self.receivers: dict[str, list] = {}      # host -> its receiver applications (UDP and TCP)
        self.meta = {"experiment": self.exp.name, "variant": job.variant.label, "scheme": self.scheme.name,
                     "cc": self.scheme.cc, "seed": job.seed, "duration_s": self.exp.duration_s,
                     "load": job.variant.load, "load_unit": LOAD_UNIT,
                     "capacity_bps": {f"{s}:{p}": self.topology.switch(s).ports[p].capacity_bps
                                      for s, p in self.topology.bottlenecks},
                     "queue_pkts": {f"{s}:{p}": self.topology.switch(s).ports[p].queue_depth_pkts
                                    for s, p in self.topology.bottlenecks},
                     "environment": job.environment, "problems": [], "events": [], "engine": ENGINE,
                     "scheme_description": job.description,
                     "router": {"kind": job.exp.scheme(job.scheme).router,
                                "rtt_samples": job.router.rtt_samples, "queue_sample": job.router.queue_sample}}

    def execute(self) -> dict:
        self.setup()
        try:
            self.simulate()
        finally:
            for log in self._logs:
                log.close()
        return self.finish()

    def setup(self) -> None:
        """The network, its control plane (routes and queues installed by the loops, as on bmv2) and the hosts'
        applications, at simulated time 0."""
        ns = self.ns
        self.out.root.mkdir(parents=True, exist_ok=True)
        ns.RngSeedManager.SetSeed(1)
        ns.RngSeedManager.SetRun(self.job.seed)
        self._configure_tcp()
        self.net = SimNetwork(ns, self.p4rcp, self.topology, self.job.router, xcp=self.xcp)
        self._logs = []
        for sw in self.topology.switches.values():
            driver = self.drivers[sw.name] = Ns3Driver(self.net, sw.name)
            if not sw.rcp_ports:
                program_switch(driver, sw, self.topology.routes(sw.name))
                continue
            log = open(self.out.root / f"control_{sw.name}.jsonl", "w")
            self._logs.append(log)
            if self.xcp:
                self.loops[sw.name] = XcpLoop(sw, self.topology.routes(sw.name), driver, clock=self.net.now,
                                              wall_clock=lambda: self.epoch + self.net.now(),
                                              emit=lambda record, log=log: log.write(json.dumps(record) + "\n"))
                continue
            self.loops[sw.name] = ControlLoop(
                sw, self.topology.routes(sw.name), driver, self._rcp_params(),
                emit=lambda record, log=log: log.write(json.dumps(record) + "\n"),
                clock=self.net.now, wall_clock=lambda: self.epoch + self.net.now(),
                rt_priority=None, switch_interval_s=None)
            self.loops[sw.name].resync()
        self._install_applications()

    def simulate(self) -> None:
        wall, cpu = time.monotonic(), time.process_time()
        self._simulate()
        wall, cpu = time.monotonic() - wall, time.process_time() - cpu
        simulated = self.net.now()
        # CPU time beside wall time: on a shared machine other work stretches the wall time, not the CPU time.
        self.meta.update({"simulated_s": round(simulated, 6), "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                          "wall_per_simulated_s": round(wall / simulated, 4) if simulated else None,
                          "simulator_events": int(self.ns.Simulator.GetEventCount())})

    def finish(self) -> dict:
        """The records, in the run directory; returns run.json."""
        for log in self._logs:
            log.close()          # the control loops' records are complete
        self._write_records()
        self.meta["valid"] = not self.meta["problems"]
        (self.out.root / "run.json").write_text(json.dumps(self.meta, indent=1))
        return self.meta

    # ------------------------------------------------------------------------------------------ set-up

    def _rcp_params(self) -> RcpParams:
        return self.exp.rcp_params(self.scheme, self.topology)

    def _bdp_bytes(self) -> float:
        t = self.topology
        rtt = max(2 * t.hosts[h].delay_ms / 1000 for h in t.senders)
        return max(t.switch(s).ports[p].capacity_bps for s, p in t.bottlenecks) * rtt / 8

    def _configure_tcp(self) -> None:
        """ns-3's TCP as the Mininet hosts' Linux runs it: segments that fill the hosts' MTU (with the
        timestamp option), initial window 10 (or the scheme's), Linux's minimum RTO, SYN timeout and
        delayed-ACK timer; socket buffers Linux's largest or two bandwidth-delay products, whichever is larger
        (at the RCP papers' scale Linux's would cap a flow far below C)."""
        ns = self.ns
        algorithm = tcp_algorithm(self.exp, self.scheme) or TCP_ALGORITHMS["cubic"]
        mss = self.topology.data_frame_bytes - 14 - 20 - 20 - 12
        bdp2 = int(2 * self._bdp_bytes())
        defaults = {
            "ns3::TcpL4Protocol::SocketType": ns.TypeIdValue(ns.TypeId.LookupByName(algorithm)),
            "ns3::TcpSocket::SegmentSize": ns.UintegerValue(mss),
            "ns3::TcpSocket::InitialCwnd": ns.UintegerValue(self.scheme.initcwnd or 10),
            "ns3::TcpSocket::SndBufSize": ns.UintegerValue(max(LINUX_SNDBUF, bdp2)),
            "ns3::TcpSocket::RcvBufSize": ns.UintegerValue(max(LINUX_RCVBUF, bdp2)),
            "ns3::TcpSocket::ConnTimeout": ns.TimeValue(ns.Seconds(LINUX_SYN_RTO_S)),
            "ns3::TcpSocket::DelAckTimeout": ns.TimeValue(ns.Seconds(LINUX_DELACK_S)),
            "ns3::TcpSocketBase::MinRto": ns.TimeValue(ns.Seconds(LINUX_MIN_RTO_S)),
            "ns3::TcpSocketBase::MaxSegLifetime": ns.DoubleValue(TCP_MAX_SEGMENT_LIFETIME_S),
        }
        for name, value in defaults.items():
            ns.Config.SetDefault(name, value)
        self.meta["tcp"] = {"algorithm": algorithm, "segment_bytes": mss, "initial_window": self.scheme.initcwnd or 10,
                            "sndbuf_bytes": max(LINUX_SNDBUF, bdp2), "rcvbuf_bytes": max(LINUX_RCVBUF, bdp2)}

    def _install_applications(self) -> None:
        """A UDP receiver (the hosts' transport) and a TCP receiver on every receiving host; on a sending host,
        a HostSender for its flows of the hosts' schemes and a TcpFlowSender for its TCP flows."""
        ns, p4rcp, t = self.ns, self.p4rcp, self.topology
        window = max(RCP_RECV_WINDOW, int(2 * self._bdp_bytes()))
        epoch = ns.DoubleValue(self.epoch)
        for name in receivers(self.exp):
            udp = ns.CreateObject[p4rcp.HostReceiver]()
            udp.SetAttribute("Window", ns.UintegerValue(window))
            tcp = ns.CreateObject[p4rcp.TcpFlowReceiver]()
            for app in (udp, tcp):
                app.SetAttribute("Epoch", epoch)
                self.net.nodes[name].AddApplication(app)
                app.SetStartTime(ns.Seconds(0))
            self.receivers[name] = [udp, tcp]
        for flow in self.job.plan.flows:
            app = self.senders.get((flow.host, flow.is_tcp))
            if app is None:
                app = ns.CreateObject[p4rcp.TcpFlowSender if flow.is_tcp else p4rcp.HostSender]()
                app.SetAttribute("Remote", ns.Ipv4AddressValue(ns.Ipv4Address(t.hosts[flow.receiver].ip)))
                app.SetAttribute("Epoch", epoch)
                self.net.nodes[flow.host].AddApplication(app)
                app.SetStartTime(ns.Seconds(0))
                self.senders[(flow.host, flow.is_tcp)] = app
            app.AddFlow(flow.start_s, self._flow_params(flow))

    def _flow_params(self, flow: Flow):
        """What the host binary's command line gives the flow (topo/hosts.py, topo/schedule.py)."""
        t = self.topology
        p = self.p4rcp.FlowParams()
        p.flowId = flow.flow_id
        p.index = -1 if flow.index is None else flow.index
        p.scheme = flow.cc
        p.dscp = flow.dscp
        if flow.size_bytes is None:
            p.duration = flow.duration_s
            p.timeout = flow.duration_s + LONG_FLOW_CLOSE_S
            p.trace = True
            p.sampleInterval = LONG_FLOW_SAMPLE_S
        else:
            p.size = flow.size_bytes
            p.timeout = POISSON_TIMEOUT_S
        # The hosts seed a long flow's controller with its id, a traffic generator's flow from its seed and index.
        p.seed = (flow.flow_id if flow.generator_seed is None
                  else int(self.p4rcp.TrafficFlowSeed(flow.generator_seed, flow.index)))
        p.mss = t.mss_bytes
        # A flow asks for the hosts' default (1 Gb/s), or what its NIC can send where that is more (the papers'
        # links are faster).
        nic = t.hosts[flow.host].access_mbps
        nic_kbps = nic * 1e3 if nic is not None else self.net.unshaped_bps / 1e3
        p.maxRateKbps = max(HOSTS_MAX_RATE_KBPS, nic_kbps)
        p.minRateKbps = RCP_MIN_RATE_KBPS
        return p

    # ------------------------------------------------------------------------------------- simulation

    def _flows_left(self) -> int:
        return sum(int(app.FlowsLeft()) for app in self.senders.values())

    def _simulate(self) -> None:
        """Slices of simulated time up to the next thing Python does: a control-loop step (every T of its
        switch), a bandwidth change, the end. Each loop's first step (at 0) takes its counters' baseline."""
        ns = self.ns
        to_ns = lambda s: round(s * 1e9)  # noqa: E731
        end, last = to_ns(self.exp.duration_s), to_ns(self.exp.duration_s + GRACE_S)
        due = {name: 0 for name in self.loops}
        events = sorted(self.job.plan.events, key=lambda e: e.at_s)
        check = end                     # without a loop, still look for the end of the flows
        reported = time.monotonic()
        in_loops = 0.0                  # CPU time of the control loops' steps (Python)
        while True:
            now = ns.Simulator.Now().GetNanoSeconds()
            upcoming = [*due.values(), last, check] + ([to_ns(events[0].at_s)] if events else [])
            t = min(upcoming)
            if t > now:
                ns.Simulator.Stop(ns.NanoSeconds(t - now))
                ns.Simulator.Run()
            while events and to_ns(events[0].at_s) <= t:
                self._bandwidth_change(events.pop(0).bottleneck_scale)
            for name, loop in self.loops.items():
                if due[name] <= t:
                    started = time.process_time()
                    loop.step(deadline=t / 1e9)
                    in_loops += time.process_time() - started
                    due[name] = t + max(1, to_ns(loop.period_s))
            if check <= t:
                check = t + to_ns(0.1)
            if t >= last or (t >= end and not events and self._flows_left() == 0):
                break
            if time.monotonic() - reported > PROGRESS_EVERY_S:
                reported = time.monotonic()
                print(f"[{self.job.label}] simulated {t / 1e9:.1f} of {self.exp.duration_s:g} s"
                      f"{' (drain)' if t > end else ''}, {self._flows_left()} flows left", file=sys.stderr,
                      flush=True)
        self.meta["control_loop_cpu_s"] = round(in_loops, 3)
        self.meta["traffic_cut_short"] = sum(
            1 for host in self.job.plan.planned
            if any(int(app.FlowsLeft()) > 0 for (h, _), app in self.senders.items() if h == host))

    def _bandwidth_change(self, scale: float) -> None:
        """The bottleneck's rate and the control plane's C together (as topo/mininet/network.py, set_bottleneck)."""
        for sw, port in self.topology.bottlenecks:
            sp = self.topology.switch(sw).ports[port]
            pps = max(1, round(sp.queue_rate_pps * scale))
            self.drivers[sw].set_queue(port, pps, sp.queue_depth_pkts)
            self.loops[sw].set_capacity(port, pps * self.topology.data_frame_bytes * 8.0)
        self.meta["events"].append({"unix_s": self.epoch + self.net.now(), "bottleneck_scale": scale})

    # ---------------------------------------------------------------------------------------- records

    def _write_records(self) -> None:
        """The hosts' records, as the applications wrote them (the hosts' library's JSON lines), into the files
        the hosts write: flows_HOST.jsonl, trace_HOST.jsonl, recv_HOST.jsonl."""
        t = self.topology
        written = {}
        for host in sorted({host for host, _ in self.senders}):
            apps = [app for (h, _), app in self.senders.items() if h == host]
            flows = [line for app in apps for line in str(app.Finish()).splitlines()]
            trace = [line for app in apps for line in str(app.TakeTrace()).splitlines()]
            records = sorted(((json.loads(line), line) for line in flows), key=lambda r: r[0]["start_unix_s"])
            _write_lines(self.out.flows(host), [line for _, line in records])
            if trace:
                _write_lines(self.out.trace(host), trace)
            planned = self.job.plan.planned.get(host)
            recorded = sum("index" in r for r, _ in records)
            if planned is not None and recorded < planned:
                self.meta["problems"].append(f"traffic of {host} recorded {recorded} of the {planned} flows planned")
            written.update({(host, r["flow_id"]): r for r, _ in records})
        for flow in self.job.plan.flows:
            r = written.get((flow.host, flow.flow_id))
            if flow.index is None and not (r and r["completed"]):
                why = r.get("error", "not completed") if r else "no record"
                self.meta["problems"].append(f"long flow {flow.host}->{flow.receiver} (id {flow.flow_id}) did not "
                                             f"complete: {why}")
        for host, apps in self.receivers.items():
            _write_lines(self.out.recv(host), [line for app in apps for line in str(app.Finish()).splitlines()])
        self.meta["bottleneck_drops"] = {f"{s}:{p}": self.net.dropped(s, p) for s, p in t.bottlenecks}
        self.meta["access_links"] = {
            name: {"rate_mbps": t.hosts[name].access_mbps,
                   "packets": int(self.p4rcp.QueueDiscReceived(self.net.host_queues[name])),
                   "drops": int(self.p4rcp.QueueDiscDropped(self.net.host_queues[name]))}
            for name in t.senders if t.hosts[name].access_mbps is not None}


def _write_lines(path: Path, lines: list[str]) -> None:
    with open(path, "w") as f:
        f.writelines(line + "\n" for line in lines)


def wall_per_simulated_second(metas: list[dict]) -> float | None:
    """Over runs: total wall time of the simulations over total simulated time."""
    wall = sum(m.get("wall_s", 0) for m in metas)
    simulated = sum(m.get("simulated_s", 0) for m in metas)
    return wall / simulated if simulated else None

"""make bench-control: the RCP loop against simple_switch with 8 RCP ports, idle and under load.

Idle: the switch forwards nothing and the loop is the process's only busy
thread. Under load: as in an experiment, the project's hosts run in two
network namespaces behind ports 0 and 1 (a fixed-rate p4rcp-host sender and
its receiver, whose ACKs come back through the switch), simple_switch
forwards near what one core of it can, and the loop shares its Python
process with what an experiment runs beside it: a second control loop (8
more ports, 10-17, over a connection of its own, as for a second switch) and
the experiments' CPU monitor (p4rcp/monitor.py). The load crosses ports 0
and 1, which are not RCP ports: the switch does all its per-packet RCP work
on them, but their sub-millisecond RTT does not enter d0 of the RCP ports,
so T stays 10 ms.

Prints, for each, the loop period's p50 / p99 / max relative to the target
T (the period between the switch's answers, which the law uses; and the old
measure, between the middles of the reads, for comparison), the work per
interval, where a late interval's time went (the loop waking late, the
switch answering late, the loop thread waiting for a core), the share of
the machine the hypervisor stole, and CPU shares. Target: p99 <= 1.1 T at
T = 10 ms, idle and under load.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import threading
import time
from contextlib import ExitStack, contextmanager

import psutil

from control_plane.bmv2_thrift import Bmv2ThriftDriver
from control_plane.loop import ControlLoop
from control_plane.simple_switch import SimpleSwitch
from p4rcp import dataplane as dp
from p4rcp.analysis import percentile
from p4rcp.monitor import Monitor
from p4rcp.params import RcpParams
from p4rcp.processes import stop_processes
from p4rcp.toolchain import BUILD_JSON, ROOT
from p4rcp.topology import Route, Switch, SwitchPort
from p4rcp.veth import VethPairs, free_tcp_port

RCP_PORTS = 8
TARGET = 1.1
HOST_BINARY = ROOT / "hosts" / "target" / "release" / "p4rcp-host"
SENDER_IP, RECEIVER_IP = "10.0.0.2", "10.0.1.2"
SENDER_MAC, RECEIVER_MAC = "00:00:00:00:00:01", "00:00:00:00:00:02"
RCP_PORT_NUMBERS = range(2, 2 + RCP_PORTS)
SECOND_LOOP_PORTS = range(2 + RCP_PORTS, 2 + 2 * RCP_PORTS)     # no interfaces: only counters to read


def cpu_ticks() -> tuple[int, int]:
    """The machine's (stolen, total) CPU time so far, in clock ticks (/proc/stat's first line)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]    # user nice system idle iowait irq softirq steal
    return fields[7], sum(fields)


def run_queue_wait_ns() -> int:
    """How long the calling thread has waited for a core, runnable, so far (schedstat's second field)."""
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1])


class Intervals:
    """The loop's records of one port, each with the stolen ticks and the loop thread's run-queue wait
    at the moment it was emitted (in the loop's thread, after the interval's write)."""

    def __init__(self, port: int):
        self.port = port
        self.rows: list[tuple[dict, int, int]] = []

    def __call__(self, record: dict) -> None:
        if record["port"] == self.port:
            self.rows.append((record, cpu_ticks()[0], run_queue_wait_ns()))


def _run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, text=True)


@contextmanager
def namespace_host(name: str, iface: str, mac: str, ip: str, peer_ip: str, gateway_mac: str):
    """A network namespace holding one end of a veth pair, addressed like an experiment's host:
    static ARP to the switch port's MAC, offloads off (bmv2 forwards partial checksums unfixed)."""
    _run("ip", "netns", "add", name)
    try:
        _run("ip", "link", "set", iface, "address", mac)
        _run("ip", "link", "set", iface, "netns", name)
        ns = ("ip", "netns", "exec", name)
        _run(*ns, "ip", "link", "set", "lo", "up")
        _run(*ns, "ip", "link", "set", iface, "up")
        _run(*ns, "ip", "addr", "add", f"{ip}/24", "dev", iface)
        _run(*ns, "ip", "route", "add", f"{peer_ip.rsplit('.', 1)[0]}.0/24", "dev", iface)
        _run(*ns, "ip", "neigh", "replace", peer_ip, "lladdr", gateway_mac, "dev", iface, "nud", "permanent")
        _run(*ns, "ethtool", "--offload", iface, "rx", "off", "tx", "off", "sg", "off", "tso", "off",
             "gso", "off", "gro", "off")
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


@contextmanager
def processes(*commands: list[str]):
    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for c in commands]
    try:
        yield procs
    finally:
        stop_processes(procs)


class GcPauses:
    """Durations of the garbage collections that run while the loop runs (gc.callbacks)."""

    def __init__(self):
        self.pauses: list[float] = []
        self._start = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.pauses.append(time.perf_counter() - self._start)


def _rcp_ports(numbers) -> dict[int, SwitchPort]:
    return {p: SwitchPort(p, f"h{p}", f"00:aa:00:00:00:{p:02x}", capacity_bps=10e6, queue_rate_pps=1000)
            for p in numbers}


def run_loop(seconds: float, load_rate: str | None, loop_options: dict, records_out=None) -> dict:
    ports = _rcp_ports(RCP_PORT_NUMBERS)
    intervals = Intervals(RCP_PORT_NUMBERS[0])
    with ExitStack() as stack:
        veths = stack.enter_context(VethPairs(2 + RCP_PORTS, tag="bc"))
        thrift_port = free_tcp_port()
        switch_proc = stack.enter_context(SimpleSwitch(BUILD_JSON, dict(enumerate(veths.switch_side)), thrift_port))
        switch = Switch("s1", thrift_port, {0: SwitchPort(0, "snd", "00:aa:00:00:00:00"),
                                            1: SwitchPort(1, "rcv", "00:aa:00:00:00:01"), **ports})
        routes = [Route(f"10.0.{p}.0/24", p, ports[p].mac, "00:00:00:00:00:09") for p in ports]
        routes += [Route(f"{RECEIVER_IP}/32", 1, "00:aa:00:00:00:01", RECEIVER_MAC),
                   Route(f"{SENDER_IP}/32", 0, "00:aa:00:00:00:00", SENDER_MAC)]
        loops = [ControlLoop(switch, routes, Bmv2ThriftDriver(thrift_port), RcpParams(d0_init_s=0.05),
                             emit=intervals, **loop_options)]
        monitor = None
        if load_rate:
            if not HOST_BINARY.is_file():
                raise SystemExit(f"bench-control: {HOST_BINARY} missing: run 'make hosts'")
            # The second loop programs the same routes; its ports have no interfaces, only counters.
            second = Switch("s2", thrift_port, _rcp_ports(SECOND_LOOP_PORTS))
            loops.append(ControlLoop(second, routes, Bmv2ThriftDriver(thrift_port), RcpParams(d0_init_s=0.05),
                                     **loop_options))
        for loop in loops:
            loop.resync()
        if load_rate:
            tag = veths.switch_side[0][:-2]
            sender = stack.enter_context(namespace_host(f"{tag}snd", veths.host_side[0], SENDER_MAC, SENDER_IP,
                                                        RECEIVER_IP, "00:aa:00:00:00:00"))
            receiver = stack.enter_context(namespace_host(f"{tag}rcv", veths.host_side[1], RECEIVER_MAC,
                                                          RECEIVER_IP, SENDER_IP, "00:aa:00:00:00:01"))
            hosts = stack.enter_context(processes(
                [*receiver, str(HOST_BINARY), "recv", "--duration", f"{seconds + 15:.0f}"]))
            time.sleep(0.3)
            hosts += stack.enter_context(processes(
                [*sender, str(HOST_BINARY), "send", "--to", RECEIVER_IP, "--cc", f"fixed:{load_rate}",
                 "--duration", f"{seconds + 10:.0f}", "--timeout", f"{seconds + 12:.0f}"]))
            time.sleep(2.0)             # handshake done, the switch busy
            monitor = Monitor({"s1": switch_proc.pid}, host_pids=[p.pid for p in hosts])
        probe = Bmv2ThriftDriver(thrift_port)
        probe.connect()
        fwd0 = probe.read_counter(dp.COUNTER_INPUT, 1).packets + probe.read_counter(dp.COUNTER_INPUT, 0).packets
        sw = psutil.Process(switch_proc.pid)
        sw_cpu0 = sum(sw.cpu_times()[:2])
        stop = threading.Event()
        stolen0, ticks0 = cpu_ticks()
        cpu0, wall0 = time.process_time(), time.monotonic()
        gc_pauses = GcPauses()
        gc.callbacks.append(gc_pauses)
        if monitor:
            monitor.start()
        threads = [threading.Thread(target=loop.run, args=(stop,), name=f"rcp-loop-{i}")
                   for i, loop in enumerate(loops)]
        for thread in threads:
            thread.start()
        time.sleep(seconds)
        stop.set()
        for thread in threads:
            thread.join()
        if monitor:
            monitor.stop()
        gc.callbacks.remove(gc_pauses)
        wall = time.monotonic() - wall0
        cpu_share = (time.process_time() - cpu0) / wall
        stolen1, ticks1 = cpu_ticks()
        switch_share = (sum(sw.cpu_times()[:2]) - sw_cpu0) / wall
        forwarded = probe.read_counter(dp.COUNTER_INPUT, 1).packets + probe.read_counter(dp.COUNTER_INPUT, 0).packets - fwd0
        probe.close()
    rows = intervals.rows
    if records_out:
        for record, stolen_ticks, queued_ns in rows:
            records_out.write(json.dumps({**record, "scenario": "under load" if load_rate else "idle",
                                          "stolen_ticks": stolen_ticks, "run_queue_ns": queued_ns}) + "\n")
    records = [r for r, _, _ in rows]
    T = records[-1]["T_s"]
    periods = [r["period_s"] for r in records]
    # The old measure, between the middles of two reads: started + read_s / 2 = at - answer_s + read_s / 2.
    mids = [r["read_s"] / 2 - r["answer_s"] for r in records]
    mid_periods = [p + m - m_prev for p, m, m_prev in zip(periods[1:], mids[1:], mids)]
    # Per interval (from the second: the first has no previous row): CPU stolen in it, the loop thread's
    # run-queue wait in it.
    stolen = [s - s_prev > 0 for (_, s, _), (_, s_prev, _) in zip(rows[1:], rows)]
    queued = [(w - w_prev) / 1e9 for (_, _, w), (_, _, w_prev) in zip(rows[1:], rows)]
    late = [i for i, r in enumerate(records[1:]) if r["period_s"] > TARGET * T]
    later = records[1:]

    def ms(values, q):
        return percentile(values, q) * 1e3

    return {"T": T, "n": len(periods), "p50": statistics.median(periods) / T,
            "p99": percentile(periods, 99) / T, "max": max(periods) / T,
            "mid_p99": percentile(mid_periods, 99) / T,
            "work_p50_ms": ms([r["loop_s"] for r in records], 50), "work_p99_ms": ms([r["loop_s"] for r in records], 99),
            "late_p50_ms": ms([r["late_s"] for r in records], 50), "late_p99_ms": ms([r["late_s"] for r in records], 99),
            "answer_p50_ms": ms([r["answer_s"] for r in records], 50),
            "answer_p99_ms": ms([r["answer_s"] for r in records], 99), "queued_p99_ms": ms(queued, 99),
            "read_p50_ms": ms([r["read_s"] for r in records], 50), "read_p99_ms": ms([r["read_s"] for r in records], 99),
            "n_late": len(late), "late_stolen": sum(stolen[i] for i in late), "stolen_rate": sum(stolen) / len(stolen),
            "late_woke": sum(later[i]["late_s"] > 0.001 for i in late),
            "late_answer": sum(later[i]["answer_s"] > 0.001 for i in late),
            "late_queued": sum(queued[i] > 0.001 for i in late),
            "steal_share": (stolen1 - stolen0) / max(1, ticks1 - ticks0),
            "cpu_share": cpu_share, "switch_share": switch_share, "forwarded_pps": forwarded / wall,
            "gc_count": len(gc_pauses.pauses), "gc_max_ms": max(gc_pauses.pauses, default=0) * 1e3,
            "python_threads": len(loops) + (monitor is not None)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m control_plane.bench")
    ap.add_argument("--seconds", type=float, default=20.0, help="per scenario")
    ap.add_argument("--rt-priority", type=int, default=10,
                    help="SCHED_FIFO priority of the loop's thread; 0: a normal thread (default %(default)s)")
    ap.add_argument("--load-rate", default="60mbit",
                    help="the fixed-rate sender's rate under load (p4rcp-host rate syntax); default %(default)s")
    ap.add_argument("--records", help="write the loop's records of one port, per interval, to this JSONL file")
    ap.add_argument("--switch-interval-ms", type=float, default=None,
                    help="Python's thread switch interval while the loops run; 0: Python's own (5 ms); default: "
                         "the loop's")
    args = ap.parse_args(argv)
    if not BUILD_JSON.is_file():
        print(f"bench-control: {BUILD_JSON} missing: run 'make build'", file=sys.stderr)
        return 2
    loop_options = {"rt_priority": args.rt_priority or None}
    if args.switch_interval_ms is not None:
        loop_options["switch_interval_s"] = args.switch_interval_ms / 1e3 or None
    with ExitStack() as stack:
        out = stack.enter_context(open(args.records, "w")) if args.records else None
        results = {"idle": run_loop(args.seconds, None, loop_options, out),
                   "under load": run_loop(args.seconds, args.load_rate, loop_options, out)}
    T = results["idle"]["T"]
    print(f"{RCP_PORTS} RCP ports, target T = {T * 1e3:.1f} ms, {args.seconds:.0f} s per scenario; "
          f"load: a p4rcp-host fixed:{args.load_rate} flow and its ACKs through the switch, a second loop "
          f"and the experiments' monitor in the loop's process; Python switch interval {sys.getswitchinterval() * 1e3:g} ms")
    ok = True
    for name, r in results.items():
        passed = r["p99"] <= TARGET
        ok &= passed
        print(f"{name:10s}: {r['n']} intervals, period / T p50 {r['p50']:.3f} p99 {r['p99']:.3f} max {r['max']:.3f} "
              f"(between read middles: p99 {r['mid_p99']:.3f}) -> p99 <= {TARGET} T: {'PASS' if passed else 'FAIL'}")
        print(f"{'':12s}p50 / p99 in ms: work {r['work_p50_ms']:.2f} / {r['work_p99_ms']:.2f}, read "
              f"{r['read_p50_ms']:.2f} / {r['read_p99_ms']:.2f}, woke late {r['late_p50_ms']:.2f} / "
              f"{r['late_p99_ms']:.2f}, switch answered after {r['answer_p50_ms']:.2f} / {r['answer_p99_ms']:.2f}; "
              f"p99 of the loop thread's wait for a core {r['queued_p99_ms']:.2f} per interval")
        print(f"{'':12s}{r['n_late']} intervals > {TARGET} T: {r['late_woke']} woke > 1 ms late, {r['late_answer']} "
              f"answered > 1 ms after the request, {r['late_queued']} waited > 1 ms for a core, {r['late_stolen']} "
              f"with CPU stolen (of all intervals: {r['stolen_rate'] * 100:.0f}%); steal {r['steal_share'] * 100:.1f}% "
              f"of the machine")
        print(f"{'':12s}{r['python_threads']} Python thread(s) busy, process CPU {r['cpu_share'] * 100:.1f}%; "
              f"simple_switch CPU {r['switch_share'] * 100:.0f}% forwarding {r['forwarded_pps']:.0f} pkt/s; "
              f"{r['gc_count']} GCs, longest {r['gc_max_ms']:.2f} ms")
    print(f"bench-control: {'PASS' if ok else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

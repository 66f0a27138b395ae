"""make bench-control: the RCP loop against simple_switch with 8 RCP ports.

Prints the loop period's p50 / p99 / max relative to the target T and the
loop's CPU share. Target: p99 <= 1.1 T at T = 10 ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time

from control_plane.bmv2_thrift import Bmv2ThriftDriver
from control_plane.loop import ControlLoop, RcpParams
from p4rcp.bmv2 import SimpleSwitch
from p4rcp.toolchain import BUILD_JSON
from p4rcp.topology import Route, Switch, SwitchPort
from p4rcp.veth import VethPairs, free_tcp_port
from topo.analysis import percentile

RCP_PORTS = 8
TARGET = 1.1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m control_plane.bench")
    ap.add_argument("--seconds", type=float, default=30.0)
    args = ap.parse_args(argv)
    if not BUILD_JSON.is_file():
        print(f"bench-control: {BUILD_JSON} missing: run 'make build'", file=sys.stderr)
        return 2
    ports = {p: SwitchPort(p, f"h{p}", f"00:aa:00:00:00:{p:02x}", capacity_bps=10e6, queue_rate_pps=1000)
             for p in range(1, RCP_PORTS + 1)}
    records: list[dict] = []
    with VethPairs(RCP_PORTS + 1, tag="bc") as veths:
        thrift_port = free_tcp_port()
        with SimpleSwitch(BUILD_JSON, dict(enumerate(veths.switch_side)), thrift_port):
            switch = Switch("s1", thrift_port, {0: SwitchPort(0, "h0", "00:aa:00:00:00:00"), **ports})
            routes = [Route(f"10.0.{p}.0/24", p, ports[p].mac, "00:00:00:00:00:01") for p in ports]
            loop = ControlLoop(switch, routes, Bmv2ThriftDriver(thrift_port), RcpParams(d0_init_s=0.05),
                               emit=records.append)
            stop = threading.Event()
            cpu0, wall0 = time.process_time(), time.monotonic()
            thread = threading.Thread(target=loop.run, args=(stop,))
            thread.start()
            time.sleep(args.seconds)
            stop.set()
            thread.join()
            cpu_share = (time.process_time() - cpu0) / (time.monotonic() - wall0)
    periods = [r["period_s"] for r in records if r["port"] == 1]
    loops = [r["loop_s"] for r in records if r["port"] == 1]
    T = records[-1]["T_s"]
    p50, p99, worst = (x / T for x in (statistics.median(periods), percentile(periods, 99), max(periods)))
    print(f"{len(periods)} intervals over {args.seconds:.0f} s, {RCP_PORTS} RCP ports, target T = {T * 1e3:.1f} ms")
    print(f"period / T: p50 {p50:.3f}  p99 {p99:.3f}  max {worst:.3f}")
    print(f"work per interval (read, compute, write): p50 {statistics.median(loops) * 1e3:.2f} ms, "
          f"p99 {percentile(loops, 99) * 1e3:.2f} ms")
    print(f"loop CPU share: {cpu_share * 100:.1f}% of one core")
    print(f"p99 <= {TARGET} T: {'PASS' if p99 <= TARGET else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

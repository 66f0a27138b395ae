"""make bench-dataplane: packets per second through simple_switch, p4rcp against
the same program without RCP (routing only), same traffic, same run.

Frames are RCP DATA packets that the RCP build stamps and samples (its worst
case). A Python sender keeps WINDOW frames in flight through the switch (sent
but not yet out of port 1), so the switch is always busy but its input
buffer never overflows; the forwarding rate is read from the kernel's rx
counter of the veth behind port 1, over the middle of the transfer.

On 2 cores the Python sender may be what limits that rate, so the switch's
own cost is measured too: simple_switch's CPU seconds per forwarded packet
(all its threads), whose inverse is the rate one core of it could forward.
Rounds alternate between the two programs so that drift of a noisy machine
hits both; the ratios of medians are the result.
"""

from __future__ import annotations

import argparse
import json
import socket
from dataclasses import dataclass
import statistics
import sys
import threading
import time
from pathlib import Path

import psutil
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from control_plane.bmv2_thrift import Bmv2ThriftDriver
from p4rcp.bmv2 import SimpleSwitch
from p4rcp.protocol import RCP
from p4rcp.toolchain import BUILD_JSON, BUILD_PLAIN_JSON
from p4rcp.topology import Route
from p4rcp.veth import VethPairs, free_tcp_port

PROGRAMS = {"plain": BUILD_PLAIN_JSON, "rcp": BUILD_JSON}
TARGET_RATIO = 0.9
WINDOW = 200


def frame() -> bytes:
    pkt = (Ether(src="00:00:00:00:00:01", dst="00:aa:00:00:00:00") / IP(src="10.0.0.2", dst="10.0.1.2")
           / UDP(sport=40000, dport=6577) / RCP(rate_kbps=10**6, rtt_us=40_000))
    return bytes(pkt / bytes(1000 - len(pkt)))


def rx_packets(iface: str) -> int:
    return int(Path(f"/sys/class/net/{iface}/statistics/rx_packets").read_text())


@dataclass
class Round:
    pps: float               # forwarding rate achieved
    cpu_us_per_pkt: float    # simple_switch CPU time per forwarded packet


def _cpu_seconds(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


def one_round(json_path: Path, packets: int) -> Round:
    with VethPairs(2, tag="bd") as veths:
        port = free_tcp_port()
        with SimpleSwitch(json_path, dict(enumerate(veths.switch_side)), port) as switch:
            proc = psutil.Process(switch.pid)
            driver = Bmv2ThriftDriver(port)
            driver.connect()
            driver.install_routes([Route("10.0.1.0/24", 1, "00:aa:00:00:00:01", "00:00:00:00:00:02")])
            if "rcp_rate" in {r["name"] for r in _registers(json_path)}:
                driver.write_rates_kbps({1: 5000})
            driver.close()
            out = veths.host_side[1]
            samples: list[tuple[float, int]] = []
            done = threading.Event()

            def sample():
                while not done.is_set():
                    samples.append((time.monotonic(), rx_packets(out)))
                    time.sleep(0.01)

            sampler = threading.Thread(target=sample)
            sampler.start()
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            sock.bind((veths.host_side[0], 0))
            data = frame()
            cpu_start = _cpu_seconds(proc)
            start = rx_packets(out)
            sent = 0
            while sent < packets:
                if sent - (rx_packets(out) - start) >= WINDOW:
                    time.sleep(0.0002)
                    continue
                for _ in range(min(32, packets - sent)):
                    sock.send(data)
                    sent += 1
            # Wait until the switch has drained what it accepted.
            last = -1
            while rx_packets(out) != last:
                last = rx_packets(out)
                time.sleep(0.3)
            cpu = _cpu_seconds(proc) - cpu_start
            done.set()
            sampler.join()
            sock.close()
    base = samples[0][1]
    total = samples[-1][1] - base
    window = [(t, n - base) for t, n in samples if 0.2 * total <= n - base <= 0.8 * total]
    if total < packets * 0.95 or len(window) < 2:
        raise RuntimeError(f"only {total} of {packets} packets came through")
    (t1, n1), (t2, n2) = window[0], window[-1]
    return Round((n2 - n1) / (t2 - t1), cpu / total * 1e6)


def _registers(json_path: Path) -> list[dict]:
    return json.loads(json_path.read_text())["register_arrays"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ptf_tests.bench_dataplane")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--packets", type=int, default=30000)
    args = ap.parse_args(argv)
    for path in PROGRAMS.values():
        if not path.is_file():
            print(f"bench-dataplane: {path} missing: run 'make build build-plain'", file=sys.stderr)
            return 2
    results = {name: [] for name in PROGRAMS}
    for r in range(args.rounds):
        for name, path in PROGRAMS.items():
            result = one_round(path, args.packets)
            results[name].append(result)
            print(f"round {r + 1}: {name:5s} {result.pps:8.0f} pkt/s, {result.cpu_us_per_pkt:6.1f} us CPU/pkt", flush=True)
    pps = {n: statistics.median(x.pps for x in rs) for n, rs in results.items()}
    cost = {n: statistics.median(x.cpu_us_per_pkt for x in rs) for n, rs in results.items()}
    print(f"\n{'':22s}{'pkt/s':>10s}{'us CPU/pkt':>12s}{'pkt/s per core':>16s}   (medians of {args.rounds})")
    for name, label in (("plain", "routing only (plain)"), ("rcp", "p4rcp (RCP on)")):
        print(f"{label:22s}{pps[name]:10.0f}{cost[name]:12.1f}{1e6 / cost[name]:16.0f}")
    rate_ratio, cost_ratio = pps["rcp"] / pps["plain"], cost["plain"] / cost["rcp"]
    print(f"ratio rcp / plain: forwarding rate {rate_ratio:.3f}, per-core capacity {cost_ratio:.3f}; "
          f"target >= {TARGET_RATIO}: {'PASS' if min(rate_ratio, cost_ratio) >= TARGET_RATIO else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

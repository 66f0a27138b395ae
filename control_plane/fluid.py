"""A fluid model of one RCP bottleneck, for choosing gains without the emulation.

N greedy flows send at the R they last heard, which reaches the link again one
RTT (plus the queueing delay) after it was computed; the queue integrates the
excess over C between 0 and a limit; every T the router applies the same
`rcp_rate` as the control plane. No packets, no noise: it shows whether the
loop itself is stable for given gains, delays and target queue.

    python -m control_plane.fluid --alpha 0.1 --beta 1.0 --q0-packets 6
"""

from __future__ import annotations

import argparse
import bisect
import statistics
from dataclasses import dataclass

from control_plane.rcp_law import rcp_rate


@dataclass(frozen=True)
class Steady:
    """N*R/C and y/C over the second half of the run; queue in packets."""
    share_mean: float
    share_min: float
    share_max: float
    utilisation: float
    queue_mean_pkts: float
    queue_max_pkts: float


def simulate(*, alpha: float, beta: float, q0_packets: float = 0.0, flows: int = 4, C_pps: float = 1391,
             packet_bytes: int = 1078, rtt_s: float = 0.040, T_s: float = 0.010, queue_limit_pkts: int = 64,
             duration_s: float = 20.0, dt_s: float = 0.001) -> Steady:
    C = C_pps * packet_bytes * 8                  # bit/s
    bits = packet_bytes * 8
    q_limit, q0 = queue_limit_pkts * bits, q0_packets * bits
    times, rates = [0.0], [C / flows]              # R as computed, for the senders to hear later
    R, q, arrived, t, next_update = C / flows, 0.0, 0.0, 0.0, T_s
    samples = []
    while t < duration_s:
        heard = rates[bisect.bisect_right(times, t - rtt_s - q / C) - 1]
        y_now = flows * heard
        arrived += y_now * dt_s
        q = min(max(q + (y_now - C) * dt_s, 0.0), q_limit)
        t += dt_s
        if t >= next_update:
            y = arrived / T_s
            arrived = 0.0
            R = rcp_rate(R, T_s, rtt_s + q / C, C, y, q, alpha=alpha, beta=beta, q0=q0, R_min=C / 1000)
            times.append(t)
            rates.append(R)
            next_update += T_s
            if t > duration_s / 2:
                samples.append((flows * R / C, y / C, q / bits))
    shares = [s[0] for s in samples]
    queues = [s[2] for s in samples]
    return Steady(statistics.fmean(shares), min(shares), max(shares), statistics.fmean(s[1] for s in samples),
                  statistics.fmean(queues), max(queues))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--alpha", type=float, required=True)
    ap.add_argument("--beta", type=float, required=True)
    ap.add_argument("--q0-packets", type=float, default=0.0)
    ap.add_argument("--flows", type=int, default=4)
    ap.add_argument("--rtt-ms", type=float, default=40.0)
    ap.add_argument("--capacity-pps", type=float, default=1391, help="default: 12 Mb/s of 1078-byte frames")
    args = ap.parse_args()
    s = simulate(alpha=args.alpha, beta=args.beta, q0_packets=args.q0_packets, flows=args.flows,
                 C_pps=args.capacity_pps, rtt_s=args.rtt_ms / 1000)
    print(f"N*R/C mean {s.share_mean:.3f} (min {s.share_min:.3f}, max {s.share_max:.3f}), "
          f"utilisation {s.utilisation:.3f}, queue mean {s.queue_mean_pkts:.1f} max {s.queue_max_pkts:.1f} packets")


if __name__ == "__main__":
    main()

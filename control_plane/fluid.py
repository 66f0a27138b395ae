"""A fluid model of one RCP bottleneck, for choosing gains and reading transients without the emulation.

Greedy flows send at the R they last heard, which reaches the link again one
RTT (plus the queueing delay) after it was computed; a flow whose SYN leaves
at s sends from s + RTT (the handshake) at the R every other flow hears; the
queue integrates the excess over C between 0 and a limit; every T the router
applies the same `rcp_rate` as the control plane. No packets, no noise: it
shows whether the loop itself is stable for given gains, delays and target
queue, and how long a joining flow takes to reach its share.

    python -m control_plane.fluid --alpha 0.1 --beta 1.0 --q0-packets 6
    python -m control_plane.fluid --alpha 0.4 --beta 0.4 --joins 0,5,10,15
"""

from __future__ import annotations

import argparse
import bisect
import statistics
from dataclasses import dataclass

from control_plane.rcp_law import rcp_rate
from topo.analysis import time_to_share


@dataclass(frozen=True)
class Bottleneck:
    """The link and the loop's timing; the defaults are the convergence experiment's (12 Mb/s of 1078-byte
    frames, 40 ms, bmv2's 64-packet queue, T = 10 ms)."""
    C_pps: float = 1391
    packet_bytes: int = 1078
    rtt_s: float = 0.040
    T_s: float = 0.010
    queue_limit_pkts: int = 64

    @property
    def C_bps(self) -> float:
        return self.C_pps * self.packet_bytes * 8


@dataclass(frozen=True)
class Interval:
    """One update of the router: when, the R it computed, the R the flows were sending at, y and the queue
    (bit/s, bits), and how many flows were sending."""
    t: float
    R: float
    heard: float
    y: float
    q: float
    flows: int


def trace(link: Bottleneck, starts_s: list[float], *, alpha: float, beta: float, q0_packets: float = 0.0,
          duration_s: float = 20.0, dt_s: float = 0.001) -> list[Interval]:
    """The loop's updates over `duration_s`, for flows whose SYNs leave at `starts_s` (a start of 0 sends from
    0: those flows are there from the beginning, and R starts at C over their number, their equilibrium)."""
    C, bits = link.C_bps, link.packet_bytes * 8
    q_limit, q0 = link.queue_limit_pkts * bits, q0_packets * bits
    sending_from = sorted(s + link.rtt_s if s > 0 else 0.0 for s in starts_s)
    R = C / max(1, bisect.bisect_right(sending_from, 0.0))
    times, rates = [0.0], [R]                      # R as computed, for the senders to hear later
    q, arrived, t, next_update = 0.0, 0.0, 0.0, link.T_s
    intervals = []
    while t < duration_s:
        heard = rates[bisect.bisect_right(times, t - link.rtt_s - q / C) - 1]
        n = bisect.bisect_right(sending_from, t)
        arrived += n * heard * dt_s
        q = min(max(q + (n * heard - C) * dt_s, 0.0), q_limit)
        t += dt_s
        if t >= next_update:
            y = arrived / link.T_s
            arrived = 0.0
            R = rcp_rate(R, link.T_s, link.rtt_s + q / C, C, y, q, alpha=alpha, beta=beta, q0=q0, R_min=C / 1000)
            times.append(t)
            rates.append(R)
            next_update += link.T_s
            intervals.append(Interval(t, R, heard, y, q, n))
    return intervals


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
             rtt_s: float = 0.040, duration_s: float = 20.0) -> Steady:
    """`flows` greedy flows from the start: how close the second half stays to R = C / flows."""
    link = Bottleneck(C_pps=C_pps, rtt_s=rtt_s)
    late = [i for i in trace(link, [0.0] * flows, alpha=alpha, beta=beta, q0_packets=q0_packets,
                             duration_s=duration_s) if i.t > duration_s / 2]
    shares = [flows * i.R / link.C_bps for i in late]
    queues = [i.q / (link.packet_bytes * 8) for i in late]
    return Steady(statistics.fmean(shares), min(shares), max(shares),
                  statistics.fmean(i.y for i in late) / link.C_bps, statistics.fmean(queues), max(queues))


def join_rtts(link: Bottleneck, starts_s: list[float], *, alpha: float, beta: float,
              duration_s: float | None = None) -> list[float | None]:
    """Per flow after the first, in RTTs from its SYN: until the rate it sends at, averaged over 0.1 s, stays
    within 20% of C over the flows then sending for 0.5 s (the report's "joining flow to its fair share",
    topo/report.py, measured at the link instead of from the sender's acknowledgements, which come one
    RTT later). None: not before the next flow joined."""
    starts = sorted(starts_s)
    end = duration_s if duration_s is not None else starts[-1] + 5.0
    intervals = trace(link, starts, alpha=alpha, beta=beta, duration_s=end)
    times = []
    for k, start in enumerate(starts[1:], start=2):
        until = starts[k] if k < len(starts) else end
        samples = [(i.t, i.heard) for i in intervals if i.t >= start + link.rtt_s]
        t = time_to_share(samples, start, link.C_bps / k, until_s=until, window_s=0.1, hold_s=0.5)
        times.append(None if t is None else t / link.rtt_s)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--alpha", type=float, required=True)
    ap.add_argument("--beta", type=float, required=True)
    ap.add_argument("--q0-packets", type=float, default=0.0)
    ap.add_argument("--flows", type=int, default=4)
    ap.add_argument("--rtt-ms", type=float, default=40.0)
    ap.add_argument("--capacity-pps", type=float, default=1391, help="default: 12 Mb/s of 1078-byte frames")
    ap.add_argument("--queue-packets", type=int, default=64)
    ap.add_argument("--joins", help="comma-separated SYN times (s): report each joining flow's time to its share")
    args = ap.parse_args()
    if args.joins:
        link = Bottleneck(C_pps=args.capacity_pps, rtt_s=args.rtt_ms / 1000, queue_limit_pkts=args.queue_packets)
        rtts = join_rtts(link, [float(s) for s in args.joins.split(",")], alpha=args.alpha, beta=args.beta)
        print("joining flows to their share (RTTs): " + " / ".join("never" if r is None else f"{r:.1f}" for r in rtts))
        return
    s = simulate(alpha=args.alpha, beta=args.beta, q0_packets=args.q0_packets, flows=args.flows,
                 C_pps=args.capacity_pps, rtt_s=args.rtt_ms / 1000)
    print(f"N*R/C mean {s.share_mean:.3f} (min {s.share_min:.3f}, max {s.share_max:.3f}), "
          f"utilisation {s.utilisation:.3f}, queue mean {s.queue_mean_pkts:.1f} max {s.queue_max_pkts:.1f} packets")


if __name__ == "__main__":
    main()

"""A fluid model of one RCP bottleneck, for choosing gains and reading transients without the emulation.

Greedy flows send at the R they last heard, which reaches the link again one
RTT (plus the queueing delay) after it was computed; a flow whose SYN leaves
at s sends from s + RTT (the handshake) at the R every other flow hears; the
queue integrates the excess over C between 0 and a limit; every T the router
applies the same `rcp_rate` as the control plane. No packets, no noise: it
shows whether the loop itself is stable for given gains, delays and target
queue, how long a joining flow takes to reach its share, and how much
finite flows arriving at random overflow the queue.

    python -m control_plane.fluid --alpha 0.1 --beta 1.0 --q0-packets 6
    python -m control_plane.fluid --alpha 0.4 --beta 0.4 --joins 0,5,10,15
    python -m control_plane.fluid --alpha 0.4 --beta 0.4 --capacity-pps 1739 --rtt-ms 60 --queue-packets 105 \
        --load 0.75 --flow-packets 100
"""

from __future__ import annotations

import argparse
import bisect
import random
import statistics
from collections import deque
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
    (bit/s, bits), how many flows were sending, and the bits the full queue dropped since the last update."""
    t: float
    R: float
    heard: float
    y: float
    q: float
    flows: int
    dropped: float = 0.0


def trace(link: Bottleneck, starts_s: list[float], *, alpha: float, beta: float, q0_packets: float = 0.0,
          duration_s: float = 20.0, dt_s: float = 0.001, sizes_pkts: list[float] | None = None) -> list[Interval]:
    """The loop's updates over `duration_s`, for flows whose SYNs leave at `starts_s` (a start of 0 sends from
    0: those flows are there from the beginning, and R starts at C over their number, their equilibrium).
    Flows are greedy unless `sizes_pkts` gives each one's size: it then stops once that much has left it
    (what the full queue dropped is counted, not sent again)."""
    C, bits = link.C_bps, link.packet_bytes * 8
    q_limit, q0 = link.queue_limit_pkts * bits, q0_packets * bits
    sizes = sizes_pkts if sizes_pkts is not None else [float("inf")] * len(starts_s)
    waiting = deque(sorted((s + link.rtt_s if s > 0 else 0.0, size * bits) for s, size in zip(starts_s, sizes)))
    R = C / max(1, sum(1 for start, _ in waiting if start <= 0.0))
    times, rates = [0.0], [R]                      # R as computed, for the senders to hear later
    left: list[float] = []                         # bits each sending flow has yet to send
    q, arrived, dropped, t, next_update = 0.0, 0.0, 0.0, 0.0, link.T_s
    intervals = []
    while t < duration_s:
        heard = rates[bisect.bisect_right(times, t - link.rtt_s - q / C) - 1]
        while waiting and waiting[0][0] <= t:
            left.append(waiting.popleft()[1])
        sent = [min(heard * dt_s, b) for b in left]
        left = [b - x for b, x in zip(left, sent) if b - x > 0]
        offered = sum(sent)
        arrived += offered
        q = max(q + offered - C * dt_s, 0.0)
        dropped += max(q - q_limit, 0.0)
        q = min(q, q_limit)
        t += dt_s
        if t >= next_update:
            y = arrived / link.T_s
            arrived = 0.0
            R = rcp_rate(R, link.T_s, link.rtt_s + q / C, C, y, q, alpha=alpha, beta=beta, q0=q0, R_min=C / 1000)
            times.append(t)
            rates.append(R)
            next_update += link.T_s
            intervals.append(Interval(t, R, heard, y, q, len(left), dropped))
            dropped = 0.0
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


def poisson_drops(link: Bottleneck, *, load: float, size_pkts: float, alpha: float, beta: float,
                  duration_s: float = 40.0, seed: int = 1) -> float:
    """Share of the offered packets the full queue drops when flows of `size_pkts` arrive as a Poisson process
    offering `load` of the link (the short-flows experiment). Each flow starts at the R of its SYN-ACK, up to C
    on an idle link, so a few arrivals within an RTT can offer several times C before the law answers."""
    rnd, flows_per_s = random.Random(seed), load * link.C_pps / size_pkts
    starts, t = [], rnd.expovariate(flows_per_s)
    while t < duration_s:
        starts.append(t)
        t += rnd.expovariate(flows_per_s)
    intervals = trace(link, starts, alpha=alpha, beta=beta, duration_s=duration_s + 5.0,
                      sizes_pkts=[size_pkts] * len(starts))
    return sum(i.dropped for i in intervals) / (link.packet_bytes * 8) / (size_pkts * len(starts))


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
    ap.add_argument("--load", type=float, help="Poisson arrivals of --flow-packets flows at this load: report the "
                                               "share of packets the full queue drops")
    ap.add_argument("--flow-packets", type=float, default=100)
    args = ap.parse_args()
    if args.load:
        link = Bottleneck(C_pps=args.capacity_pps, rtt_s=args.rtt_ms / 1000, queue_limit_pkts=args.queue_packets)
        drops = poisson_drops(link, load=args.load, size_pkts=args.flow_packets, alpha=args.alpha, beta=args.beta)
        print(f"dropped {100 * drops:.2f}% of the offered packets")
        return
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

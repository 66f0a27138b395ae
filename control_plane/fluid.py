"""A fluid model of one RCP bottleneck, for choosing gains and laws and reading transients without the emulation.

Flows send at the R they last heard, which reaches the link again one RTT (plus the queueing delay) after it
was computed; a flow whose SYN leaves at s sends from s + RTT (the handshake); the queue integrates the excess
over C between 0 and a limit; every T the router applies the same law functions as the control plane. No
packets, no noise: it shows whether the loop itself is stable for given gains, delays and target queue, how
long a joining flow takes to reach its share, how much finite flows arriving at random or a flash crowd
overflow the queue, and how long short flows take against processor sharing.

Three routers (docs/design.md, "Sudden load"):
- "rcp": the RCP law; a new flow starts at the R its SYN carried.
- "rcp-ff": the law, then the feedforward as the routers run it (docs/design.md): R scaled by N / (N + a - l)
  each interval, a and l the flows that arrived (SYN) and are ending (their unsent data fits one round trip at
  their rate), each weighed by min(size, P) / P; a long flow's SYN (size above P / 2) stamped with the next
  stamp of the sequence that runs over the last round trip (rcp_window_syn_rates), a short flow's with the
  first flow's share.
- "rcp-ac": the talk's RCP-AC, approximated: flows below R accelerate towards it with an aggregate budget
  phi = alpha (C - y) d + (gamma_ac B - beta q) per RTT, shared in proportion to their deficits; new flows
  start at one packet per RTT.

The gains, the target queue and the router come from a preset (p4rcp/presets.py, --preset, default rcp:
RcpParams' defaults; rcp-ff where it has the feedforward); --alpha, --beta, --q0-packets and --router set
them instead. The model has no d0 estimator (d0 is the RTT and the queueing delay), no policing and no weights.

    python -m control_plane.fluid --preset rcp-papers --joins 0,5,10,15
    python -m control_plane.fluid --alpha 0.4 --beta 0.4 --joins 0,5,10,15
    python -m control_plane.fluid --alpha 0.4 --beta 0.4 --router rcp-ff --capacity-pps 1739 --rtt-ms 60 \
        --queue-packets 105 --load 0.75 --flow-packets 100
    python -m control_plane.fluid --alpha 0.4 --beta 0.4 --router rcp-ac --ac-gamma 0.5 --flash 4,4
"""

from __future__ import annotations

import argparse
import bisect
import random
import statistics
from collections import deque
from dataclasses import dataclass, field

from p4rcp.analysis import time_to_share
from p4rcp.dataplane import SYN_RATES
from p4rcp.presets import PRESETS, router_preset
from p4rcp.rcp_law import (persistent_queue, rcp_feedforward, rcp_grant_packets, rcp_overload_floor, rcp_rate,
                            rcp_syn_rates, rcp_window_syn_rates)

ROUTERS = ("rcp", "rcp-ff", "rcp-ac")
# The RcpParams fields the model takes from a preset; a preset that sets any other is run without it, and says so.
MODELLED = ("alpha", "beta", "q0_bytes", "queue_reads", "overload_floor", "feedforward")
# Fields that change nothing here: the model has no TCP.
WITHOUT_EFFECT = ("tcp_coupling",)


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
    newest_rate: float = 0.0        # the rate of the flow that started last (its join, whatever the router)


@dataclass
class _Flow:
    syn_s: float
    sends_from: float
    first_rate: float              # until it hears the common R, one RTT after it starts sending
    left: float                    # bits
    rate: float = 0.0
    size_pkts: float = float("inf")
    ending: bool = False           # the router has counted its ending


@dataclass
class Run:
    intervals: list[Interval]
    fcts_s: list[float] = field(default_factory=list)     # first SYN to the last bit's arrival, per finished flow


def run(link: Bottleneck, starts_s: list[float], *, alpha: float, beta: float, q0_packets: float = 0.0,
        duration_s: float = 20.0, dt_s: float = 0.001, sizes_pkts: list[float] | None = None, router: str = "rcp",
        ac_gamma: float = 0.5, queue_reads: int = 1, overload_floor: bool = False) -> Run:
    """The loop's updates over `duration_s`, for flows whose SYNs leave at `starts_s` (a start of 0 sends from
    0: those flows are there from the beginning, and R starts at C over their number, their equilibrium).
    Flows are greedy unless `sizes_pkts` gives each one's size: it then stops once that much has left it
    (what the full queue dropped is counted, not sent again)."""
    if router not in ROUTERS:
        raise ValueError(f"router must be one of {', '.join(ROUTERS)}, got {router!r}")
    C, bits, T = link.C_bps, link.packet_bytes * 8, link.T_s
    q_limit, q0 = link.queue_limit_pkts * bits, q0_packets * bits
    sizes = sizes_pkts if sizes_pkts is not None else [float("inf")] * len(starts_s)
    pending = sorted(zip(starts_s, sizes))
    R = C / max(1, sum(1 for start, _ in pending if start <= 0.0))
    times, rates = [0.0], [R]                      # R as computed, for the senders to hear later
    flows: list[_Flow] = []
    q = arrived = dropped = t = 0.0
    q_reads: deque = deque(maxlen=queue_reads)
    next_update = T
    # the feedforward's state, as the data plane and the loop hold it (control_plane/loop.py next_grants)
    P = rcp_grant_packets(R, link.rtt_s, bits)
    long_rates, short_rate, long_syns, base = [float("inf")] * SYN_RATES, float("inf"), 0, 0
    window: list[tuple[float, int, float, float]] = []
    committed_a = committed_d = 0.0
    intervals, fcts = [], []
    newest: _Flow | None = None
    while t < duration_s:
        heard = rates[bisect.bisect_right(times, t - link.rtt_s - q / C) - 1]
        while pending and pending[0][0] <= t:
            start, size = pending.pop(0)
            if router == "rcp-ff" and start > 0:
                size_field = min(size, 0xFFFF)
                committed_a += min(size_field, P)
                if size_field > P // 2:
                    long_syns += 1
                    first = min(R, long_rates[min(long_syns - base, SYN_RATES) - 1])
                else:
                    first = min(R, short_rate)
            elif router == "rcp-ac" and start > 0:
                first = bits / link.rtt_s
            else:
                first = heard
            newest = _Flow(start, start + link.rtt_s if start > 0 else 0.0, first, size * bits, first, size)
            flows.append(newest)
        offered = 0.0
        for f in flows:
            if f.sends_from > t:
                continue
            if router == "rcp":
                f.rate = heard                      # every flow at the R it last heard, new ones too
            elif router == "rcp-ff":
                f.rate = f.first_rate if t < f.sends_from + link.rtt_s else heard
            if router == "rcp-ff" and not f.ending and f.left <= f.rate * link.rtt_s:
                f.ending = True
                committed_d += min(min(f.size_pkts, 0xFFFF), P)
            x = min(f.rate * dt_s, f.left)
            f.left -= x
            offered += x
            if f.left <= 0:
                fcts.append(t + dt_s + link.rtt_s / 2 + q / C - f.syn_s)
        flows = [f for f in flows if f.left > 0]
        arrived += offered
        q = max(q + offered - C * dt_s, 0.0)
        dropped += max(q - q_limit, 0.0)
        q = min(q, q_limit)
        t += dt_s
        if t >= next_update:
            y = arrived / T
            arrived = 0.0
            R_prev = R
            q_reads.append(q)
            q_law, d0 = persistent_queue(q_reads), link.rtt_s + q / C
            R = rcp_rate(R, T, d0, C, y, q_law, alpha=alpha, beta=beta, q0=q0, R_min=C / 1000)
            if overload_floor:
                R_heard = rates[bisect.bisect_right(times, t - d0) - 1]
                R = max(R, min(rcp_overload_floor(R_heard, C, y, q_law, d0), R_prev))
            if router == "rcp-ff":
                R = rcp_feedforward(R, R_prev, C, committed_a / P, committed_d / P, R_min=C / 1000)
                window.append((t, long_syns, R, y))
                while len(window) > 1 and window[1][0] <= t - d0:
                    window.pop(0)
                _, base_w, R_w, y_w = window[0]
                R_w = min(R_w, 10 * R)
                long_rates = rcp_window_syn_rates(R_w, C, y_w, long_syns - base_w, SYN_RATES)
                P = rcp_grant_packets(rcp_syn_rates(R_w, C, y_w, 1)[0], d0, bits)
                short_rate = rcp_syn_rates(R, C, y, 1)[0]
                base, committed_a, committed_d = long_syns, 0.0, 0.0
            elif router == "rcp-ac":
                _accelerate(flows, t, heard, y, q, C, link, alpha, beta, ac_gamma * q_limit)
            times.append(t)
            rates.append(R)
            next_update += T
            sending = [f for f in flows if f.sends_from <= t]
            intervals.append(Interval(t, R, heard, y, q, len(flows), dropped,
                                      newest.rate if newest is not None and newest in sending else 0.0))
            dropped = 0.0
    return Run(intervals, fcts)


def _accelerate(flows: list[_Flow], t: float, R_heard: float, y: float, q: float, C: float, link: Bottleneck,
                alpha: float, beta: float, B: float) -> None:
    """RCP-AC's acceleration controller for one interval: a flow above R drops to it; flows below share the
    budget phi = alpha (C - y) d + (gamma B - beta q) of one RTT d, T/d of it per interval, by their deficits."""
    d = link.rtt_s
    phi = max(0.0, alpha * (C - y) * d + (B - beta * q)) * link.T_s / d
    sending = [f for f in flows if f.sends_from <= t]
    deficits = [max(0.0, R_heard - f.rate) for f in sending]
    total = sum(deficits)
    for f, deficit in zip(sending, deficits):
        if f.rate > R_heard:
            f.rate = R_heard
        elif total > 0:
            f.rate = min(R_heard, f.rate + phi / d * deficit / total)


def trace(link: Bottleneck, starts_s: list[float], **kw) -> list[Interval]:
    """run()'s intervals."""
    return run(link, starts_s, **kw).intervals


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
             rtt_s: float = 0.040, duration_s: float = 20.0, router: str = "rcp", queue_reads: int = 1,
             overload_floor: bool = False) -> Steady:
    """`flows` greedy flows from the start: how close the second half stays to R = C / flows."""
    link = Bottleneck(C_pps=C_pps, rtt_s=rtt_s)
    late = [i for i in trace(link, [0.0] * flows, alpha=alpha, beta=beta, q0_packets=q0_packets,
                             duration_s=duration_s, router=router, queue_reads=queue_reads,
                             overload_floor=overload_floor) if i.t > duration_s / 2]
    shares = [flows * i.R / link.C_bps for i in late]
    queues = [i.q / (link.packet_bytes * 8) for i in late]
    return Steady(statistics.fmean(shares), min(shares), max(shares),
                  statistics.fmean(i.y for i in late) / link.C_bps, statistics.fmean(queues), max(queues))


def join_rtts(link: Bottleneck, starts_s: list[float], *, alpha: float, beta: float,
              duration_s: float | None = None, router: str = "rcp", queue_reads: int = 1,
              overload_floor: bool = False) -> list[float | None]:
    """Per flow after the first, in RTTs from its SYN: until the rate it sends at, averaged over 0.1 s, stays
    within 20% of C over the flows then sending for 0.5 s (the report's "joining flow to its fair share",
    topo/report/metrics.py, measured at the link instead of from the sender's acknowledgements, which come one
    RTT later). None: not before the next flow joined."""
    starts = sorted(starts_s)
    end = duration_s if duration_s is not None else starts[-1] + 5.0
    intervals = trace(link, starts, alpha=alpha, beta=beta, duration_s=end, router=router, queue_reads=queue_reads,
                      overload_floor=overload_floor)
    times = []
    for k, start in enumerate(starts[1:], start=2):
        until = starts[k] if k < len(starts) else end
        samples = [(i.t, i.newest_rate) for i in intervals if start + link.rtt_s <= i.t < until]
        t = time_to_share(samples, start, link.C_bps / k, until_s=until, window_s=0.1, hold_s=0.5)
        times.append(None if t is None else t / link.rtt_s)
    return times


def poisson_starts(link: Bottleneck, load: float, size_pkts: float, duration_s: float, seed: int) -> list[float]:
    rnd, flows_per_s = random.Random(seed), load * link.C_pps / size_pkts
    starts, t = [], rnd.expovariate(flows_per_s)
    while t < duration_s:
        starts.append(t)
        t += rnd.expovariate(flows_per_s)
    return starts


@dataclass(frozen=True)
class ShortFlows:
    """Flows of one size arriving at random: the share of offered packets the full queue dropped, and the mean
    FCT over processor sharing's, 1.5 RTT + L / (C (1 - load))."""
    dropped: float
    fct_over_ps: float


def short_flows(link: Bottleneck, *, load: float, size_pkts: float, alpha: float, beta: float,
                duration_s: float = 40.0, seed: int = 1, router: str = "rcp", ac_gamma: float = 0.5,
                queue_reads: int = 1, overload_floor: bool = False) -> ShortFlows:
    """The short-flows experiment in the model: flows of `size_pkts` arrive as a Poisson process offering `load`
    of the link. Each RCP flow starts at the R of its SYN, up to C on an idle link, so a few arrivals within an
    RTT can offer several times C before the law answers."""
    starts = poisson_starts(link, load, size_pkts, duration_s, seed)
    result = run(link, starts, alpha=alpha, beta=beta, duration_s=duration_s + 5.0,
                 sizes_pkts=[size_pkts] * len(starts), router=router, ac_gamma=ac_gamma, queue_reads=queue_reads,
                 overload_floor=overload_floor)
    dropped = sum(i.dropped for i in result.intervals) / (link.packet_bytes * 8) / (size_pkts * len(starts))
    ps = 1.5 * link.rtt_s + size_pkts / (link.C_pps * (1 - load))
    return ShortFlows(dropped, statistics.fmean(result.fcts_s) / ps)


def poisson_drops(link: Bottleneck, *, load: float, size_pkts: float, alpha: float, beta: float,
                  duration_s: float = 40.0, seed: int = 1, router: str = "rcp") -> float:
    """Share of the offered packets the full queue drops (short_flows)."""
    return short_flows(link, load=load, size_pkts=size_pkts, alpha=alpha, beta=beta, duration_s=duration_s,
                       seed=seed, router=router).dropped


@dataclass(frozen=True)
class Flash:
    """After `joining` flows start within an RTT of each other beside `running` ones: the peak queue (packets)
    and what the full queue dropped (packets)."""
    peak_queue_pkts: float
    dropped_pkts: float


def flash_crowd(link: Bottleneck, *, running: int, joining: int, alpha: float, beta: float, router: str = "rcp",
                ac_gamma: float = 0.5, at_s: float = 5.0, queue_reads: int = 1, overload_floor: bool = False) -> Flash:
    """The talk's sudden load: the offered load doubles within one RTT (`joining` = `running` new flows, their
    SYNs spread over a quarter of an RTT)."""
    starts = [0.0] * running + [at_s + link.rtt_s / 4 * i / max(1, joining) for i in range(joining)]
    after = [i for i in trace(link, starts, alpha=alpha, beta=beta, duration_s=at_s + 5.0, router=router,
                              ac_gamma=ac_gamma, queue_reads=queue_reads, overload_floor=overload_floor) if i.t > at_s]
    bits = link.packet_bytes * 8
    return Flash(max(i.q for i in after) / bits, sum(i.dropped for i in after) / bits)


@dataclass(frozen=True)
class Gains:
    """What the model runs of a preset: the law's gains, its target queue (frames of the link) and the router;
    `left_out` names the preset's settings the model does not have."""
    alpha: float
    beta: float
    q0_packets: float
    router: str
    queue_reads: int = 1
    overload_floor: bool = False
    left_out: tuple[str, ...] = ()


def preset_gains(name: str, link: Bottleneck) -> Gains:
    """A router preset (p4rcp/presets.py) as the model runs it."""
    p = router_preset(name)
    params = p.params()
    return Gains(params.alpha, params.beta, params.q0_bytes / link.packet_bytes,
                 "rcp-ff" if params.feedforward else "rcp", params.queue_reads, params.overload_floor,
                 tuple(f"{k} = {v}" for k, v in p.rcp.items() if k not in MODELLED + WITHOUT_EFFECT))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m control_plane.fluid", description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="rcp", metavar="NAME",
                    help=f"the routers' preset ({', '.join(n for n, p in PRESETS.items() if p.sets_routers)}; "
                         f"default rcp): its gains, target queue and feedforward")
    ap.add_argument("--alpha", type=float, help="default: the preset's")
    ap.add_argument("--beta", type=float, help="default: the preset's")
    ap.add_argument("--router", choices=ROUTERS, help="default: rcp-ff where the preset has the feedforward, else rcp")
    ap.add_argument("--ac-gamma", type=float, default=0.5, help="rcp-ac: the buffer allowance, in buffers")
    ap.add_argument("--q0-packets", type=float, help="default: the preset's q0_bytes in frames of the link")
    ap.add_argument("--flows", type=int, default=4)
    ap.add_argument("--rtt-ms", type=float, default=40.0)
    ap.add_argument("--capacity-pps", type=float, default=1391, help="default: 12 Mb/s of 1078-byte frames")
    ap.add_argument("--queue-packets", type=int, default=64)
    ap.add_argument("--joins", help="comma-separated SYN times (s): report each joining flow's time to its share")
    ap.add_argument("--load", type=float, help="Poisson arrivals of --flow-packets flows at this load: report the "
                                               "share of packets the full queue drops and the FCT over PS")
    ap.add_argument("--flow-packets", type=float, default=100)
    ap.add_argument("--flash", metavar="RUNNING,JOINING", help="flows running, then as many joining within an RTT")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    link = Bottleneck(C_pps=args.capacity_pps, rtt_s=args.rtt_ms / 1000, queue_limit_pkts=args.queue_packets)
    try:
        preset = preset_gains(args.preset, link)
    except ValueError as e:
        ap.error(str(e))
    alpha = preset.alpha if args.alpha is None else args.alpha
    beta = preset.beta if args.beta is None else args.beta
    q0_packets = preset.q0_packets if args.q0_packets is None else args.q0_packets
    router = args.router or preset.router
    steady = not (args.load or args.joins or args.flash)       # the one case with a target queue
    given = [f"--{n.replace('_', '-')}" for n in ("alpha", "beta", "q0_packets", "router")
             if getattr(args, n) is not None]
    print(f"preset {args.preset}{' with ' + ', '.join(given) if given else ''}: alpha {alpha:g}, beta {beta:g}"
          + (f", q0 {q0_packets:g} packets" if steady else "") + f", router {router}, "
          + ("q as read" if preset.queue_reads == 1 else f"q the least of {preset.queue_reads} reads")
          + (", the overload floor" if preset.overload_floor else "")
          + (f"; the model leaves out {', '.join(preset.left_out)}" if preset.left_out else ""))
    gains = {"alpha": alpha, "beta": beta, "router": router, "queue_reads": preset.queue_reads,
             "overload_floor": preset.overload_floor}
    if args.load:
        s = short_flows(link, load=args.load, size_pkts=args.flow_packets, seed=args.seed, ac_gamma=args.ac_gamma,
                        **gains)
        print(f"dropped {100 * s.dropped:.2f}% of the offered packets; mean FCT / FCT_PS {s.fct_over_ps:.2f}")
    elif args.joins:
        rtts = join_rtts(link, [float(s) for s in args.joins.split(",")], **gains)
        print("joining flows to their share (RTTs): " + " / ".join("never" if r is None else f"{r:.1f}" for r in rtts))
    elif args.flash:
        running, joining = (int(x) for x in args.flash.split(","))
        f = flash_crowd(link, running=running, joining=joining, ac_gamma=args.ac_gamma, **gains)
        print(f"peak queue {f.peak_queue_pkts:.1f} packets, dropped {f.dropped_pkts:.1f} packets")
    else:
        s = simulate(q0_packets=q0_packets, flows=args.flows, C_pps=args.capacity_pps, rtt_s=args.rtt_ms / 1000,
                     **gains)
        print(f"N*R/C mean {s.share_mean:.3f} (min {s.share_min:.3f}, max {s.share_max:.3f}), "
              f"utilisation {s.utilisation:.3f}, queue mean {s.queue_mean_pkts:.1f} max {s.queue_max_pkts:.1f} packets")


if __name__ == "__main__":
    main()

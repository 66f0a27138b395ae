"""Numbers the experiments report, computed from the runs' records (pure functions)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


def fct_ps(size_bytes: float, C_bps: float, rho: float, rtt_s: float) -> float:
    """Processor-sharing flow completion time: 1.5 RTT + L / (C (1 - rho))."""
    if not 0 <= rho < 1:
        raise ValueError(f"load rho must be in [0, 1), got {rho}")
    if C_bps <= 0:
        raise ValueError(f"capacity must be > 0, got {C_bps}")
    return 1.5 * rtt_s + size_bytes * 8 / (C_bps * (1 - rho))


def ps_sojourns(arrivals: Sequence[tuple[float, float]], C_bps: float) -> list[float]:
    """How long each flow (arrival time s, size bits) stays at a link of C_bps shared by processor sharing,
    given these very arrivals: the exact counterpart of FCT_PS's L / (C (1 - rho)), which is its mean over
    arrivals drawn for ever. Event by event: between two events each of the n flows present gets C / n."""
    if C_bps <= 0:
        raise ValueError(f"capacity must be > 0, got {C_bps}")
    order = sorted(range(len(arrivals)), key=lambda i: arrivals[i][0])
    left: dict[int, float] = {}           # flow -> bits still to send
    done = [0.0] * len(arrivals)
    now, k = 0.0, 0
    while k < len(order) or left:
        share = C_bps / len(left) if left else 0.0
        first = min(left, key=left.get) if left else None
        ends = now + max(left[first], 0.0) / share if left else math.inf
        if k < len(order) and arrivals[order[k]][0] <= ends:
            t = arrivals[order[k]][0]
            for f in left:
                left[f] -= (t - now) * share
            now, left[order[k]] = t, arrivals[order[k]][1]
            k += 1
        else:
            for f in left:
                left[f] -= (ends - now) * share
            now = ends
            done[first] = now - arrivals[first][0]
            del left[first]
    return done


def bound_load(offered: float, nominal: float) -> float:
    """The load FCT_PS takes: the one the arrivals offered; where they offered 1 or more (a heavy-tailed draw),
    the bound does not exist and the nominal load stands in."""
    return offered if offered < 1 else nominal


def jain_index(rates: Sequence[float]) -> float:
    """(sum x)^2 / (n sum x^2): 1 when all equal, 1/n when one takes all."""
    if not rates:
        raise ValueError("Jain's index of no rates")
    squares = sum(x * x for x in rates)
    return 1.0 if squares == 0 else sum(rates) ** 2 / (len(rates) * squares)


def log_bins(sizes: Iterable[float], per_decade: int = 4) -> list[float]:
    """Logarithmic bin edges covering the sizes."""
    sizes = [s for s in sizes if s > 0]
    if not sizes:
        return []
    lo = math.floor(math.log10(min(sizes)) * per_decade)
    hi = math.ceil(math.log10(max(sizes)) * per_decade)
    hi = max(hi, lo + 1)
    return [10 ** (k / per_decade) for k in range(lo, hi + 1)]


def bin_fct(flows: Sequence[dict], edges: Sequence[float], key: str = "size_bytes") -> list[dict]:
    """Per bin [lo, hi) of flows[key]: flows, mean / max FCT, mean FCT / FCT_PS. Each flow carries its
    "fct_s" and "ps_ratio". The last bin includes its upper edge; empty bins are left out."""
    rows = []
    for i, (lo, hi) in enumerate(zip(edges, edges[1:])):
        last = i == len(edges) - 2
        inside = [f for f in flows if lo <= f[key] < hi or (last and f[key] == hi)]
        if not inside:
            continue
        fcts = [f["fct_s"] for f in inside]
        rows.append({"lo": lo, "hi": hi, "flows": len(inside), "mean_fct_s": statistics.fmean(fcts),
                     "max_fct_s": max(fcts), "mean_ratio_ps": statistics.fmean(f["ps_ratio"] for f in inside)})
    return rows


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in [0, 100])."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def time_to_share(samples: Sequence[tuple[float, float]], event_s: float, share: float, *,
                  until_s: float = math.inf, tolerance: float = 0.2, hold_s: float = 1.0,
                  window_s: float = 0.5) -> float | None:
    """Seconds from event_s until a flow's rate (samples of (time, rate), time-sorted) settles at `share`.

    Settled: the rate's trailing mean over window_s stays within +-tolerance of share for hold_s. Only
    samples in [event_s, until_s) count (until_s: the next event or the end). None: it never settles.
    """
    if share <= 0:
        raise ValueError(f"share must be > 0, got {share}")
    points = [(t, v) for t, v in samples if event_s <= t < until_s]
    smoothed = []
    for i, (t, _) in enumerate(points):
        recent = [v for u, v in points[:i + 1] if u > t - window_s]
        smoothed.append((t, statistics.fmean(recent)))
    candidate = None
    for t, v in smoothed:
        if abs(v - share) <= tolerance * share:
            if candidate is None:
                candidate = t
            if t - candidate >= hold_s:
                return candidate - event_s
        else:
            candidate = None
    return None


# What a flow of the hosts' transport puts on the bottleneck besides its DATA packets: the SYN and the FIN
# (hosts/src/workload/traffic.rs, CONTROL_FRAMES_PER_FLOW, CONTROL_BYTES_PER_FLOW).
CONTROL_FRAMES_PER_FLOW = 2
CONTROL_BYTES_PER_FLOW = 82 + 78
# What the load counts (p4rcp-host traffic --load-unit; docs/experiments.md, "Load"): "slots" where the link is
# shaped in packets per second (bmv2: every frame takes a full data frame's time), "bytes" where it is shaped in
# bits (ns-3: every frame takes its own length). A run records its unit in run.json, "load_unit".
LOAD_UNITS = ("slots", "bytes")


def load_unit(meta: dict) -> str:
    """The unit of a run's load; runs recorded before it was recorded counted slots."""
    return meta.get("load_unit", "slots")


def data_packets(size_bytes: int, mss_bytes: int) -> int:
    return max(1, math.ceil(size_bytes / mss_bytes))


def service_bytes(size_bytes: int, mss_bytes: int, frame_bytes: int, unit: str) -> int:
    """What the flow's DATA packets cost the link, in bytes of link time: a full frame each, the last one
    included, on a link shaped in packets per second (unit "slots"); their own length, data and headers, on
    one shaped in bits ("bytes"). It is the L of FCT_PS, so that L / C is the time the link needs for the flow."""
    packets = data_packets(size_bytes, mss_bytes)
    if unit == "slots":
        return packets * frame_bytes
    if unit == "bytes":
        return size_bytes + packets * (frame_bytes - mss_bytes)
    raise ValueError(f"load unit must be one of {', '.join(LOAD_UNITS)}, got {unit!r}")


def measured_load(sizes: Iterable[int], mss_bytes: int, frame_bytes: int, capacity_bps: float, duration_s: float,
                  unit: str) -> float:
    """The load the flows that arrived offered the bottleneck: the link time of their frames (DATA, SYN,
    FIN), in `unit`, over the run's duration."""
    control = CONTROL_FRAMES_PER_FLOW * frame_bytes if unit == "slots" else CONTROL_BYTES_PER_FLOW
    total = sum(service_bytes(s, mss_bytes, frame_bytes, unit) + control for s in sizes)
    return total * 8 / (capacity_bps * duration_s)


def join_receiver_times(flows: Sequence[dict], received: Sequence[dict], ip_of: dict[str, str]) -> None:
    """Sets each sender's flow record's fct_recv_s: from its first SYN (sender's clock) to the arrival of its
    last byte at the receiver (receiver's clock, the same machine), the FCT of the RCP papers.

    Flows are matched on (sender address, flow id); flows[i]["host"] names the sender, ip_of its address. A flow
    the receiver never completed gets None."""
    last_byte = {(r["peer"].rsplit(":", 1)[0], r["flow_id"]): r.get("last_byte_unix_s") for r in received}
    for f in flows:
        t = last_byte.get((ip_of[f["host"]], f["flow_id"]))
        f["fct_recv_s"] = t - f["start_unix_s"] if t is not None else None


def max_min_shares(capacity: dict, paths: dict, weights: dict | None = None) -> dict:
    """Weighted max-min fair rates (water-filling): paths maps each flow to the links it crosses, capacity each
    link to its rate, weights each flow to its weight (1 where not given). Every link's remaining capacity is
    split among its unfrozen flows in proportion to their weights; the flows of the link with the smallest
    rate per unit of weight are frozen at it, and so on."""
    unknown = {link for links in paths.values() for link in links} - set(capacity)
    if unknown:
        raise ValueError(f"flows cross links with no capacity: {sorted(unknown)}")
    w = {f: (weights or {}).get(f, 1.0) for f in paths}
    share, left = {}, dict(capacity)
    active = {f for f, links in paths.items() if links}
    while active:
        per_weight = {link: left[link] / sum(w[f] for f in active if link in paths[f])
                      for link in left if any(link in paths[f] for f in active)}
        bottleneck = min(per_weight, key=per_weight.get)
        for f in [f for f in active if bottleneck in paths[f]]:
            share[f] = per_weight[bottleneck] * w[f]
            active.discard(f)
            for link in paths[f]:
                left[link] -= share[f]
    return share


@dataclass(frozen=True)
class Spread:
    """A figure over several seeds: mean, smallest, largest, how many."""
    mean: float
    lo: float
    hi: float
    n: int

    @classmethod
    def of(cls, values: Iterable[float]) -> "Spread | None":
        values = [v for v in values if v is not None]
        if not values:
            return None
        lo, hi = min(values), max(values)
        # fmean of equal values can round a hair outside them (0.1 three times: 0.10000000000000002)
        return cls(min(max(statistics.fmean(values), lo), hi), lo, hi, len(values))

    def format(self, spec: str) -> str:
        if self.n == 1 or format(self.lo, spec) == format(self.hi, spec):
            return format(self.mean, spec)
        return f"{self.mean:{spec}} ({self.lo:{spec}}-{self.hi:{spec}})"


def utilisation(records: Sequence[dict], bin_s: float = 1.0) -> float | None:
    """Share of one link's capacity its input used, from the control loop's records (time, y_bps, C_bps,
    period_s). Arrivals are summed over bins of bin_s before they are compared with C: within a 10 ms interval
    they are bursty, and the queue carries an overloaded interval's excess into the next, quieter ones. A bin
    counts as min(arrived / (C bin_s), 1): a link offered more than C is fully used, not more. Bins without
    traffic are left out (None: no traffic at all)."""
    arrived, capacity = {}, {}
    for r in records:
        k = math.floor(r["time"] / bin_s)
        arrived[k] = arrived.get(k, 0.0) + r["y_bps"] * r["period_s"]
        capacity[k] = capacity.get(k, 0.0) + r["C_bps"] * r["period_s"]
    busy = [min(arrived[k] / capacity[k], 1.0) for k in arrived if arrived[k] > 0 and capacity[k] > 0]
    return statistics.fmean(busy) if busy else None

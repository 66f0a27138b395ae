"""Numbers the experiments report, computed from the runs' records (pure functions)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence


def fct_ps(size_bytes: float, C_bps: float, rho: float, rtt_s: float) -> float:
    """Processor-sharing flow completion time: 1.5 RTT + L / (C (1 - rho))."""
    if not 0 <= rho < 1:
        raise ValueError(f"load rho must be in [0, 1), got {rho}")
    if C_bps <= 0:
        raise ValueError(f"capacity must be > 0, got {C_bps}")
    return 1.5 * rtt_s + size_bytes * 8 / (C_bps * (1 - rho))


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


def bin_fct(flows: Sequence[dict], edges: Sequence[float], C_bps: float, rho: float, rtt_s: float) -> list[dict]:
    """Per size bin [lo, hi): flows, mean / max FCT, mean FCT / FCT_PS (completed flows only).
    The last bin includes its upper edge."""
    rows = []
    for i, (lo, hi) in enumerate(zip(edges, edges[1:])):
        last = i == len(edges) - 2
        inside = [f for f in flows if lo <= f["size_bytes"] < hi or (last and f["size_bytes"] == hi)]
        if not inside:
            continue
        fcts = [f["fct_s"] for f in inside]
        ratios = [f["fct_s"] / fct_ps(f["size_bytes"], C_bps, rho, rtt_s) for f in inside]
        rows.append({"lo": lo, "hi": hi, "flows": len(inside), "mean_fct_s": statistics.fmean(fcts),
                     "max_fct_s": max(fcts), "mean_ratio_ps": statistics.fmean(ratios)})
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

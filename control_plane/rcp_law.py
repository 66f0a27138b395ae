"""The RCP router's laws (Dukkipati & McKeown), each one pure function with the papers' symbols."""


def rcp_rate(R_prev: float, T: float, d0: float, C: float, y: float, q: float, *,
             alpha: float, beta: float, gamma: float = 1.0, q0: float = 0.0, R_min: float) -> float:
    """R(t) = R(t-T) * [1 + (T/d0) * (alpha*(gamma*C - y) - beta*(q - q0)/d0) / (gamma*C)]

    clamped to [R_min, gamma*C].

    Rates (R_prev, C, y, R_min) share one unit, e.g. bit/s; q and q0 are
    amounts in that unit times seconds (bits); T and d0 are seconds.
    """
    if T <= 0 or d0 <= 0 or C <= 0:
        raise ValueError(f"rcp_rate needs T, d0, C > 0 (T={T}, d0={d0}, C={C})")
    target = gamma * C
    spare = alpha * (target - y) - beta * (q - q0) / d0
    R = R_prev * (1.0 + (T / d0) * spare / target)
    return min(max(R, R_min), target)


def d0_ewma(d0: float, rtt: float, *, gain: float) -> float:
    """The average RTT d0 as a moving average of each interval's mean RTT sample, one gain both ways."""
    return d0 + gain * (rtt - d0)


def d0_ns2(d0: float, rtt: float, *, T: float, R: float, C: float) -> float:
    """ns-2's rcp.cc: d0 rises towards a larger interval mean with gain T/d0 and falls towards a smaller one
    with gain (R/C) (rtt/d0) (T/d0), so that it stays near the larger RTTs of the flows sharing the link."""
    gain = T / d0 if rtt >= d0 else (R / C) * (rtt / d0) * (T / d0)
    return d0 + min(gain, 1.0) * (rtt - d0)

"""The RCP router's laws (Dukkipati & McKeown), each one pure function with the papers' symbols."""

import math


def rcp_rate(R_prev: float, T: float, d0: float, C: float, y: float, q: float, *,
             alpha: float, beta: float, gamma: float = 1.0, q0: float = 0.0, R_min: float, w_min: float = 1.0) -> float:
    """R(t) = R(t-T) * [1 + (T/d0) * (alpha*(gamma*C - y) - beta*(q - q0)/d0) / (gamma*C)]

    clamped to [R_min, gamma*C / w_min].

    Rates (R_prev, C, y, R_min) share one unit, e.g. bit/s; q and q0 are
    amounts in that unit times seconds (bits); T and d0 are seconds.

    With weighted sharing (the talk's "Proportional bandwidth-sharing in RCP") R is the rate of a flow of
    weight 1 and a flow of weight w is stamped w * R (stamp_rate). The law is unchanged: its estimate of
    the number of flows, gamma*C / R, becomes the sum of the active flows' weights. Only the clip moves:
    R may rise to gamma*C / w_min, so that flows of the smallest weight w_min alone still fill the link.
    """
    if T <= 0 or d0 <= 0 or C <= 0 or not 0 < w_min <= 1:
        raise ValueError(f"rcp_rate needs T, d0, C > 0 and 0 < w_min <= 1 (T={T}, d0={d0}, C={C}, w_min={w_min})")
    target = gamma * C
    spare = alpha * (target - y) - beta * (q - q0) / d0
    R = R_prev * (1.0 + (T / d0) * spare / target)
    return min(max(R, R_min), target / w_min)


def persistent_queue(q_reads) -> float:
    """q of the law: the smallest of the queue's last reads, one per interval, so a queue that lasted them all.

    A burst of arrivals builds a queue that drains by itself within an interval or two; the papers' q, the
    queue at the read, answers it as if the flows' rates had to drain it. Below full load the law stops
    drifting only when its mean q is (alpha / beta)(1 - rho) C d0, a few packets on a small
    bandwidth-delay product, where such bursts alone then hold R far below the flows' fair share. A
    standing queue lasts every read and is answered as before, a few intervals later."""
    return min(q_reads)


def rcp_overload_floor(R_heard: float, C: float, y: float, q: float, d0: float, *, gamma: float = 1.0) -> float:
    """The least R may fall to after an interval in which more than gamma*C arrived.

    The flows that sent y heard R_heard (R one round trip ago), so about N = y / R_heard of them share the
    link; R_heard (gamma*C - q/d0) / y is the rate at which they would fill it and drain the queue within
    d0. The law answers the same stale y in every interval of the round trip the senders take to hear it,
    which a load many times C (a link whose capacity just fell, a crowd of flows at an old R) turns into a
    fall to R's floor, from which it climbs back a few percent per interval. 0 when the queue alone needs
    more than d0 at C to drain, or when y is not above gamma*C."""
    if y <= gamma * C or R_heard <= 0:
        return 0.0
    return max(R_heard * (gamma * C - q / d0) / y, 0.0)


CLASSIC_DROP_P_MAX = 0.25
MATHIS_C = math.sqrt(1.5)


def classic_drop_probability(R: float, d0: float, s: float, *, c: float = MATHIS_C,
                             p_max: float = CLASSIC_DROP_P_MAX) -> float:
    """p = (c / W)^2, W = R d0 / s: the drop probability at which a TCP whose rate answers drops as
    rate = c (s / d0) / sqrt(p) sends at R. c = sqrt(3/2) is Reno's (and CUBIC's in its Reno-friendly region)
    in Mathis et al.'s model ("The macroscopic behavior of the TCP congestion avoidance algorithm", 1997);
    timeouts and delayed ACKs make a real TCP's smaller. The router drops classic (TCP)
    packets with p so that a TCP flow beside RCP's gets about RCP's R, as L4S's DualQ Coupled AQM (RFC 9332)
    couples its classic queue's drops to its scalable signal. R in bits/s, s the packet in bits, d0 seconds.

    At most p_max: below a window of about 2.4 packets (p 1/4) TCP lives on timeouts, which more drops would
    turn into starvation rather than a share."""
    if R <= 0 or d0 <= 0 or s <= 0:
        raise ValueError(f"classic_drop_probability needs R, d0, s > 0 (R={R}, d0={d0}, s={s})")
    W = R * d0 / s
    return min(p_max, (c / W) ** 2)


def stamp_rate(R: float, w: float, C: float, *, gamma: float = 1.0) -> float:
    """The rate stamped into a flow of weight w (0 < w <= 1): w * R, capped at gamma*C, so that a flow of a
    large weight gets at most the link even while R is above gamma*C for the small weights."""
    if not 0 < w <= 1:
        raise ValueError(f"a weight is in (0, 1], got {w}")
    return min(gamma * C, w * R)


def d0_ewma(d0: float, rtt: float, *, gain: float) -> float:
    """The average RTT d0 as a moving average of each interval's mean RTT sample, one gain both ways."""
    return d0 + gain * (rtt - d0)


def d0_ns2(d0: float, rtt: float, *, T: float, R: float, C: float) -> float:
    """ns-2's rcp.cc: d0 rises towards a larger interval mean with gain T/d0 and falls towards a smaller one
    with gain (R/C) (rtt/d0) (T/d0), so that it stays near the larger RTTs of the flows sharing the link."""
    gain = T / d0 if rtt >= d0 else (R / C) * (rtt / d0) * (T / d0)
    return d0 + min(gain, 1.0) * (rtt - d0)


def rcp_feedforward(R: float, R_prev: float, C: float, arrivals: float, departures: float, *,
                    gamma: float = 1.0, R_min: float, w_min: float = 1.0) -> float:
    """R after the flows that arrived and left in the last interval, without waiting for the law to see them.

    RCP's own estimate of the flows sharing the link is N = gamma*C / R(t-T) (the sum of their weights with
    weighted sharing); with a flows arriving and l leaving it becomes N + a - l, and R scales by N / (N + a - l),
    clamped as the law clamps it, to [R_min, gamma*C / w_min] (a link that emptied gets the top).

    a and l are weighted counts (rcp_flow_weight): a flow that sends its whole size within its first round
    trip never holds a share for long, so it counts for the part of a share it takes; where small flows come
    and go many times an RTT, counting each as a whole flow would swing R between its floor and C."""
    if R_prev <= 0 or C <= 0:
        raise ValueError(f"rcp_feedforward needs R_prev, C > 0 (R_prev={R_prev}, C={C})")
    N = gamma * C / R_prev
    flows = N + arrivals - departures
    if flows <= 0:
        return gamma * C / w_min
    return min(max(R * N / flows, R_min), gamma * C / w_min)


def rcp_grant_packets(S: float, d0: float, frame_bits: float) -> int:
    """P: the data frames a new flow sends in its first round trip d0 at its grant S, at least 1 and at most
    the 16-bit size field's largest value. A flow of `size` packets counts min(size, P) / P of a flow in
    the feedforward (rcp_flow_weight); the data plane adds min(size, P) per SYN and per ENDING packet, so
    that the control plane divides once per interval, never per packet."""
    if S <= 0 or d0 <= 0 or frame_bits <= 0:
        raise ValueError(f"rcp_grant_packets needs S, d0, frame_bits > 0 (S={S}, d0={d0}, frame_bits={frame_bits})")
    return int(min(max(S * d0 / frame_bits, 1), 0xFFFF))


def rcp_flow_weight(size: int, P: int) -> float:
    """How much of a flow a flow of `size` data packets is to the feedforward: min(size, P) / P (P from
    rcp_grant_packets). A flow that lasts a round trip or more at its grant is one flow."""
    if P < 1 or size < 0:
        raise ValueError(f"rcp_flow_weight needs P >= 1 and size >= 0 (P={P}, size={size})")
    return min(size, P) / P


def rcp_syn_rates(R: float, C: float, y: float, K: int, *, gamma: float = 1.0) -> list[float]:
    """The stamps S_1 .. S_K of the 1st .. K-th new flow (SYN) of an interval.

    The k-th new flow's fair share, F_k = R * min(1, gamma C / (y + k R)), is the rate at which k new flows fit
    what the link has left: R on an idle link, about gamma C / (N + k) on a full one. But the new flows before
    it keep their stamps until the law has seen them (the next interval, then an RTT), so the k-th gets what k
    fair shares leave after them, S_k = k F_k - (S_1 + ... + S_{k-1}), and at least F_k / k (never 0). So the
    interval's first k new flows take about k F_k together, and each S_k is at most F_k: on an idle link the
    stamps are C, C/4, C/9, ... (C / k^2: below 1.65 C however many), where the fair shares C, C/2, C/3, ...
    add up to twice C by the fourth SYN."""
    if K < 1:
        raise ValueError(f"rcp_syn_rates: K counts new flows from 1, got {K}")
    stamps: list[float] = []
    for k in range(1, K + 1):
        F_k = R * min(1.0, gamma * C / max(y + k * R, 1e-12))
        stamps.append(max(k * F_k - sum(stamps), F_k / k))
    return stamps


def rcp_window_syn_rates(R_w: float, C: float, y_w: float, m: int, K: int, *, gamma: float = 1.0) -> list[float]:
    """The stamps of the next K long flows (SYNs of flows that last more than half a round trip at their
    grant), when m long flows have joined since the window began, one average RTT ago, at rate R_w and
    input y_w.

    A flow that joined less than an RTT ago does not show in y yet: its sender has not sent a full RTT at
    its grant. So the sequence of rcp_syn_rates does not restart each interval (which would hand the first
    stamps out again every T, many times an RTT when T < d0): it runs on over the window, and the next
    flows take stamps m + 1 .. m + K of the sequence computed from the window's start."""
    if m < 0:
        raise ValueError(f"rcp_window_syn_rates: m counts flows, got {m}")
    return rcp_syn_rates(R_w, C, y_w, m + K, gamma=gamma)[m:]

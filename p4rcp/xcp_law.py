"""The XCP laws (Katabi, Handley, Rohrs, SIGCOMM 2002), each one pure function with the paper's symbols.

Units: bytes and seconds throughout (C and y in bytes/s, Q, s, cwnd, phi, h and feedback in bytes, d and rtt in
seconds). x = rtt * s / cwnd is the sender-computed term the congestion header carries (docs/xcp.md): the time
the packet's s bytes take at the flow's rate cwnd / rtt, so that a router sums and multiplies but never divides.
"""

import math
from typing import NamedTuple

ALPHA = 0.4
BETA = 0.226
GAMMA = 0.1


class XcpCoefficients(NamedTuple):
    """One control interval's outcome: the aggregate feedback phi, the shuffled traffic h (bytes) and the
    per-packet coefficients xi_p (bytes / s^2) and xi_n (1 / s)."""
    phi: float
    h: float
    xi_p: float
    xi_n: float

    @property
    def positive_total(self) -> float:
        """h + max(phi, 0): the window increase the interval's packets share, bytes. The coefficients spread it
        over the last interval's packets; the router hands out no more than this even when the next interval
        carries more of them (a flow's start), as ns-2's xcpq.cc caps it with residue_pos_fbk_."""
        return self.h + max(self.phi, 0.0)

    @property
    def negative_total(self) -> float:
        """h + max(-phi, 0): the window decrease the interval's packets share, bytes, capped the same way."""
        return self.h + max(-self.phi, 0.0)


def xcp_phi(d: float, C: float, y: float, Q: float, *, alpha: float = ALPHA, beta: float = BETA) -> float:
    """The efficiency controller's aggregate feedback phi = alpha d S - beta Q, S = C - y the spare bandwidth
    (negative when the input exceeds the link), Q the persistent queue."""
    return alpha * d * (C - y) - beta * Q


def xcp_shuffle(phi: float, d: float, y: float, *, gamma: float = GAMMA) -> float:
    """The fairness controller's shuffled traffic h = max(0, gamma y d - |phi|): the paper's 0.1 y, y counted
    over the interval (y d bytes), re-allocated every interval even at equilibrium so that flows converge."""
    return max(0.0, gamma * y * d - abs(phi))


def xcp_average_rtt(sum_rtt_x: float, sum_x: float) -> float:
    """The control interval d: the flows' average RTT, sum(rtt_i x_i) / sum(x_i) over the interval's packets.
    A flow's x add up to about the interval length whatever its rate, so each flow counts once, not once per
    packet (ns-2's xcpq.cc: sum rtt^2/cwnd over sum rtt/cwnd)."""
    if sum_x <= 0:
        raise ValueError(f"xcp_average_rtt needs packets with a positive x = rtt s / cwnd (sum_x={sum_x})")
    return sum_rtt_x / sum_x


def xcp_coefficients(d: float, C: float, y: float, Q: float, sum_x: float, sum_s: float, *,
                     alpha: float = ALPHA, beta: float = BETA, gamma: float = GAMMA) -> XcpCoefficients:
    """phi and h of the interval, and

        xi_p = (h + max(phi, 0)) / (d * sum(rtt_i s_i / cwnd_i)),   xi_n = (h + max(-phi, 0)) / (d * sum(s_i))

    over the interval's packets (sum_x = sum(x_i), sum_s = sum(s_i)). An interval without packets gives no
    coefficient (0): there is nobody to give feedback to."""
    if d <= 0 or C <= 0 or y < 0 or Q < 0 or sum_x < 0 or sum_s < 0:
        raise ValueError(f"xcp_coefficients needs d, C > 0 and y, Q, sum_x, sum_s >= 0 "
                         f"(d={d}, C={C}, y={y}, Q={Q}, sum_x={sum_x}, sum_s={sum_s})")
    phi = xcp_phi(d, C, y, Q, alpha=alpha, beta=beta)
    h = xcp_shuffle(phi, d, y, gamma=gamma)
    xi_p = (h + max(phi, 0.0)) / (d * sum_x) if sum_x > 0 else 0.0
    xi_n = (h + max(-phi, 0.0)) / (d * sum_s) if sum_s > 0 else 0.0
    return XcpCoefficients(phi, h, xi_p, xi_n)


def xcp_packet_feedback(xi_p: float, xi_n: float, rtt: float, x: float, s: float,
                        positive_left: float = math.inf, negative_left: float = math.inf) -> tuple[float, float]:
    """A packet's own positive and negative feedback (p_i, n_i); the router's feedback is p_i - n_i.
    p_i = xi_p rtt_i^2 s_i / cwnd_i = xi_p rtt_i x_i (equal window increase per flow), n_i = xi_n rtt_i s_i (a
    decrease in proportion to the flow's rate), each at most what is left of the interval's positive_total and
    negative_total; the caller takes what it hands out from what is left."""
    return min(xi_p * rtt * x, positive_left), min(xi_n * rtt * s, negative_left)


def xcp_header_feedback(H_feedback: float, p_minus_n: float) -> float:
    """A router lowers the header's feedback to its own: H_feedback = min(H_feedback, p_i - n_i), so that the
    sender hears the most congested router on the path."""
    return min(H_feedback, p_minus_n)


def xcp_charged_feedback(p_i: float, n_i: float, H_feedback: float, negative_left: float) -> tuple[float, float]:
    """What a packet takes from what is left of the interval's positive and negative totals, given the header's
    feedback H_feedback as it reaches the router. When the router's p_i - n_i becomes the header's, p_i and n_i.
    When another router on the path gave less (H_feedback < p_i - n_i), the packet gets H_feedback: the router
    charges the difference as negative feedback, at most what is left, and as positive what the packet then
    gets, H_feedback + n (ns-2's xcpq.cc, "L 27-33 corrected"), so that what an interval hands out to flows
    this router does not limit stays in its totals for the others. The positive charge is at least 0 (ns-2
    would give it back to the total)."""
    if H_feedback >= p_i - n_i:
        return p_i, n_i
    n = min(negative_left, p_i - H_feedback)
    return max(H_feedback + n, 0), n


def xcp_desired_feedback(r: float, rtt: float, cwnd: float, s: float) -> float:
    """The sender's request in a packet's H_feedback: its desired window change (r rtt - cwnd) for a desired rate
    r, spread over the cwnd / s packets of a window."""
    if cwnd <= 0 or s <= 0:
        raise ValueError(f"xcp_desired_feedback needs cwnd, s > 0 (cwnd={cwnd}, s={s})")
    return (r * rtt - cwnd) * s / cwnd


def xcp_cwnd(cwnd: float, H_feedback: float, s: float) -> float:
    """The sender on each ACK: cwnd = max(cwnd + H_feedback, s), never below one packet."""
    return max(cwnd + H_feedback, s)

"""The RCP router's parameters (gains, d0 estimator, interval, weights, policing, feedforward), validated.

Experiment files set them ([rcp], [scheme.NAME] rcp; topo/experiment.py) and the control loop runs with them
(control_plane/loop.py); docs/control_plane.md says what each does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from p4rcp import dataplane as dp
from p4rcp.protocol import RCP_MIN_RATE_KBPS
from p4rcp.rcp_law import d0_ewma, d0_ns2
from p4rcp.topology import DEFAULT_DATA_FRAME_BYTES


@dataclass(frozen=True)
class RcpParams:
    # The ns-2 RCP router's gains. The papers' 0.1 / 1.0 weigh the queue 10x more than spare capacity,
    # which on this emulation's small BDPs leaves more of the link idle (docs/design.md, "Per interval: the law").
    alpha: float = 0.4
    beta: float = 0.4
    gamma: float = 1.0
    q0_bytes: float = 0.0
    R_min_bps: float = RCP_MIN_RATE_KBPS * 1000.0    # the protocol's floor: senders send no slower
    R_init_fraction: float = 0.05     # of C, as the ns-2 router starts
    d0_init_s: float = 0.1            # until the first RTT samples arrive
    # How each interval's mean RTT moves d0: "ewma" with d0_gain both ways, or "ns2" (rcp.cc: up with gain
    # T/d0, down much more slowly; docs/design.md, "Where p4rcp follows ns-2's RCP").
    d0_estimator: str = "ewma"
    d0_gain: float = 0.1              # ewma: weight of a new interval's mean RTT in d0
    T_max_s: float = 0.010            # T = min(T_max, d0), per port
    # q of the law is the smallest queue of the last queue_reads reads, one per interval: a queue that lasted
    # that long, 100 ms at T = 10 ms, CoDel's interval for a standing queue (docs/design.md, "Per interval:
    # the law"); 1 is the papers' q, the queue at the read.
    queue_reads: int = 10
    # After an interval in which more than gamma C arrived, R falls no lower than the rate at which the flows
    # that sent it would fill the link and drain the queue (docs/design.md, "Per interval: the law").
    overload_floor: bool = True
    # The loop's first update comes Normal(T, first_jitter T) after its start, as ns-2 randomises each queue's
    # first timer, so that the switches of a path do not update in step.
    first_jitter: float = 0.2
    # The data frame: a packet in the queue depth where the target counts packets (Driver.queue_unit_bytes
    # None: bmv2), and policing's frame; docs/control_plane.md.
    queue_packet_bytes: int = DEFAULT_DATA_FRAME_BYTES
    # Weighted sharing (docs/design.md, "Weights"): DSCP -> weight in (0, 1]; a DSCP without one has weight 1.
    # Keys may be strings (TOML tables: [rcp.dscp_weights] "10" = 0.5). At most 7 weights other than 1.
    dscp_weights: Mapping = field(default_factory=dict, hash=False)
    # Policing (docs/design.md, "Policing"): each flow's bytes per epoch against the largest stamp of the
    # last epoch + d0, with this margin, plus police_slack_s of it and police_burst_packets data frames.
    police: bool = False
    police_margin: float = 0.02
    police_slack_s: float = 0.010     # the hosts catch a late timer up by up to 10 ms of their rate
    police_burst_packets: float = 2.0
    # The flow-count feedforward (docs/design.md, "Sudden load"): R scaled by N / (N + a - l) every
    # interval, a and l the flows that arrived and are ending, each weighed by the share of a round trip
    # it lasts; a long flow's SYN stamped with the rate that fits it, a short flow's with the first share.
    feedforward: bool = True
    # Beside TCP (docs/design.md, "Beside TCP"): every interval the router drops TCP packets with the
    # probability at which a TCP flow sends at R (rcp_law.classic_drop_probability), so that TCP's standing
    # queue does not hold R at its floor and each class gets its share.
    tcp_coupling: bool = True
    # c of TCP's response, rate = c (s / d0) / sqrt(p), that the drop probability assumes: Mathis's sqrt(3/2)
    # less what timeouts and delayed ACKs take (calibrated on experiment tcp-mix-reno; docs/design.md).
    tcp_response: float = 0.7

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            if f.type in ("float", "int") and not (number and (f.type == "float" or isinstance(value, int))):
                raise ValueError(f"RCP parameter {f.name} must be {'an integer' if f.type == 'int' else 'a number'}, "
                                 f"got {value!r}")
        for name in ("alpha", "beta", "gamma", "tcp_response", "R_min_bps", "R_init_fraction", "d0_init_s", "d0_gain",
                     "T_max_s", "queue_packet_bytes"):
            if not getattr(self, name) > 0:
                raise ValueError(f"RCP parameter {name} must be > 0, got {getattr(self, name)}")
        if self.queue_reads < 1:
            raise ValueError(f"RCP parameter queue_reads must be >= 1, got {self.queue_reads}")
        if self.q0_bytes < 0 or self.d0_gain > 1 or self.R_init_fraction > 1 or not 0 <= self.first_jitter < 1:
            raise ValueError("RCP parameters need q0_bytes >= 0, d0_gain <= 1, R_init_fraction <= 1, "
                             "0 <= first_jitter < 1")
        if self.d0_estimator not in D0_ESTIMATORS:
            raise ValueError(f"d0_estimator must be one of {', '.join(D0_ESTIMATORS)}, got {self.d0_estimator!r}")
        for name in ("feedforward", "overload_floor", "tcp_coupling"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"RCP parameter {name} must be true or false, got {getattr(self, name)!r}")
        if not isinstance(self.police, bool) or self.police_margin < 0 or self.police_slack_s < 0 \
                or self.police_burst_packets < 0:
            raise ValueError("RCP parameters need police true or false, police_margin, police_slack_s and "
                             "police_burst_packets >= 0")
        object.__setattr__(self, "dscp_weights", _dscp_weights(self.dscp_weights))
        self.weight_classes()           # at most 7 weights other than 1

    def weight_classes(self) -> tuple[dict[int, int], tuple[float, ...]]:
        """The data plane's classes: DSCP -> class, and each class's weight. Class 0 is weight 1 (and every
        DSCP without a weight); the other weights, largest first, are classes 1, 2, ..."""
        others = sorted({w for w in self.dscp_weights.values() if w != 1.0}, reverse=True)
        if len(others) >= dp.NUM_WEIGHT_CLASSES:
            raise ValueError(f"dscp_weights: at most {dp.NUM_WEIGHT_CLASSES - 1} weights other than 1, "
                             f"got {len(others)}")
        weights = (1.0, *others)
        return {d: weights.index(w) for d, w in sorted(self.dscp_weights.items()) if w != 1.0}, weights

    def next_d0(self, d0: float, rtt: float, T: float, R: float, C: float) -> float:
        """d0 after an interval whose RTT samples averaged `rtt`."""
        if self.d0_estimator == "ns2":
            return d0_ns2(d0, rtt, T=T, R=R, C=C)
        return d0_ewma(d0, rtt, gain=self.d0_gain)


D0_ESTIMATORS = ("ewma", "ns2")


def _dscp_weights(mapping) -> dict[int, float]:
    """DSCP -> weight with integer keys (TOML's are strings), each checked."""
    if not isinstance(mapping, Mapping):
        raise ValueError(f"dscp_weights must map DSCP values to weights, got {mapping!r}")
    out = {}
    for key, weight in mapping.items():
        try:
            dscp = int(key)
        except (TypeError, ValueError):
            raise ValueError(f"dscp_weights: {key!r} is not a DSCP value (0-63)") from None
        if not 0 <= dscp < dp.NUM_DSCP or str(dscp) != str(key).strip():
            raise ValueError(f"dscp_weights: {key!r} is not a DSCP value (0-63)")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight <= 1:
            raise ValueError(f"dscp_weights: the weight of DSCP {dscp} must be in (0, 1], got {weight!r}")
        out[dscp] = float(weight)
    return out

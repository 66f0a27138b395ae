"""Names the P4 program exposes to control planes (p4src/targets/v1model).

The P4 source gives these objects top-level @name annotations so that the
names are identical on every target; p4rcp/tests/test_dataplane_names.py
checks them against the compiled program.
"""

import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import NamedTuple

# The three additions. Pure counts are counter externs (bmv2 counts them in
# C++, one operation per packet); the RTT sum adds a packet field, which only
# a register can.
COUNTER_INPUT = "rcp_input"              # packets and bytes routed to port p, counted on arrival
COUNTER_RTT_COUNT = "rcp_rtt_count"      # packets that carried a valid RTT sample
COUNTER_POLICED = "rcp_policed"          # packets and bytes to port p that policing dropped (counted in rcp_input too)
# The coupled drop of classic (TCP) packets (docs/design.md, "Beside TCP"): per port, a TCP packet routed there
# is dropped when a 32-bit random draw is below the cell (CLASSIC_DROP_NONE, the reset value: never), before
# rcp_input counts it; rcp_classic_dropped counts what it took.
REG_CLASSIC_DROP = "rcp_classic_drop"
COUNTER_CLASSIC_DROPPED = "rcp_classic_dropped"
CLASSIC_DROP_NONE = 0
CLASSIC_DROP_MAX = (1 << 32) - 1
REG_RTT_SUM = "rcp_rtt_sum"              # sum of those samples, us
REG_QUEUE_DEPTH = "rcp_queue_depth"      # the queue the last packet to leave p left behind (QUEUE_UNIT_BYTES)
# The feedforward (docs/design.md, "Sudden load"), per port. Read each interval: the SYNs of long flows
# (a register the data plane also reads to rank them), and the committed sizes: min(size, P) added per SYN
# and per DATA flagged ENDING. Written each interval: the long-SYN count the interval starts from, the stamp
# of its k-th long SYN rcp_syn_rate[syn_cell(p, k)], the short SYNs' stamp, P and the long threshold
# (RATE_NONE: no cap), the stamps encoded as REG_RATE's (stamp_cell_value).
REG_LONG_ARRIVALS = "rcp_long_arrivals"
REG_COMMITTED_ARRIVALS = "rcp_committed_arrivals"
REG_COMMITTED_DEPARTURES = "rcp_committed_departures"
RCP_COUNTERS = (COUNTER_INPUT, COUNTER_RTT_COUNT, COUNTER_POLICED)
RCP_REGISTERS_READ = (REG_RTT_SUM, REG_QUEUE_DEPTH, REG_LONG_ARRIVALS, REG_COMMITTED_ARRIVALS,
                      REG_COMMITTED_DEPARTURES)
ARRIVALS_BITS = 32         # the three registers above
REG_ARRIVALS_BASE = "rcp_arrivals_base"
REG_SYN_RATE = "rcp_syn_rate"
REG_SHORT_RATE = "rcp_short_rate"
REG_GRANT_PACKETS = "rcp_grant_packets"
REG_LONG_PACKETS = "rcp_long_packets"
SYN_RATE_BITS = 3
SYN_RATES = 1 << SYN_RATE_BITS
SIZE_BITS = 16             # the RCP header's size field, and P and the long threshold
SIZE_MAX_PACKETS = (1 << SIZE_BITS) - 1
COUNTER_BITS = 64          # counter externs: 64-bit on bmv2 and in P4Runtime's CounterData
RTT_SUM_BITS = 32          # the RTT-sum register on every target; deltas are taken modulo 2^32
NUM_PORTS = 512
DROP_PORT = 511            # v1model's egress_spec after mark_to_drop

COUNTER_INGRESS_PACKETS = "ingress_packets"   # counter extern, packets per ingress port (not RCP)

TABLE_ROUTING_V4 = "routing_v4"
MATCH_IPV4_DST = "ipv4_dst"              # its LPM key
ACTION_SET_NEXT_HOP = "set_next_hop_routing_v4"
ACTION_DROP = "drop_routing_v4"

# Weighted sharing (docs/design.md, "Weights"). Every (port, weight class) has a cell in the registers
# below; the control plane writes the stamp of class k on port p, min(gamma C, w_k R[p]), into cell
# rate_cell(p, k) of REG_RATE (RATE_NONE: RCP off there; stamp_cell_value encodes it). Class 0 is weight 1.
WEIGHT_CLASS_BITS = 3
NUM_WEIGHT_CLASSES = 1 << WEIGHT_CLASS_BITS
NUM_DSCP = 64
REG_RATE = "rcp_rate"                    # a stamp per cell (stamp_cell_value), written by the control plane
# A stamp that caps nothing (RCP_RATE_NONE in p4src/shared/defines.p4), in REG_RATE and REG_SYN_RATE: every
# target stamps an unsigned minimum.
RATE_NONE = 0xFFFFFFFF
RATE_BITS = 32


def stamp_cell_value(kbps: int) -> int:
    """What a cell of REG_RATE or REG_SYN_RATE holds for a stamp of `kbps`: its complement, RATE_NONE - kbps.

    A register's reset value, 0, then reads as RATE_NONE: a switch no control plane has written yet (just
    started or restarted, or started by another tool) stamps no rate, on every target (bmv2's and SUME's
    registers start at 0, as do Tofino's without an initial value). The data plane takes the complement of
    the cell per packet, a bitwise NOT (docs/reliability.md, "A switch no controller has written stamps
    nothing")."""
    if isinstance(kbps, bool) or not isinstance(kbps, int) or not 0 <= kbps <= RATE_NONE:
        raise ValueError(f"a stamp is a 32-bit rate in kb/s, got {kbps!r}")
    return RATE_NONE ^ kbps


def stamp_of_cell(value: int) -> int:
    """The stamp (kb/s; RATE_NONE: none) a cell of REG_RATE or REG_SYN_RATE holds: the inverse of
    stamp_cell_value. Register reads may come back signed (bmv2's Thrift values are i64)."""
    return RATE_NONE ^ (value % (1 << RATE_BITS))
# The operator's DSCP -> class mapping, installed for every RCP port: key (output port, DSCP), action
# parameter the cell; a miss (a port without RCP) reads the never-written cell of the drop port.
TABLE_WEIGHT_CLASSIFIER = "weight_classifier"
MATCH_PORT = "port"
MATCH_DSCP = "dscp"
ACTION_SET_CELL = "set_cell_weight_classifier"


def rate_cell(port: int, weight_class: int = 0) -> int:
    """The register cell of (port, weight class) in REG_RATE and the policing registers."""
    if not 0 <= weight_class < NUM_WEIGHT_CLASSES or not 0 <= port < NUM_PORTS:
        raise ValueError(f"no cell for port {port}, weight class {weight_class}")
    return port << WEIGHT_CLASS_BITS | weight_class


RATE_CELLS = NUM_PORTS << WEIGHT_CLASS_BITS


def syn_cell(port: int, k: int) -> int:
    """The cell of REG_SYN_RATE for the k-th SYN (k = 1 .. SYN_RATES) of an interval on port."""
    if not 1 <= k <= SYN_RATES or not 0 <= port < NUM_PORTS:
        raise ValueError(f"no SYN-rate cell for port {port}, SYN {k}")
    return port << SYN_RATE_BITS | (k - 1)
UNCLASSIFIED_CELL = rate_cell(DROP_PORT)

# Policing (docs/design.md, "Policing"): per cell, the bytes a flow may send per epoch (its bucket
# leaks them) and the bucket's limit; a limit of 0 turns policing off there. v1model holds both in one
# 64-bit register (bmv2 charges each packet per register read); TNA and SUME, whose register actions return
# one 32-bit value, in two. Two rows of sketch cells, (epoch << 32) | bytes, which only the data plane writes.
REG_POLICE = "rcp_police"
REG_POLICE_BYTES = "rcp_police_bytes"
REG_POLICE_LIMIT = "rcp_police_limit"
REG_POLICE_ROWS = ("rcp_police_row0", "rcp_police_row1")
POLICE_CELLS = 1 << 16


def police_cell_value(allowance: int, limit: int) -> int:
    """A cell of REG_POLICE: allowance << 32 | limit, each a 32-bit byte count."""
    if not (0 <= allowance < 1 << 32 and 0 <= limit < 1 << 32):
        raise ValueError(f"policing allowance and limit are 32-bit byte counts (allowance={allowance}, limit={limit})")
    return allowance << 32 | limit


# What a program may leave out (the profiles of p4src/shared/profiles.p4), each known by an entity
# of the program: the control plane writes and reads only what the program has, and refuses a setting that
# needs what it lacks.
FEATURE_WEIGHTS = "weights"              # weight_classifier: a DSCP's class picks the stamp
FEATURE_POLICING = "policing"            # the policing cells and rcp_policed
FEATURE_FEEDFORWARD = "feedforward"      # the SYN stamps and the counts of SYNs and committed sizes
FEATURE_CLASSIC_DROP = "classic_drop"    # TCP's coupled drop
ALL_FEATURES = frozenset({FEATURE_WEIGHTS, FEATURE_POLICING, FEATURE_FEEDFORWARD, FEATURE_CLASSIC_DROP})
# The entities each feature brings; the other RCP names are in every program.
FEATURE_COUNTERS = {FEATURE_POLICING: (COUNTER_POLICED,)}
FEATURE_REGISTERS = {FEATURE_FEEDFORWARD: (REG_LONG_ARRIVALS, REG_COMMITTED_ARRIVALS, REG_COMMITTED_DEPARTURES)}
# The TNA and SUME programs' profiles, in the order of p4src/shared/profiles.p4 (a test keeps the two in step),
# and the features each turns on.
PROFILE_FEATURES = {
    "core": frozenset(),
    "weights": frozenset({FEATURE_WEIGHTS}),
    "policing": frozenset({FEATURE_POLICING}),
    "feedforward": frozenset({FEATURE_FEEDFORWARD}),
    "full": frozenset({FEATURE_WEIGHTS, FEATURE_POLICING, FEATURE_FEEDFORWARD}),
}


def profiles_with(features: Collection[str]) -> list[str]:
    """The profiles that have all these features, smallest first."""
    return [name for name, has in PROFILE_FEATURES.items() if has >= set(features)]


def program_features(tables: Collection[str], registers: Collection[str]) -> frozenset[str]:
    """The features of a program that has these tables and registers (its P4Info's names)."""
    found = {FEATURE_WEIGHTS: TABLE_WEIGHT_CLASSIFIER in tables,
             FEATURE_POLICING: REG_POLICE in registers or REG_POLICE_BYTES in registers,
             FEATURE_FEEDFORWARD: REG_SYN_RATE in registers,
             FEATURE_CLASSIC_DROP: REG_CLASSIC_DROP in registers}
    return frozenset(f for f, has in found.items() if has)


def _present(names: tuple[str, ...], brought_by: dict[str, tuple[str, ...]],
             features: Collection[str]) -> tuple[str, ...]:
    """Those of names that no feature missing from `features` brings."""
    return tuple(n for n in names if not any(n in brought and f not in features for f, brought in brought_by.items()))


def counters_read(features: Collection[str]) -> tuple[str, ...]:
    """The RCP counters a program with these features has, of those read each interval."""
    return _present(RCP_COUNTERS, FEATURE_COUNTERS, features)


def registers_read(features: Collection[str]) -> tuple[str, ...]:
    """The RCP registers a program with these features has, of those read each interval."""
    return _present(RCP_REGISTERS_READ, FEATURE_REGISTERS, features)


# The targets: v1model (bmv2), tna (Tofino 1), t2na (Tofino 2, the same TNA program), sume.
TARGETS = ("v1model", "tna", "t2na", "sume")
# The epoch is a power of two of each target's own clock: ingress_global_timestamp >> 14 (us) on v1model,
# global_tstamp >> 24 (ns) on Tofino, SUME's 200 MHz timestamp >> 22.
POLICE_EPOCH_S = {"v1model": (1 << 14) * 1e-6, "tna": (1 << 24) * 1e-9, "t2na": (1 << 24) * 1e-9,
                  "sume": (1 << 22) * 5e-9}
# Bytes of one unit of REG_QUEUE_DEPTH. bmv2 counts packets (None: the control loop counts a data frame);
# Tofino's traffic manager counts cells of 80 bytes (Tofino 1) and 176 bytes (Tofino 2), the cell sizes of
# Intel's driver (open-p4studio, bf-drivers/src/traffic_mgr/init/tm_tofino.h BF_TM_TOFINO_CELL_SIZE and
# tm_tof2.h BF_TM_TOF2_CELL_SIZE; neither p4c nor tna.p4/t2na.p4 states them); SUME 32-byte words.
QUEUE_UNIT_BYTES = {"v1model": None, "tna": 80, "t2na": 176, "sume": 32}


@dataclass(frozen=True)
class SynGrants:
    """What a port's SYNs are stamped with and how their sizes count, written each interval.

    A SYN whose size is above `long_packets` is a long flow's: the k-th since the long-arrivals count was
    `base` is stamped at most long_kbps[k - 1] (the last for every later one). Any other SYN is stamped at
    most `short_kbps`. Every SYN and ENDING packet adds min(size, grant_packets) to the port's committed
    counts. RATE_NONE caps nothing."""
    base: int
    long_kbps: tuple[int, ...]
    short_kbps: int
    grant_packets: int
    long_packets: int

    def cells(self, port: int) -> list[tuple[str, int, int]]:
        """The register cells (register, index, value) that hold these grants for `port`, the stamps encoded as
        the data plane holds them (stamp_cell_value)."""
        return ([(REG_ARRIVALS_BASE, port, self.base)]
                + [(REG_SYN_RATE, syn_cell(port, k), stamp_cell_value(kbps))
                   for k, kbps in enumerate(self.long_kbps, start=1)]
                + [(REG_SHORT_RATE, port, stamp_cell_value(self.short_kbps)),
                   (REG_GRANT_PACKETS, port, self.grant_packets),
                   (REG_LONG_PACKETS, port, self.long_packets)])

    @classmethod
    def at_reset(cls) -> "SynGrants":
        """What a port's cells mean before any control plane wrote them: no SYN capped (the stamps' reset value
        is RATE_NONE), P = 0 (no size counted) and a threshold of 0 (every SYN of a size above 0 long)."""
        return cls(0, (RATE_NONE,) * SYN_RATES, RATE_NONE, 0, 0)

    @classmethod
    def none(cls) -> "SynGrants":
        """No cap on any SYN, and every flow counted as a whole flow of the largest size."""
        return cls(0, (RATE_NONE,) * SYN_RATES, RATE_NONE, SIZE_MAX_PACKETS, SIZE_MAX_PACKETS // 2)


# The XCP router (p4src/targets/v1model/xcp.p4; docs/xcp.md). Per port: monotonic 64-bit sums of the forward XCP
# packets that left with a valid RTT and x > 0 (deltas modulo 2^64), in the header's units: x in ns, rtt x in
# us ns, s in frame bytes; y is COUNTER_INPUT's bytes. The smallest queue a departure left behind (packets, as
# REG_QUEUE_DEPTH), which the control plane reads and restarts with XCP_MIN_QUEUE_NONE.
REG_XCP_SUM_X = "xcp_sum_x"
REG_XCP_SUM_RTT_X = "xcp_sum_rtt_x"
REG_XCP_SUM_S = "xcp_sum_s"
XCP_SUMS = (REG_XCP_SUM_X, REG_XCP_SUM_RTT_X, REG_XCP_SUM_S)
XCP_SUM_BITS = 64
REG_XCP_MIN_QUEUE = "xcp_min_queue"
XCP_QUEUE_BITS = 19                       # deq_qdepth's width
XCP_MIN_QUEUE_NONE = (1 << XCP_QUEUE_BITS) - 1
# xi_p and xi_n, written by the control plane: fixed point with XCP_XI_SHIFT fraction bits in the data plane's
# units (xi_p in bytes per us ns, xi_n per us), so that a packet's feedback is one signed shift of
# xi_p rtt_us x_ns - xi_n rtt_us s. A cell holds at most XCP_XI_MAX (bmv2's Thrift values are signed 64-bit).
REG_XCP_XI_P = "xcp_xi_p"
REG_XCP_XI_N = "xcp_xi_n"
# What is left of the interval's positive_total and negative_total (p4rcp/xcp_law.py), whole bytes: written with
# the coefficients, lowered by each packet's p_i and n_i, so that a packet stream larger than the last interval's
# (a flow's start) gets no more than the interval's totals.
REG_XCP_POSITIVE_LEFT = "xcp_positive_left"
REG_XCP_NEGATIVE_LEFT = "xcp_negative_left"
XCP_LEFT_MAX = (1 << 63) - 1
# 1 on the ports XCP's loop controls, written with the coefficients; 0 (a switch no loop has written, RCP's ports,
# the hosts' ports): XCP packets pass untouched, as through a port without an XCP router.
REG_XCP_ON = "xcp_on"
XCP_XI_BITS = 64
XCP_XI_SHIFT = 64                         # XCP_XI_SHIFT in p4src/shared/defines.p4
XCP_XI_MAX = (1 << 63) - 1
XCP_XI_P_UNIT = 1e-15                     # s^2 per (us ns): xi_p [bytes/s^2] x this = bytes per (us ns)
XCP_XI_N_UNIT = 1e-6                      # s per us: xi_n [1/s] x this = per us
XCP_FEEDBACK_MIN = -(1 << 31)             # H_feedback is an i32


def _xi_cell(value: float, unit: float, what: str) -> int:
    if not value >= 0:
        raise ValueError(f"{what} is >= 0, got {value!r}")
    return min(round(value * unit * (1 << XCP_XI_SHIFT)), XCP_XI_MAX)


def xcp_xi_p_cell(xi_p: float) -> int:
    """The cell of REG_XCP_XI_P for xi_p (bytes / s^2), saturating at XCP_XI_MAX (xi_p of about 5e14)."""
    return _xi_cell(xi_p, XCP_XI_P_UNIT, "xi_p")


def xcp_xi_n_cell(xi_n: float) -> int:
    """The cell of REG_XCP_XI_N for xi_n (1 / s), saturating at XCP_XI_MAX (xi_n of about 5e5)."""
    return _xi_cell(xi_n, XCP_XI_N_UNIT, "xi_n")


def xcp_xi_p_of_cell(cell: int) -> float:
    return cell / (1 << XCP_XI_SHIFT) / XCP_XI_P_UNIT


def xcp_xi_n_of_cell(cell: int) -> float:
    return cell / (1 << XCP_XI_SHIFT) / XCP_XI_N_UNIT


class XcpControl(NamedTuple):
    """What the control plane writes to an XCP port each interval: the coefficient cells and the interval's
    totals in whole bytes."""
    xi_p: int
    xi_n: int
    positive_left: int
    negative_left: int

    @classmethod
    def of(cls, xi_p: float, xi_n: float, positive_total: float, negative_total: float) -> "XcpControl":
        if not (positive_total >= 0 and negative_total >= 0):
            raise ValueError(f"the interval's feedback totals are >= 0, got {positive_total!r}, {negative_total!r}")
        return cls(xcp_xi_p_cell(xi_p), xcp_xi_n_cell(xi_n), min(math.floor(positive_total), XCP_LEFT_MAX),
                   min(math.floor(negative_total), XCP_LEFT_MAX))


def xcp_router_feedback(xi_p_cell: int, xi_n_cell: int, rtt_us: int, x_ns: int, s_bytes: int,
                        positive_left: int = XCP_LEFT_MAX, negative_left: int = XCP_LEFT_MAX) -> tuple[int, int]:
    """What the data plane computes for a packet: (p_i, n_i) in whole bytes from the cells, p_i = xi_p rtt x
    rounded down and n_i = xi_n rtt s rounded up (the router errs towards less feedback), each at most what is
    left; the router's feedback p_i - n_i then meets H_feedback and the i32 floor."""
    p = (xi_p_cell * rtt_us * x_ns) >> XCP_XI_SHIFT
    n = -((-xi_n_cell * rtt_us * s_bytes) >> XCP_XI_SHIFT)
    return min(p, positive_left), min(n, negative_left)


def classic_drop_cell(p: float) -> int:
    """The REG_CLASSIC_DROP cell for drop probability p: round(p 2^32), at most CLASSIC_DROP_MAX."""
    if not 0 <= p <= 1:
        raise ValueError(f"a drop probability is in [0, 1], got {p!r}")
    return min(round(p * (1 << 32)), CLASSIC_DROP_MAX)

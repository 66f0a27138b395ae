"""Names the P4 program exposes to control planes (p4src/targets/v1model).

The P4 source gives these objects top-level @name annotations so that the
names are identical on every target; p4rcp/tests/test_dataplane_names.py
checks them against the compiled program.
"""

# The three additions. Pure counts are counter externs (bmv2 counts them in
# C++, one operation per packet); the RTT sum adds a packet field, which only
# a register can.
COUNTER_INPUT = "rcp_input"              # packets and bytes routed to port p, counted on arrival
COUNTER_RTT_COUNT = "rcp_rtt_count"      # packets that carried a valid RTT sample
COUNTER_POLICED = "rcp_policed"          # packets and bytes to port p that policing dropped (counted in rcp_input too)
REG_RTT_SUM = "rcp_rtt_sum"              # sum of those samples, us
REG_QUEUE_DEPTH = "rcp_queue_depth"      # the queue the last packet to leave p left behind (QUEUE_UNIT_BYTES)
# The flow-count feedforward (docs/design.md, "Sudden load"): flows arriving (SYNs, a register the
# data plane also reads to number the SYNs of an interval) and leaving (DATA flagged LAST) per port.
REG_ARRIVALS = "rcp_arrivals"
COUNTER_DEPARTURES = "rcp_departures"
RCP_COUNTERS = (COUNTER_INPUT, COUNTER_RTT_COUNT, COUNTER_POLICED, COUNTER_DEPARTURES)
RCP_REGISTERS_READ = (REG_RTT_SUM, REG_QUEUE_DEPTH, REG_ARRIVALS)
ARRIVALS_BITS = 32
# Written each interval: rcp_arrivals_base[p] (the arrivals at its start) and rcp_syn_rate[syn_cell(p, k)],
# the stamp of the k-th SYN of the interval (RATE_NONE: no cap).
REG_ARRIVALS_BASE = "rcp_arrivals_base"
REG_SYN_RATE = "rcp_syn_rate"
SYN_RATE_BITS = 3
SYN_RATES = 1 << SYN_RATE_BITS
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
# rate_cell(p, k) of REG_RATE (RATE_NONE: RCP off there). Class 0 is weight 1.
WEIGHT_CLASS_BITS = 3
NUM_WEIGHT_CLASSES = 1 << WEIGHT_CLASS_BITS
NUM_DSCP = 64
REG_RATE = "rcp_rate"                    # kb/s per cell, written by the control plane
# A stamp that caps nothing (RCP_RATE_NONE in p4src/shared/defines.p4), in REG_RATE and REG_SYN_RATE: every
# target stamps an unsigned minimum. Tofino's registers start there; bmv2's and SUME's start at 0, so the
# control plane writes it into every cell it does not otherwise set (control_plane/loop.py, resync).
RATE_NONE = 0xFFFFFFFF
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

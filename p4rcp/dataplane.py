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
REG_RTT_SUM = "rcp_rtt_sum"              # sum of those samples, us
REG_QUEUE_DEPTH = "rcp_queue_depth"      # queue depth (packets) the last packet to p saw
REG_RATE = "rcp_rate"                    # R[p], kb/s, written by the control plane
RCP_COUNTERS = (COUNTER_INPUT, COUNTER_RTT_COUNT)
RCP_REGISTERS_READ = (REG_RTT_SUM, REG_QUEUE_DEPTH)
COUNTER_BITS = 64          # counter externs: 64-bit on bmv2 and in P4Runtime's CounterData
RTT_SUM_BITS = 32          # the RTT-sum register on every target; deltas are taken modulo 2^32
NUM_PORTS = 512

COUNTER_INGRESS_PACKETS = "ingress_packets"   # counter extern, packets per ingress port (not RCP)

TABLE_ROUTING_V4 = "routing_v4"
MATCH_IPV4_DST = "ipv4_dst"              # its LPM key
ACTION_SET_NEXT_HOP = "set_next_hop_routing_v4"
ACTION_DROP = "drop_routing_v4"

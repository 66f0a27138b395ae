"""Names the P4 program exposes to control planes (p4src/targets/v1model).

The P4 source gives these objects top-level @name annotations so that the
names are identical on every target; p4rcp/tests/test_dataplane_names.py
checks them against the compiled program.
"""

REG_INPUT_BYTES = "rcp_input_bytes"
REG_RTT_SUM = "rcp_rtt_sum"
REG_RTT_COUNT = "rcp_rtt_count"
REG_QUEUE_DEPTH = "rcp_queue_depth"
REG_RATE = "rcp_rate"
COUNTER_REGISTERS = (REG_INPUT_BYTES, REG_RTT_SUM, REG_RTT_COUNT)
COUNTER_BITS = 64          # width of the monotonic counters on v1model
NUM_PORTS = 512

COUNTER_INGRESS_PACKETS = "ingress_packets"   # counter extern, packets

TABLE_ROUTING_V4 = "routing_v4"
MATCH_IPV4_DST = "ipv4_dst"              # its LPM key
ACTION_SET_NEXT_HOP = "set_next_hop_routing_v4"
ACTION_DROP = "drop_routing_v4"

// Constants and types shared by every target (v1model, TNA, SUME).
// docs/protocol.md is the specification; keep the two in step.
#ifndef P4RCP_DEFINES_P4
#define P4RCP_DEFINES_P4

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<32> rate_kbps_t;
typedef bit<32> rtt_us_t;
typedef bit<16> size_pkts_t;

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IP_PROTO_TCP   = 6;
const bit<8>  IP_PROTO_UDP   = 17;

// A UDP datagram is RCP when its source or destination port is this one.
const bit<16> RCP_UDP_PORT = 6577;
const bit<4>  RCP_VERSION  = 1;
const bit<16> UDP_HEADER_BYTES = 8;
const bit<16> RCP_HEADER_BYTES = 16;

// RCP packet types (low nibble of the first byte).
const bit<4> RCP_TYPE_DATA   = 0;
const bit<4> RCP_TYPE_ACK    = 1;
const bit<4> RCP_TYPE_SYN    = 2;
const bit<4> RCP_TYPE_SYNACK = 3;
const bit<4> RCP_TYPE_FIN    = 4;
const bit<4> RCP_TYPE_FINACK = 5;
// A probe a slow sender sends once per RTT between data packets so that it hears R (ns-2's REF): a forward
// packet, stamped and RTT-sampled like DATA; the receiver answers REFACK, which routers leave alone.
const bit<4> RCP_TYPE_REF    = 6;
const bit<4> RCP_TYPE_REFACK = 7;
// flags: set on the first DATA packet a flow sends once its unsent data takes at most one round trip, by
// which routers count its departure, weighed by its size.
const bit<8> RCP_FLAG_ENDING = 0x01;
// flags: the XCP congestion header (xcp_h) follows the RCP header (docs/xcp.md).
const bit<8>  RCP_FLAG_XCP = 0x80;
const bit<16> XCP_HEADER_BYTES = 12;
const bit<16> ETHERNET_HEADER_BYTES = 14;
// xi_p and xi_n are fixed point with XCP_XI_SHIFT fraction bits, in the data plane's units: xi_p in bytes per
// (us ns), the unit of rtt_us x_ns, xi_n per us (p4rcp/dataplane.py xcp_xi_p_cell, xcp_xi_n_cell).
#define XCP_XI_SHIFT 64

// An RTT sample is valid when 0 < rtt_us < 2^RCP_RTT_BITS us (8.39 s): the bits above RCP_RTT_BITS are
// 0. Larger values are stale or bogus estimates that would drag the router's average RTT d0. A bound that
// is a power of two is a test of bits, which every target makes in one step (Tofino's gateways cannot
// compare a 32-bit field with a constant; docs/porting.md).
#define RCP_RTT_BITS 23
const rtt_us_t RCP_MAX_RTT_US = (1 << RCP_RTT_BITS) - 1;

// A stamp (rcp_rate, rcp_syn_rate) that caps nothing: the largest rate, so that the stamp is an unsigned
// minimum on every target (Tofino's ALUs have one; docs/design.md, "Per packet").
const rate_kbps_t RCP_RATE_NONE = 0xFFFFFFFF;
// The stamp cells hold the stamp's complement, RCP_RATE_NONE - stamp (p4rcp/dataplane.py stamp_cell_value),
// and the data plane takes it back with one bitwise NOT per packet: a cell at its reset value, 0, is
// RCP_RATE_NONE, so a switch that no control plane has written yet (just started, restarted, started by
// another tool) stamps nothing, on every target, rather than 0 kb/s, which would stop every RCP flow.

// Weighted sharing (docs/design.md, "Weights"): the operator maps DSCP values to up to 8 weight classes;
// class 0 (every DSCP without an entry) has weight 1. The stamp of class k on port p lives in cell
// (p << WEIGHT_CLASS_BITS) | k of rcp_rate, written by the control plane as min(gamma C, w_k R).
#define WEIGHT_CLASS_BITS 3
typedef bit<WEIGHT_CLASS_BITS> weight_class_t;

// The feedforward (docs/design.md, "Sudden load"): the k-th long flow's SYN of a control interval on
// port p, k = 1 .. SYN_RATES, is stamped with at most cell (p << SYN_RATE_BITS) | (k - 1) of rcp_syn_rate;
// later long SYNs of the interval take the last cell. A SYN is long when its size is above the port's
// rcp_long_packets; others take rcp_short_rate.
#define SYN_RATE_BITS 3
#define SYN_RATES 8

// Policing (docs/design.md, "Policing"): a count-min sketch of two rows of POLICE_CELLS cells, each
// holding (epoch, bytes) of the flows that hash there. Epochs are ticks of the data plane's own clock
// (the targets' timestamp shifted right), so no control-plane write and no multiplication per packet.
#define POLICE_INDEX_BITS 16
#define POLICE_CELLS 65536
typedef bit<POLICE_INDEX_BITS> police_index_t;

#endif

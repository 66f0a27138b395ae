#ifndef P4RCP_V1MODEL_METADATA_P4
#define P4RCP_V1MODEL_METADATA_P4

#include "size.p4"

// Working values in headers rather than metadata fields: bmv2 resets every metadata field of every packet
// (about 650 instructions a field, RCP or not), but a header's fields only when it is made valid (setValid).
// Every header, used or not, costs each packet one such write too (bmv2 marks every header invalid through
// its validity field), so a header of n values costs the packets that do not use it 1 write instead of n.
// (bmv2's setValid also adds the header's bytes to the packet-length register, which only
// standard_metadata.packet_length in egress reads: this program does not. The deparser never emits them.)
//
// The flow as policing.p4's row 1 hashes it: a header, because bmv2 hashes a header's fields in place, where
// it copies a list's or a struct's into temporary metadata fields first, for each hash. Made valid by the
// packets row 1 sees (over the limit in row 0).
header police_key_h {
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
    bit<16>     src_port;
    bit<16>     dst_port;
}

// The feedforward's working values for a SYN or an ENDING packet (rcp.p4): the port's P and long threshold,
// the flow's size capped at P, a sum it is added to; for a long SYN the port's long-arrival count with it,
// the count at the interval's start, its rank k in the interval (0 for the first), its cell in rcp_syn_rate;
// for a SYN the value found for it (the complement of the rate, defines.p4).
header syn_stamp_h {
    size_pkts_t grant;
    size_pkts_t long_packets;
    size_pkts_t committed;
    bit<32>     sum;
    bit<32>     arrivals;
    bit<32>     base;
    bit<32>     k;
    rate_kbps_t not_rate;
    bit<4>      _pad;           // bmv2 headers are whole bytes
    syn_cell_t  cell;
}

struct metadata_t {
    bool udp_fits_rcp;
#ifndef WITHOUT_RCP
    // Read in ingress by weight_classifier (weights.p4) for forward RCP packets, from the cell of their
    // (output port, weight class): the complement of the rate to stamp (0: RCP_RATE_NONE, RCP off there;
    // kept as read, since a field written costs bmv2 more than the NOT in each use) and the policing
    // parameters (limit 0: off).
    rate_kbps_t    not_rate;
    bit<64>        police;          // allowance << 32 | limit (policing.p4: POLICE_ALLOWANCE, POLICE_LIMIT)
    // The policer's working values (policing.p4): one index and one cell, for row 0 and then row 1.
    police_key_h   police_key;
    police_index_t police_index;
    bit<64>        police_cell;
    syn_stamp_h    syn;
#endif
}

#endif

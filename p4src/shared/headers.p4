// Header formats shared by every target. The RCP header is specified in
// docs/protocol.md; Python (p4rcp/protocol.py) and Rust (hosts/src/transport/wire.rs)
// carry the same definition.
#ifndef P4RCP_HEADERS_P4
#define P4RCP_HEADERS_P4

#include "defines.p4"

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header ipv4_h {
    bit<4>      version;
    bit<4>      ihl;
    bit<6>      dscp;       // DiffServ code point: the packet's weight class (docs/design.md, "Weights")
    bit<2>      ecn;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

header tcp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> seq_no;
    bit<32> ack_no;
    bit<4>  data_offset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent_ptr;
}

// 16 bytes at the start of the UDP payload.
header rcp_h {
    bit<4>      version;
    bit<4>      type;
    bit<8>      flags;
    size_pkts_t size;       // SYN and ENDING: the flow's size in DATA packets (saturating)
    rate_kbps_t rate_kbps;
    rtt_us_t    rtt_us;
    rate_kbps_t feedback_kbps;
}

// XCP's congestion header (docs/xcp.md): 12 bytes after the RCP header when its flags hold RCP_FLAG_XCP.
// H_rtt is the RCP header's rtt_us; x = rtt s / cwnd is the sender's, so that a router never divides.
header xcp_h {
    bit<32> cwnd_bytes;     // H_cwnd
    bit<32> x_ns;           // x, ns (0: no RTT yet)
    int<32> feedback;       // H_feedback, bytes: lowered by routers
}

struct headers_t {
    ethernet_h ethernet;
    ipv4_h     ipv4;
    udp_h      udp;
    tcp_h      tcp;
    rcp_h      rcp;
    xcp_h      xcp;
}

#endif

// Constants and types shared by every target (v1model, TNA, SUME).
// docs/protocol.md is the specification; keep the two in step.
#ifndef P4RCP_DEFINES_P4
#define P4RCP_DEFINES_P4

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<32> rate_kbps_t;
typedef bit<32> rtt_us_t;

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

// An RTT sample is valid when 0 < rtt_us <= RCP_MAX_RTT_US. Larger values are
// stale or bogus estimates that would drag the router's average RTT d0.
const rtt_us_t RCP_MAX_RTT_US = 10000000;

#endif

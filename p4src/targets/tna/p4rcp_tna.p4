// p4rcp for Tofino (TNA). Same per-packet RCP work as the v1model program,
// written for Tofino's stateful ALUs; docs/porting.md says what differs.
#include <core.p4>
#include <tna.p4>

#include "../../shared/headers.p4"

#define NUM_PORTS 512
#define ROUTING_V4_SIZE 1024

struct ingress_metadata_t {
    bool ipv4_checksum_error;
}

struct egress_metadata_t {
    bit<16> udp_checksum_residual;   // UDP checksum without the old checksum and rate
}

#include "parser.p4"
#include "routing.p4"
#include "rcp.p4"

Pipeline(RcpIngressParser(), RcpIngress(), RcpIngressDeparser(),
         RcpEgressParser(), RcpEgress(), RcpEgressDeparser()) pipe;

Switch(pipe) main;

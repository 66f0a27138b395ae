// p4rcp for Tofino (TNA): the RCP library (p4src/lib/tna/) in a small IPv4 router, an example of a host
// program. Same per-packet RCP work as the v1model program, written for Tofino's stateful ALUs;
// docs/porting.md says what differs.
#include <core.p4>
// bf-p4c defines __TARGET_TOFINO__ by --target: 1 (tofino, --arch tna), 2 (tofino2, --arch t2na).
#if __TARGET_TOFINO__ == 2
#include <t2na.p4>
#else
#include <tna.p4>
#endif

// The RCP library: define one profile (p4src/shared/profiles.p4) on the command line, -DRCP_PROFILE_<NAME>.
#include "../../lib/tna/rcp.p4"

#define ROUTING_V4_SIZE 1024

// From ingress to egress, ahead of the Ethernet header: the stamp of the packet's (port, class) cell,
// read in ingress with the class (used only for forward RCP packets).
header bridged_h {
    rate_kbps_t rate;
}

struct tna_headers_t {
    bridged_h  bridged;
    ethernet_h ethernet;
    ipv4_h     ipv4;
    udp_h      udp;
    tcp_h      tcp;
    rcp_h      rcp;
}

// Metadata (the RCP library's too) starts at 0 (false) in every packet, set by the compiler rather than by the parser: a parser
// field written twice (an initial value, then a checksum's result) is an error on Tofino 2. So the front
// end's warning that a parser may leave its metadata uninitialized does not apply, and is off.
@pa_auto_init_metadata
@diagnostic("uninitialized_out_param", "disable")
struct ingress_metadata_t {
    bool ipv4_checksum_error;
    rcp_ingress_md_t rcp;
}

struct egress_metadata_t {
    bit<16> udp_checksum_residual;   // UDP checksum without the old checksum and rate
    bool udp_checksum_update;        // a stamped datagram that carries a checksum (the deparser's condition)
}

#include "parser.p4"
#include "l3_pipeline.p4"

Pipeline(RcpIngressParser(), L3Ingress(), RcpIngressDeparser(),
         RcpEgressParser(), L3Egress(), RcpEgressDeparser()) pipe;

Switch(pipe) main;

// p4rcp for Tofino (TNA). Same per-packet RCP work as the v1model program,
// written for Tofino's stateful ALUs; docs/porting.md says what differs.
#include <core.p4>
// bf-p4c defines __TARGET_TOFINO__ by --target: 1 (tofino, --arch tna), 2 (tofino2, --arch t2na).
#if __TARGET_TOFINO__ == 2
#include <t2na.p4>
#else
#include <tna.p4>
#endif

#include "../../shared/headers.p4"

#define NUM_PORTS 512
#define ROUTING_V4_SIZE 1024
// One cell per (port, weight class): (port << WEIGHT_CLASS_BITS) | class.
#define RATE_CELLS 4096
typedef bit<12> rate_cell_t;
// One SYN stamp per (port, k): (port << SYN_RATE_BITS) | (k - 1).
#define SYN_RATE_CELLS 4096
typedef bit<12> syn_cell_t;
// One entry per (RCP port, DSCP value): 64 ports with RCP.
#define WEIGHT_CLASSIFIER_SIZE 4096
// The drop port's cells (port 511), never written: no stamp, no policing.
#define UNCLASSIFIED_CELL 4088
// Tofino's ingress byte counts include the Ethernet FCS; R counts frames without it.
#define ETHERNET_FCS_BYTES 4

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

// Metadata starts at 0 (false) in every packet, set by the compiler rather than by the parser: a parser
// field written twice (an initial value, then a checksum's result) is an error on Tofino 2. So the front
// end's warning that a parser may leave its metadata uninitialized does not apply, and is off.
@pa_auto_init_metadata
@diagnostic("uninitialized_out_param", "disable")
struct ingress_metadata_t {
    bool ipv4_checksum_error;
    rate_cell_t cell;           // the packet's (port, weight class)
    rate_kbps_t rate;
    bit<32> police_bytes;       // the cell's allowance per epoch
    bit<32> police_limit;       // the cell's bucket limit; 0 = policing off
    bit<32> police_epoch;       // policing.p4's working values
    bit<32> police_len;
    bit<32> police_leak;        // a new epoch's leak: the allowance less this packet, saturating at 0
    bit<32> police_room;        // the most a bucket may hold before this packet: the limit less it
    bit<32> police_leak_room;   // the same for a bucket that leaks first: the limit plus the leak
    bit<32> police_limit_and_allowance;
    bit<32> police_bound0;      // what row 0's bucket RegisterAction compares with and adds or leaks:
    bit<32> police_delta0;      // one pair for both of its actions (a stateful ALU takes two packet values)
    bit<32> police_bound1;      // the same for row 1
    bit<32> police_delta1;
}

struct egress_metadata_t {
    bit<16> udp_checksum_residual;   // UDP checksum without the old checksum and rate
    bool udp_checksum_update;        // a stamped datagram that carries a checksum (the deparser's condition)
}

#include "parser.p4"
#include "policing.p4"
#include "routing.p4"
#include "rcp.p4"

Pipeline(RcpIngressParser(), RcpIngress(), RcpIngressDeparser(),
         RcpEgressParser(), RcpEgress(), RcpEgressDeparser()) pipe;

Switch(pipe) main;

// RCP for a Tofino (TNA) program: the router's per-packet work as two controls that a host program applies,
// RcpIngress once its route chose the output port, RcpEgress in the egress of that port. The work is that
// of the v1model program (docs/dataplane.md); docs/porting.md, "The RCP library", says how to include it.
//
// What the host program does:
//   - parse the RCP header of forward RCP packets only (DATA, SYN, REF: version RCP_VERSION, UDP port
//     RCP_UDP_PORT; p4src/targets/tna/parser.p4 shows the states) and leave it invalid in every other packet;
//   - in ingress, for every packet it routes: RcpIngress.apply(ipv4, udp, rcp, output port, the ingress
//     parser's global timestamp, stamp, deparser metadata). It counts the packet (addition 1); for an RCP
//     packet it writes `stamp`, and with policing may drop the packet (drop_ctl);
//   - carry `stamp` (32 bits) to egress in its bridged metadata;
//   - in egress: RcpEgress.apply(rcp, stamp, egress port, deq_qdepth). For an RCP packet it lowers
//     rcp.rate_kbps to the stamp: the host's egress deparser folds the new rate into the UDP checksum
//     (the Checksum extern, as parser.p4 and p4rcp_tna.p4 do);
//   - define one profile (p4src/shared/profiles.p4) before including this file.
// The control plane finds every table, register and counter by its global name (the leading dot), whatever
// the host calls its controls; the names are those of the v1model program.
#ifndef P4RCP_LIB_TNA_RCP_P4
#define P4RCP_LIB_TNA_RCP_P4

#include "../../shared/profiles.p4"
#include "../../shared/headers.p4"

#define NUM_PORTS 512
// One stamp cell per (port, weight class): (port << WEIGHT_CLASS_BITS) | class; without weights, class 0.
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

#ifdef RCP_POLICING
#include "policer.p4"
#endif
#include "rcp_ingress.p4"
#include "rcp_egress.p4"

#endif

// p4rcp for v1model (bmv2 simple_switch): IPv4 routing in ingress, the RCP
// router's per-packet work in egress, where the egress port and the queue
// the packet saw are known.
#include <core.p4>
#include <v1model.p4>

#include "../../shared/headers.p4"
#include "metadata.p4"
#include "parser.p4"
#include "routing.p4"
#include "rcp.p4"

control RcpIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t std_meta) {
    Routing() routing;
    apply {
        routing.apply(hdr, std_meta);
    }
}

control RcpEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t std_meta) {
#ifndef WITHOUT_RCP
    Rcp() rcp;
#endif
    apply {
#ifndef WITHOUT_RCP
        rcp.apply(hdr, std_meta);
#endif
    }
}

V1Switch(RcpParser(), RcpVerifyChecksum(), RcpIngress(), RcpEgress(),
         RcpComputeChecksum(), RcpDeparser()) main;

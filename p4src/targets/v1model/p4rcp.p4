// p4rcp for v1model (bmv2 simple_switch): IPv4 routing in ingress, whose
// action also counts the RCP input traffic once the output port is known; the
// rest of the RCP router's per-packet work in egress, where the queue the
// packet saw is known.
#include <core.p4>
// register<T, I> and counter<I>: indices of the port's own type, no cast per access.
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

#include "../../shared/headers.p4"
#include "metadata.p4"
#include "parser.p4"
#include "routing.p4"
#ifndef WITHOUT_RCP
#include "rcp.p4"
#endif

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

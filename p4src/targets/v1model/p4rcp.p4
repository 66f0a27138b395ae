// p4rcp for v1model (bmv2 simple_switch): IPv4 routing in ingress, where the
// RCP input-traffic count runs once the output port is known; the rest of
// the RCP router's per-packet work in egress, where the queue the packet saw
// is known.
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
#ifndef WITHOUT_RCP
    RcpArrivals() rcp_arrivals;
#endif
    apply {
        routing.apply(hdr, std_meta);
#ifndef WITHOUT_RCP
        if (std_meta.egress_spec != DROP_PORT) {
            rcp_arrivals.apply(std_meta);
        }
#endif
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

// p4rcp for v1model (bmv2 simple_switch): IPv4 routing in ingress, the classic (TCP) packets' coupled drop,
// then the RCP input traffic counted once the output port is known, then
// a forward RCP packet's weight class and policing (before the queue); the
// rest of the RCP router's per-packet work in egress, after the queue, then the XCP router's (xcp.p4).
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
#include "classic.p4"
#include "policing.p4"
#include "weights.p4"
#include "xcp.p4"
#endif

control RcpIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t std_meta) {
    Routing() routing;
#ifndef WITHOUT_RCP
    ClassicDrop() classic_drop;
    WeightClassifier() weight_classifier;
    Policer() policer;
#endif
    apply {
        routing.apply(hdr, std_meta);
#ifndef WITHOUT_RCP
        if (std_meta.egress_spec != DROP_PORT) {
            classic_drop.apply(hdr, std_meta);
        }
        // RCP addition 1 (rcp.p4): what the port takes in, once routing and the classic drop have decided
        if (std_meta.egress_spec != DROP_PORT) {
            rcp_input.count(std_meta.egress_spec);
        }
        // Forward RCP packets only (parser.p4). A packet routing dropped has egress_spec 511, whose
        // policing cells the control plane never writes.
        if (hdr.rcp.isValid()) {
            weight_classifier.apply(hdr, meta, std_meta);
            // DATA and REF: a SYN opens a flow and is sent whatever R says.
            if (POLICE_LIMIT != 0 && hdr.rcp.type != RCP_TYPE_SYN) {
                policer.apply(hdr, meta, std_meta);
            }
        }
#endif
    }
}

control RcpEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t std_meta) {
#ifndef WITHOUT_RCP
    Rcp() rcp;
    Xcp() xcp;
#endif
    apply {
#ifndef WITHOUT_RCP
        rcp.apply(hdr, meta, std_meta);
        xcp.apply(hdr, std_meta);
#endif
    }
}

V1Switch(RcpParser(), RcpVerifyChecksum(), RcpIngress(), RcpEgress(),
         RcpComputeChecksum(), RcpDeparser()) main;

// The coupled drop of classic traffic (docs/design.md, "Beside TCP"): a TCP packet routed to port p is dropped
// when a random draw is below p's cell, which the control plane writes every interval from R (the drop rate
// at which a TCP flow sends at R). One draw and one comparison; RCP packets never meet it. The reset value 0
// drops nothing, so a switch no control plane has written forwards all of TCP.
#ifndef P4RCP_V1MODEL_CLASSIC_P4
#define P4RCP_V1MODEL_CLASSIC_P4

#include "size.p4"

@name(".rcp_classic_drop") register<bit<32>, PortId_t>(NUM_PORTS) rcp_classic_drop;
@name(".rcp_classic_dropped") counter<PortId_t>(NUM_PORTS, CounterType.packets_and_bytes) rcp_classic_dropped;

control ClassicDrop(in headers_t hdr, inout standard_metadata_t std_meta) {
    apply {
        if (hdr.ipv4.isValid() && hdr.ipv4.protocol == IP_PROTO_TCP) {
            PortId_t p = std_meta.egress_spec;
            bit<32> threshold;
            rcp_classic_drop.read(threshold, p);
            bit<32> draw;
            random(draw, 0, 0xFFFFFFFF);
            if (draw < threshold) {
                rcp_classic_dropped.count(p);
                mark_to_drop(std_meta);
            }
        }
    }
}

#endif

// The RCP router's per-packet work for output port p: three additions and two
// comparisons. R is computed by the control plane, never here (no division).
//
// The input traffic y is what *arrives* for the link, so its addition runs in
// ingress, in the routing action that chose p (routing.p4): bmv2's egress
// runs after the queue, where the count could never exceed the link's
// capacity and overload would show only in the queue. The RTT samples and the
// stamp run in egress, on dequeue, as in the ns-2 router.
//
// bmv2 interprets the program: every table (p4c makes one of each branch
// body), every assignment to a field and every operator costs a packet time.
// So pure counts are counter externs (one C++ increment, no field written),
// indices have the port's own type (no cast into a temporary), and the parser
// extracts the RCP header of forward packets only (egress tests its validity
// instead of four fields). docs/dataplane.md has the measurements.
#ifndef P4RCP_V1MODEL_RCP_P4
#define P4RCP_V1MODEL_RCP_P4

#include "../../shared/checksum.p4"
#include "size.p4"

// Monotonic counts: the data plane never resets them, the control plane reads
// deltas. Names start with "." so they stay the same on every target.

// Addition 1: packets and bytes routed to port p, counted on arrival.
@name(".rcp_input") counter<PortId_t>(NUM_PORTS, CounterType.packets_and_bytes) rcp_input;

control Rcp(inout headers_t hdr, in standard_metadata_t std_meta) {
    @name(".rcp_rtt_sum")     register<bit<32>, PortId_t>(NUM_PORTS) rcp_rtt_sum;
    @name(".rcp_rtt_count")   counter<PortId_t>(NUM_PORTS, CounterType.packets) rcp_rtt_count;
    // Queue depth (packets, enq_qdepth's 19 bits) the last packet saw on enqueue.
    @name(".rcp_queue_depth") register<bit<19>, PortId_t>(NUM_PORTS) rcp_queue_depth;
    // R[p] in kb/s, written by the control plane; 0 = RCP not configured on p.
    @name(".rcp_rate")        register<rate_kbps_t, PortId_t>(NUM_PORTS) rcp_rate;

    apply {
        PortId_t p = std_meta.egress_port;
        rcp_queue_depth.write(p, std_meta.enq_qdepth);
        // Read with the queue sample, in the one table every packet runs anyway.
        rate_kbps_t R;
        rcp_rate.read(R, p);
        // Valid only on forward RCP packets (DATA, SYN): parser.p4 extracts no other RCP header.
        if (hdr.rcp.isValid()) {
            if (hdr.rcp.rtt_us != 0 && hdr.rcp.rtt_us <= RCP_MAX_RTT_US) {             // comparison 1
                bit<32> rtt_sum;
                rcp_rtt_sum.read(rtt_sum, p);
                rcp_rtt_sum.write(p, rtt_sum + hdr.rcp.rtt_us);                        // addition 2
                rcp_rtt_count.count(p);                                                 // addition 3
            }
            if (R != 0 && hdr.rcp.rate_kbps > R) {                                     // comparison 2
                hdr.udp.checksum = udp_csum_replace32_mul(hdr.udp.checksum, hdr.rcp.rate_kbps, R);
                hdr.rcp.rate_kbps = R;
            }
        }
    }
}

#endif

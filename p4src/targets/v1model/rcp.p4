// The RCP router's per-packet work for output port p: three additions and two
// comparisons. R is computed by the control plane, never here (no division).
//
// The input traffic y is what *arrives* for the link, so its addition runs in
// ingress once the route has chosen p: bmv2's egress runs after the queue,
// where the byte count could never exceed the link's capacity and overload
// would show only in the queue. The RTT samples and the stamp run in egress,
// on dequeue, as in the ns-2 router.
#ifndef P4RCP_V1MODEL_RCP_P4
#define P4RCP_V1MODEL_RCP_P4

#include "../../shared/checksum.p4"
#include "size.p4"

// Monotonic counters: the data plane never resets them, the control plane
// reads deltas. Names start with "." so they stay the same on every target.

control RcpArrivals(in standard_metadata_t std_meta) {
    @name(".rcp_input_bytes") register<bit<64>>(NUM_PORTS) rcp_input_bytes;

    apply {
        bit<32> p = (bit<32>) std_meta.egress_spec;
        bit<64> input_bytes;
        rcp_input_bytes.read(input_bytes, p);
        rcp_input_bytes.write(p, input_bytes + (bit<64>) std_meta.packet_length);   // addition 1
    }
}

control Rcp(inout headers_t hdr, in standard_metadata_t std_meta) {
    @name(".rcp_rtt_sum")     register<bit<64>>(NUM_PORTS) rcp_rtt_sum;
    @name(".rcp_rtt_count")   register<bit<64>>(NUM_PORTS) rcp_rtt_count;
    // Queue depth (packets) the last packet saw on enqueue.
    @name(".rcp_queue_depth") register<bit<32>>(NUM_PORTS) rcp_queue_depth;
    // R[p] in kb/s, written by the control plane; 0 = RCP not configured on p.
    @name(".rcp_rate")        register<rate_kbps_t>(NUM_PORTS) rcp_rate;

    apply {
        bit<32> p = (bit<32>) std_meta.egress_port;
        rcp_queue_depth.write(p, (bit<32>) std_meta.enq_qdepth);

        bool is_forward_rcp = hdr.rcp.isValid() && hdr.rcp.version == RCP_VERSION
            && (hdr.rcp.type == RCP_TYPE_DATA || hdr.rcp.type == RCP_TYPE_SYN);
        if (is_forward_rcp) {
            // The RTT additions run for every forward packet, adding 0 when
            // the RTT is not valid, and the checksum is computed before the
            // comparison: straight-line code, which bmv2 runs as one table
            // instead of one per branch.
            bool rtt_valid = hdr.rcp.rtt_us != 0 && hdr.rcp.rtt_us <= RCP_MAX_RTT_US;  // comparison 1
            bit<64> rtt_sum;
            bit<64> rtt_count;
            rcp_rtt_sum.read(rtt_sum, p);
            rcp_rtt_sum.write(p, rtt_sum + (rtt_valid ? (bit<64>) hdr.rcp.rtt_us : 0));  // addition 2
            rcp_rtt_count.read(rtt_count, p);
            rcp_rtt_count.write(p, rtt_count + (rtt_valid ? 64w1 : 0));                 // addition 3

            rate_kbps_t R;
            rcp_rate.read(R, p);
            bit<16> stamped_checksum = udp_csum_replace32(hdr.udp.checksum, hdr.rcp.rate_kbps, R);
            if (R != 0 && hdr.rcp.rate_kbps > R) {                                 // comparison 2
                hdr.udp.checksum = stamped_checksum;
                hdr.rcp.rate_kbps = R;
            }
        }
    }
}

#endif

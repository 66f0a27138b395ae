// The RCP router's per-packet work on TNA, output port p: three additions and
// two comparisons. Addition 1 (input packets and bytes) runs in ingress, on
// arrival (routing.p4), with the weight class and policing; the rest here, on
// departure. The pure counts are Counter externs, as on v1model; the RTT sum
// adds a packet field, so it is a RegisterAction of a stateful ALU.
//
// Register cells are 32 bits, Tofino's stateful-ALU width. The RTT sum wraps;
// the control plane takes its deltas modulo 2^32 (control_plane/loop.py
// counter_delta with rtt_sum_bits = 32), exact while the samples of one
// interval add up to less than 2^31 us. docs/porting.md has the details.

control RcpEgress(inout tna_headers_t hdr, inout egress_metadata_t meta,
                  in egress_intrinsic_metadata_t eg_intr_md,
                  in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                  inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                  inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    @name(".rcp_rtt_sum")     Register<bit<32>, PortId_t>(NUM_PORTS, 0) rcp_rtt_sum;
    @name(".rcp_rtt_count")   Counter<bit<32>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS) rcp_rtt_count;
    // The queue (cells of 80 bytes on Tofino 1) the departing packet leaves behind: 0 once p has drained.
    @name(".rcp_queue_depth") Register<bit<32>, PortId_t>(NUM_PORTS, 0) rcp_queue_depth;

    // The flow-count feedforward (docs/control_plane.md, "Sudden load"), as on v1model: SYNs counted per
    // port, the k-th SYN since the base the control plane wrote capped by its stamp, LAST DATA counted.
    // The arrivals and the base are separate registers, each one stateful ALU, so that the control plane
    // writes the base without touching the running count.
    @name(".rcp_arrivals")      Register<bit<32>, PortId_t>(NUM_PORTS, 0) rcp_arrivals;
    @name(".rcp_arrivals_base") Register<bit<32>, PortId_t>(NUM_PORTS, 0) rcp_arrivals_base;
    @name(".rcp_syn_rate")      Register<rate_kbps_t, syn_cell_t>(SYN_RATE_CELLS, 0) rcp_syn_rate;
    @name(".rcp_departures")    Counter<bit<32>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS) rcp_departures;

    RegisterAction<bit<32>, PortId_t, bit<32>>(rcp_arrivals) count_arrival = {
        void apply(inout bit<32> arrivals, out bit<32> before) { before = arrivals; arrivals = arrivals + 1; }
    };
    RegisterAction<bit<32>, PortId_t, bit<32>>(rcp_arrivals_base) read_arrivals_base = {
        void apply(inout bit<32> base, out bit<32> value) { value = base; }
    };
    RegisterAction<rate_kbps_t, syn_cell_t, rate_kbps_t>(rcp_syn_rate) read_syn_rate = {
        void apply(inout rate_kbps_t rate, out rate_kbps_t value) { value = rate; }
    };

    RegisterAction<bit<32>, PortId_t, void>(rcp_rtt_sum) add_rtt = {
        void apply(inout bit<32> sum) { sum = sum + hdr.rcp.rtt_us; }                           // addition 2
    };
    RegisterAction<bit<32>, PortId_t, void>(rcp_queue_depth) record_queue_depth = {
        void apply(inout bit<32> depth) { depth = (bit<32>) eg_intr_md.deq_qdepth; }
    };

    apply {
        PortId_t p = eg_intr_md.egress_port;
        record_queue_depth.execute(p);

        bool is_forward_rcp = hdr.rcp.isValid() && hdr.rcp.version == RCP_VERSION
            && (hdr.rcp.type == RCP_TYPE_DATA || hdr.rcp.type == RCP_TYPE_SYN || hdr.rcp.type == RCP_TYPE_REF);
        if (is_forward_rcp) {
            // The stamp of the packet's (port, class) cell, read in ingress and bridged; 0 = RCP off.
            rate_kbps_t stamp = hdr.bridged.rate;
            if (hdr.rcp.type == RCP_TYPE_SYN) {
                bit<32> k = count_arrival.execute(p) - read_arrivals_base.execute(p);   // 0 for the first
                if (k >= SYN_RATES) { k = SYN_RATES - 1; }
                rate_kbps_t syn_rate = read_syn_rate.execute(p ++ k[SYN_RATE_BITS - 1:0]);
                if (syn_rate != 0 && syn_rate < stamp) { stamp = syn_rate; }
            } else if (hdr.rcp.type == RCP_TYPE_DATA && (hdr.rcp.flags & RCP_FLAG_LAST) != 0) {
                rcp_departures.count(p);
            }
            if (hdr.rcp.rtt_us != 0 && hdr.rcp.rtt_us <= RCP_MAX_RTT_US) {                      // comparison 1
                add_rtt.execute(p);
                rcp_rtt_count.count(p);                                                             // addition 3
            }
            if (stamp != 0 && hdr.rcp.rate_kbps > stamp) {                                      // comparison 2
                hdr.rcp.rate_kbps = stamp;
            }
        }
        hdr.bridged.setInvalid();
    }
}

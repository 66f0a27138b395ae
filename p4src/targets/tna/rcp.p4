// The RCP router's per-packet work on TNA, output port p: three additions and
// two comparisons. Addition 1 (input packets and bytes) runs in ingress, on
// arrival (routing.p4), with the weight class and policing; the rest here, on
// departure. The pure counts are Counter externs, as on v1model; the RTT sum
// adds a packet field, so it is a RegisterAction of a stateful ALU.
//
// Register cells are 32 bits, Tofino's stateful-ALU width. The RTT sum wraps;
// the control plane takes its deltas modulo 2^32 (control_plane/loop.py
// counter_delta with rtt_sum_bits = 32), exact while the samples of one
// interval add up to less than 2^31 us. Comparison 2 and the SYN stamp are
// unsigned minimums (TNA's min, one ALU instruction), so a stamp that caps
// nothing is RCP_RATE_NONE. Every register here is indexed by the output
// port, whose own pipe is the only one that runs its egress: the control
// plane reads each port's cell from one pipe. docs/porting.md has the details.

control RcpEgress(inout tna_headers_t hdr, inout egress_metadata_t meta,
                  in egress_intrinsic_metadata_t eg_intr_md,
                  in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                  inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                  inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    @name(".rcp_rtt_sum")     Register<bit<32>, PortId_t>(NUM_PORTS, 0) rcp_rtt_sum;
    @name(".rcp_rtt_count")   Counter<bit<32>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS) rcp_rtt_count;
    // The queue (cells: 80 bytes on Tofino 1, 176 on Tofino 2) the departing packet leaves behind: 0 once p
    // has drained.
    @name(".rcp_queue_depth") Register<bit<32>, PortId_t>(NUM_PORTS, 0) rcp_queue_depth;

    // The flow-count feedforward (docs/design.md, "Sudden load"), as on v1model: SYNs counted per
    // port, the k-th SYN since the base the control plane wrote capped by its stamp, LAST DATA counted.
    // The arrivals and the base are separate registers, each one stateful ALU, so that the control plane
    // writes the base without touching the running count.
    @name(".rcp_arrivals")      Register<bit<32>, PortId_t>(NUM_PORTS, 0) rcp_arrivals;
    @name(".rcp_arrivals_base") Register<bit<32>, PortId_t>(NUM_PORTS, 0) rcp_arrivals_base;
    // A SYN stamp of RCP_RATE_NONE (the feedforward off, and a cell never written) caps nothing.
    @name(".rcp_syn_rate")      Register<rate_kbps_t, syn_cell_t>(SYN_RATE_CELLS, RCP_RATE_NONE) rcp_syn_rate;
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

    bit<32> arrivals_before;
    bit<32> base;
    bit<32> since_base;
    action since_base_of_arrivals() { since_base = arrivals_before - base; }
    action cap_at_the_last_cell() { since_base = min(since_base, SYN_RATES - 1); }

    apply {
        PortId_t p = eg_intr_md.egress_port;
        record_queue_depth.execute(p);
        // Valid only on forward RCP packets (DATA, SYN, REF): parser.p4 extracts no other RCP header.
        if (hdr.rcp.isValid()) {
            // The stamp of the packet's (port, class) cell, read in ingress and bridged.
            rate_kbps_t stamp = hdr.bridged.rate;
            if (hdr.rcp.type == RCP_TYPE_SYN) {
                // k - 1: 0 for the interval's first SYN, the last cell for the SYN_RATES-th and later.
                // One operation per action, each action a stage (an action's operands come from earlier
                // stages, and a stateful ALU's answer lands in a field of its own).
                arrivals_before = count_arrival.execute(p);
                base = read_arrivals_base.execute(p);
                since_base_of_arrivals();
                cap_at_the_last_cell();
                stamp = min(stamp, read_syn_rate.execute(p ++ since_base[SYN_RATE_BITS - 1:0]));
            } else if (hdr.rcp.type == RCP_TYPE_DATA && (hdr.rcp.flags & RCP_FLAG_LAST) != 0) {
                rcp_departures.count(p);
            }
            if (hdr.rcp.rtt_us != 0 && hdr.rcp.rtt_us[31:RCP_RTT_BITS] == 0) {                  // comparison 1
                add_rtt.execute(p);
                rcp_rtt_count.count(p);                                                             // addition 3
            }
            hdr.rcp.rate_kbps = min(hdr.rcp.rate_kbps, stamp);                                  // comparison 2
            // A UDP checksum of 0 means none (RFC 768): keep it. Tofino sets a bool from a branch, not
            // from a comparison's value.
            if (hdr.udp.checksum != 0) { meta.udp_checksum_update = true; }
        }
        hdr.bridged.setInvalid();
    }
}

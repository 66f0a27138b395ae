// RCP's egress on TNA, output port p: additions 2 and 3, comparisons 1 and 2, and with the feedforward
// its SYN stamps and committed sizes. The pure counts are Counter externs, as on v1model; the RTT sum
// adds a packet field, so it is a RegisterAction of a stateful ALU.
//
// Register cells are 32 bits, Tofino's stateful-ALU width. The RTT sum wraps; the control plane takes its
// deltas modulo 2^32 (control_plane/loop.py counter_delta with rtt_sum_bits = 32), exact while the samples
// of one interval add up to less than 2^31 us. Comparison 2 and the SYN stamp are unsigned minimums (TNA's
// min, one ALU instruction), so a stamp that caps nothing is RCP_RATE_NONE; its cells hold the complement
// (defines.p4). Every register here is indexed by the output port, whose own pipe is the only one that
// runs its egress: the control plane reads each port's cell from one pipe. docs/porting.md has the details.

control RcpEgress(inout rcp_h rcp, in rate_kbps_t stamp, in PortId_t p, in bit<19> deq_qdepth) {
    @name(".rcp_rtt_sum")     Register<bit<32>, PortId_t>(NUM_PORTS, 0) rcp_rtt_sum;
    @name(".rcp_rtt_count")   Counter<bit<32>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS) rcp_rtt_count;
    // The queue (cells: 80 bytes on Tofino 1, 176 on Tofino 2) the departing packet leaves behind: 0 once p
    // has drained.
    @name(".rcp_queue_depth") Register<bit<32>, PortId_t>(NUM_PORTS, 0) rcp_queue_depth;

    RegisterAction<bit<32>, PortId_t, void>(rcp_rtt_sum) add_rtt = {
        void apply(inout bit<32> sum) { sum = sum + rcp.rtt_us; }                               // addition 2
    };
    RegisterAction<bit<32>, PortId_t, void>(rcp_queue_depth) record_queue_depth = {
        void apply(inout bit<32> depth) { depth = (bit<32>) deq_qdepth; }
    };

#ifdef RCP_FEEDFORWARD
    // The feedforward (docs/design.md, "Sudden load"), as on v1model: the sizes of SYNs and ENDING packets,
    // each capped at P, summed per port; long flows' SYNs counted, the k-th since the base the control plane
    // wrote capped by its stamp; short flows' SYNs capped by the short stamp. Each register is one stateful
    // ALU, so that the control plane writes the base, the stamps, P and the threshold without touching the
    // running counts. A stamp of RCP_RATE_NONE (the feedforward off, and a cell at its reset value: the
    // rate cells hold the complement, as rcp_rate's) caps nothing.
    @name(".rcp_committed_arrivals")   Register<bit<32>, PortId_t>(NUM_PORTS, 0) rcp_committed_arrivals;
    @name(".rcp_committed_departures") Register<bit<32>, PortId_t>(NUM_PORTS, 0) rcp_committed_departures;
    @name(".rcp_long_arrivals")        Register<bit<32>, PortId_t>(NUM_PORTS, 0) rcp_long_arrivals;
    @name(".rcp_arrivals_base")        Register<bit<32>, PortId_t>(NUM_PORTS, 0) rcp_arrivals_base;
    @name(".rcp_syn_rate")      Register<rate_kbps_t, syn_cell_t>(SYN_RATE_CELLS, 0) rcp_syn_rate;
    @name(".rcp_short_rate")    Register<rate_kbps_t, PortId_t>(NUM_PORTS, 0) rcp_short_rate;
    @name(".rcp_grant_packets") Register<size_pkts_t, PortId_t>(NUM_PORTS, 0) rcp_grant_packets;
    @name(".rcp_long_packets")  Register<size_pkts_t, PortId_t>(NUM_PORTS, 0) rcp_long_packets;

    size_pkts_t committed;

    // P, for min(size, P) in the action after it: a stateful ALU's output is one source, the cell or a
    // packet field, never a choice between the two.
    RegisterAction<size_pkts_t, PortId_t, size_pkts_t>(rcp_grant_packets) read_grant = {
        void apply(inout size_pkts_t grant, out size_pkts_t value) { value = grant; }
    };
    // 1 when the flow is long (its size above the threshold), in the ALU that holds the threshold.
    RegisterAction<size_pkts_t, PortId_t, bit<8>>(rcp_long_packets) is_long = {
        void apply(inout size_pkts_t threshold, out bit<8> value) {
            if (rcp.size > threshold) { value = 1; } else { value = 0; }
        }
    };
    RegisterAction<bit<32>, PortId_t, void>(rcp_committed_arrivals) commit_arrival = {
        void apply(inout bit<32> sum) { sum = sum + (bit<32>) committed; }
    };
    RegisterAction<bit<32>, PortId_t, void>(rcp_committed_departures) commit_departure = {
        void apply(inout bit<32> sum) { sum = sum + (bit<32>) committed; }
    };
    RegisterAction<bit<32>, PortId_t, bit<32>>(rcp_long_arrivals) count_long_arrival = {
        void apply(inout bit<32> arrivals, out bit<32> before) { before = arrivals; arrivals = arrivals + 1; }
    };
    RegisterAction<bit<32>, PortId_t, bit<32>>(rcp_arrivals_base) read_arrivals_base = {
        void apply(inout bit<32> base, out bit<32> value) { value = base; }
    };
    RegisterAction<rate_kbps_t, syn_cell_t, rate_kbps_t>(rcp_syn_rate) read_syn_rate = {
        void apply(inout rate_kbps_t rate, out rate_kbps_t value) { value = RCP_RATE_NONE - rate; }
    };
    RegisterAction<rate_kbps_t, PortId_t, rate_kbps_t>(rcp_short_rate) read_short_rate = {
        void apply(inout rate_kbps_t rate, out rate_kbps_t value) { value = RCP_RATE_NONE - rate; }
    };

    bit<8> long_flow;
    bit<32> arrivals_before;
    bit<32> base;
    bit<32> since_base;
    action since_base_of_arrivals() { since_base = arrivals_before - base; }
    action cap_at_the_last_cell() { since_base = min(since_base, SYN_RATES - 1); }
#endif

    apply {
        record_queue_depth.execute(p);
        // Valid only on forward RCP packets (DATA, SYN, REF): the host parses no other RCP header.
        if (rcp.isValid()) {
            if (rcp.rtt_us != 0 && rcp.rtt_us[31:RCP_RTT_BITS] == 0) {                          // comparison 1
                add_rtt.execute(p);
                rcp_rtt_count.count(p);                                                             // addition 3
            }
            rcp.rate_kbps = min(rcp.rate_kbps, stamp);                                          // comparison 2
#ifdef RCP_FEEDFORWARD
            // A SYN's stamp lowers the rate once more, in a later stage: the minimum of the three is the same
            // in either order, and comparison 2 need not wait for the SYN stamp's read.
            if (rcp.type == RCP_TYPE_SYN) {
                committed = min(rcp.size, read_grant.execute(p));
                commit_arrival.execute(p);
                long_flow = is_long.execute(p);
                if (long_flow == 1) {
                    // k - 1: 0 for the interval's first long SYN, the last cell for the SYN_RATES-th and later.
                    // One operation per action, each action a stage (an action's operands come from earlier
                    // stages, and a stateful ALU's answer lands in a field of its own).
                    arrivals_before = count_long_arrival.execute(p);
                    base = read_arrivals_base.execute(p);
                    since_base_of_arrivals();
                    cap_at_the_last_cell();
                    rcp.rate_kbps = min(rcp.rate_kbps, read_syn_rate.execute(p ++ since_base[SYN_RATE_BITS - 1:0]));
                } else {
                    rcp.rate_kbps = min(rcp.rate_kbps, read_short_rate.execute(p));
                }
            } else if (rcp.type == RCP_TYPE_DATA && (rcp.flags & RCP_FLAG_ENDING) != 0) {
                committed = min(rcp.size, read_grant.execute(p));
                commit_departure.execute(p);
            }
#endif
        }
    }
}

// The RCP router's per-packet work for output port p: three additions and two
// comparisons. R is computed by the control plane, never here (no division).
//
// The input traffic y is what *arrives* for the link, so its addition runs in
// ingress, in the routing action that chose p (routing.p4): bmv2's egress
// runs after the queue, where the count could never exceed the link's
// capacity and overload would show only in the queue. The RTT samples and the
// stamp run in egress, on dequeue. (ns-2's rcp.cc takes its RTT samples on
// arrival and stamps on dequeue; the average RTT is the same either way.)
//
// bmv2 interprets the program: every table (p4c makes one of each branch
// body), every assignment to a field and every operator costs a packet time.
// So pure counts are counter externs (one C++ increment, no field written),
// indices have the port's own type (no cast into a temporary), and the parser
// extracts the RCP header of forward packets only (egress tests its validity
// instead of four fields), and the SYN stamp's working values are a header
// made valid by SYNs only (metadata.p4), not locals that every packet would
// pay to reset. docs/dataplane.md has the measurements.
#ifndef P4RCP_V1MODEL_RCP_P4
#define P4RCP_V1MODEL_RCP_P4

#include "../../shared/checksum.p4"
#include "size.p4"

// Monotonic counts: the data plane never resets them, the control plane reads
// deltas. Names start with "." so they stay the same on every target.

// The rate stamped into packets of weight class k leaving port p, kb/s, in cell (p << 3) | k: min(gamma C,
// w_k R[p]), written by the control plane; RCP_RATE_NONE = RCP not configured there (bmv2's registers start
// at 0: the control plane writes RCP_RATE_NONE into every cell it does not otherwise set). Read in ingress
// with the class (weights.p4).
@name(".rcp_rate") register<rate_kbps_t, rate_cell_t>(RATE_CELLS) rcp_rate;

// Addition 1: packets and bytes routed to port p, counted on arrival.
@name(".rcp_input") counter<PortId_t>(NUM_PORTS, CounterType.packets_and_bytes) rcp_input;

control Rcp(inout headers_t hdr, inout metadata_t meta, in standard_metadata_t std_meta) {
    @name(".rcp_rtt_sum")     register<bit<32>, PortId_t>(NUM_PORTS) rcp_rtt_sum;
    @name(".rcp_rtt_count")   counter<PortId_t>(NUM_PORTS, CounterType.packets) rcp_rtt_count;
    // The queue (packets, deq_qdepth's 19 bits) the last packet to leave p left behind: 0 once p has
    // drained, however long it then stays quiet (the depth a packet saw on *enqueue* lagged the queue by
    // a queueing delay and stayed at the last arrival's value while the port idled).
    @name(".rcp_queue_depth") register<bit<19>, PortId_t>(NUM_PORTS) rcp_queue_depth;
    // The flow-count feedforward (docs/design.md, "Sudden load"): new flows (SYNs) and departures
    // (DATA flagged LAST) per port, for the control plane to scale R by N / (N + arrivals - departures); and
    // the k-th SYN of an interval stamped with the rate that fits it, rcp_syn_rate[(p << 3) | (k - 1)],
    // k counted from rcp_arrivals_base, which the control plane sets to rcp_arrivals at each interval.
    // A SYN rate of RCP_RATE_NONE (feedforward off) caps nothing.
    @name(".rcp_arrivals")      register<bit<32>, PortId_t>(NUM_PORTS) rcp_arrivals;
    @name(".rcp_arrivals_base") register<bit<32>, PortId_t>(NUM_PORTS) rcp_arrivals_base;
    @name(".rcp_syn_rate")      register<rate_kbps_t, syn_cell_t>(SYN_RATE_CELLS) rcp_syn_rate;
    @name(".rcp_departures")    counter<PortId_t>(NUM_PORTS, CounterType.packets) rcp_departures;

    // An action of its own: in the same block as the read, p4c would copy the index into a temporary that
    // bmv2 resets with every packet.
    action find_syn_cell() {
        meta.syn.cell = std_meta.egress_port ++ meta.syn.k[SYN_RATE_BITS - 1:0];
    }

    // Every packet records the queue it leaves behind: a forward RCP packet in its kind's action (below),
    // any other packet in this one.
    action record_queue_depth() {
        rcp_queue_depth.write(std_meta.egress_port, std_meta.deq_qdepth);
    }

    // A SYN: one more arrival on the port, and the SYN's rank k in the interval (its stamp below).
    action count_arrival() {
        record_queue_depth();
        meta.syn.setValid();
        rcp_arrivals.read(meta.syn.arrivals, std_meta.egress_port);
        meta.syn.arrivals = meta.syn.arrivals + 1;                              // an addition per SYN
        rcp_arrivals.write(std_meta.egress_port, meta.syn.arrivals);
        rcp_arrivals_base.read(meta.syn.base, std_meta.egress_port);
        meta.syn.k = meta.syn.arrivals - meta.syn.base - 1;                     // 0 for the interval's first
    }

    // DATA flagged LAST: a departure.
    action count_departure() {
        record_queue_depth();
        rcp_departures.count(std_meta.egress_port);
    }

    // A forward RCP packet's kind in one lookup: bmv2 pays a condition's operators for each kind tested,
    // a table's lookup once. Flags other than LAST are ignored (docs/protocol.md).
    table rcp_packet_kind {
        key = {
            hdr.rcp.type: exact;
            hdr.rcp.flags: ternary;
        }
        actions = { count_arrival; count_departure; record_queue_depth; }
        const default_action = record_queue_depth();
        const entries = {
            (RCP_TYPE_SYN, _): count_arrival();
            (RCP_TYPE_DATA, RCP_FLAG_LAST &&& RCP_FLAG_LAST): count_departure();
        }
    }

    apply {
        PortId_t p = std_meta.egress_port;
        // Valid only on forward RCP packets (DATA, SYN, REF): parser.p4 extracts no other RCP header.
        if (hdr.rcp.isValid()) {
            switch (rcp_packet_kind.apply().action_run) {
                count_arrival: {
                    if (meta.syn.k >= SYN_RATES) { meta.syn.k = SYN_RATES - 1; }
                    find_syn_cell();
                    rcp_syn_rate.read(meta.syn.rate, meta.syn.cell);
                    if (meta.syn.rate < meta.rate) { meta.rate = meta.syn.rate; }
                }
            }
            // 0 < rtt_us < 2^RCP_RTT_BITS, as one unsigned comparison (0 - 1 wraps to the top).
            if (hdr.rcp.rtt_us - 1 < (1 << RCP_RTT_BITS) - 1) {                        // comparison 1
                bit<32> rtt_sum;
                rcp_rtt_sum.read(rtt_sum, p);
                rtt_sum = rtt_sum + hdr.rcp.rtt_us;                                     // addition 2
                rcp_rtt_sum.write(p, rtt_sum);
                rcp_rtt_count.count(p);                                                 // addition 3
            }
            // meta.rate: the stamp of the packet's (port, weight class), read in ingress (weights.p4).
            if (hdr.rcp.rate_kbps > meta.rate) {                                        // comparison 2
                hdr.udp.checksum = udp_csum_replace32_mul(hdr.udp.checksum, hdr.rcp.rate_kbps, meta.rate);
                hdr.rcp.rate_kbps = meta.rate;
            }
        } else {
            record_queue_depth();
        }
    }
}

#endif

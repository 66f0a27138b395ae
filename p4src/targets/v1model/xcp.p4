// The XCP router's per-packet work for output port p (docs/xcp.md, "The router per packet"), the operations
// of the ns-3 model (topo/ns3/model/xcp-queue-disc.cc): y is RCP's input counter (rcp_input, counted on
// arrival in routing.p4); on departure from a port XCP's loop controls (xcp_on), a forward XCP packet with a
// valid RTT and x > 0 adds its terms to the port's sums and lowers H_feedback to p_i - n_i, p_i = xi_p rtt x and
// n_i = xi_n rtt s each capped by what is left of the interval's totals; every departure keeps the smallest queue.
// xi_p and xi_n come from the control plane each interval (control_plane/xcp_loop.py); nothing here divides.
//
// Units are the header's: rtt in us, x in ns, s in frame bytes. rtt x < 2^23 2^32 needs 55 bits, so the sums
// are 64-bit registers (deltas modulo 2^64). The coefficients are fixed point with XCP_XI_SHIFT fraction bits
// (defines.p4), so a product needs 64 + 55 bits, which bmv2 computes in arbitrary precision.
#ifndef P4RCP_V1MODEL_XCP_P4
#define P4RCP_V1MODEL_XCP_P4

#include "../../shared/checksum.p4"
#include "size.p4"

const int<128> XCP_FEEDBACK_MIN = -(1 << 31);
const bit<128> XCP_XI_ONE_MINUS_ULP = (1 << XCP_XI_SHIFT) - 1;     // added before the shift: rounds up

control Xcp(inout headers_t hdr, in standard_metadata_t std_meta) {
    @name(".xcp_sum_x")     register<bit<64>, PortId_t>(NUM_PORTS) xcp_sum_x;        // ns
    @name(".xcp_sum_rtt_x") register<bit<64>, PortId_t>(NUM_PORTS) xcp_sum_rtt_x;    // us ns
    @name(".xcp_sum_s")     register<bit<64>, PortId_t>(NUM_PORTS) xcp_sum_s;        // bytes
    @name(".xcp_xi_p")      register<bit<64>, PortId_t>(NUM_PORTS) xcp_xi_p;
    @name(".xcp_xi_n")      register<bit<64>, PortId_t>(NUM_PORTS) xcp_xi_n;
    // The persistent queue Q (packets, deq_qdepth's unit): the smallest queue a departure left behind since
    // the control plane last restarted it (with all ones; ns-2's xcpq.cc keeps the same minimum).
    @name(".xcp_min_queue") register<bit<19>, PortId_t>(NUM_PORTS) xcp_min_queue;
    // What is left of the interval's positive and negative totals (bytes), written with the coefficients: a
    // packet stream larger than the last interval's (a flow's start) gets no more than the totals.
    @name(".xcp_positive_left") register<bit<64>, PortId_t>(NUM_PORTS) xcp_positive_left;
    @name(".xcp_negative_left") register<bit<64>, PortId_t>(NUM_PORTS) xcp_negative_left;
    // 1 on the ports XCP's loop controls (written with the coefficients); elsewhere, and on a switch no loop has
    // written, XCP packets pass untouched, as through a port without the ns-3 model's queue disc.
    @name(".xcp_on")        register<bit<1>, PortId_t>(NUM_PORTS) xcp_on;

    apply {
        PortId_t p = std_meta.egress_port;
        bit<19> min_queue;
        xcp_min_queue.read(min_queue, p);
        if (std_meta.deq_qdepth < min_queue) {
            xcp_min_queue.write(p, std_meta.deq_qdepth);
        }
        // 0 < rtt_us < 2^RCP_RTT_BITS as in rcp.p4, and x > 0; hdr.xcp is valid on forward packets only.
        if (hdr.xcp.isValid() && hdr.rcp.rtt_us - 1 < (1 << RCP_RTT_BITS) - 1 && hdr.xcp.x_ns != 0) {
            bit<1> on;
            xcp_on.read(on, p);
            if (on == 1) {
                bit<64> rtt = (bit<64>) hdr.rcp.rtt_us;
                bit<64> x = (bit<64>) hdr.xcp.x_ns;
                bit<64> s = (bit<64>) hdr.ipv4.total_len + (bit<64>) ETHERNET_HEADER_BYTES;    // the frame
                bit<64> rtt_x = rtt * x;
                bit<64> sum;
                xcp_sum_x.read(sum, p);
                xcp_sum_x.write(p, sum + x);
                xcp_sum_rtt_x.read(sum, p);
                xcp_sum_rtt_x.write(p, sum + rtt_x);
                xcp_sum_s.read(sum, p);
                xcp_sum_s.write(p, sum + s);
                bit<64> xi_p;
                bit<64> xi_n;
                xcp_xi_p.read(xi_p, p);
                xcp_xi_n.read(xi_n, p);
                // p_i = xi_p rtt x rounded down, n_i = xi_n rtt s rounded up, whole bytes after the shift (each
                // below 2^55), then each at most what is left of the interval's totals
                bit<128> p_scaled = (bit<128>) xi_p * (bit<128>) rtt_x;
                bit<128> n_scaled = (bit<128>) xi_n * (bit<128>) (rtt * s) + XCP_XI_ONE_MINUS_ULP;
                bit<64> p_i = (bit<64>) (p_scaled >> XCP_XI_SHIFT);
                bit<64> n_i = (bit<64>) (n_scaled >> XCP_XI_SHIFT);
                bit<64> positive_left;
                bit<64> negative_left;
                xcp_positive_left.read(positive_left, p);
                xcp_negative_left.read(negative_left, p);
                if (p_i > positive_left) { p_i = positive_left; }
                if (n_i > negative_left) { n_i = negative_left; }
                int<128> feedback = (int<128>) (bit<128>) p_i - (int<128>) (bit<128>) n_i;
                int<128> heard = (int<128>) hdr.xcp.feedback;
                // What the packet takes from what is left (xcp_law.xcp_charged_feedback): p_i and n_i, or, when
                // another router gave less, n = min(negative left, p_i - H) and p = max(H + n, 0), both at most
                // what is left (H + n <= p_i)
                bit<64> charged_p = p_i;
                bit<64> charged_n = n_i;
                if (feedback > heard) {
                    int<128> more = (int<128>) (bit<128>) p_i - heard;
                    if (more < (int<128>) (bit<128>) negative_left) { charged_n = (bit<64>) (bit<128>) more; }
                    else { charged_n = negative_left; }
                    int<128> got = heard + (int<128>) (bit<128>) charged_n;
                    if (got > 0) { charged_p = (bit<64>) (bit<128>) got; } else { charged_p = 0; }
                }
                xcp_positive_left.write(p, positive_left - charged_p);
                xcp_negative_left.write(p, negative_left - charged_n);
                if (feedback < heard) {
                    if (feedback < XCP_FEEDBACK_MIN) { feedback = XCP_FEEDBACK_MIN; }
                    bit<32> lowered = (bit<32>) (bit<128>) feedback;
                    // signed: the new field may be the larger unsigned word, so the general update
                    hdr.udp.checksum = udp_csum_replace32(hdr.udp.checksum, (bit<32>) hdr.xcp.feedback, lowered);
                    hdr.xcp.feedback = (int<32>) lowered;
                }
            }
        }
    }
}

#endif

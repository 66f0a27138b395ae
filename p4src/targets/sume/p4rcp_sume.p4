// p4rcp for NetFPGA SUME (SimpleSumeSwitch, P4-NetFPGA workflow). One
// pipeline: route, then the RCP work for the chosen output port, policing
// included (before the output queues). docs/porting.md says what differs from
// v1model. Compiled with one profile, -DRCP_PROFILE_<NAME> (p4src/shared/profiles.p4).
//
// P4-NetFPGA externs are declared here, as its workflow expects: a register is
// <name>_reg_<op> (rw: read or write; raw: read, add or write; praw: the same if
// a comparison with the cell holds; ifElseRaw: one of two operations by a
// comparison), each called at most once per packet; hash_lrc folds its input
// into words with exclusive-or; tin_timestamp is the arrival time in clock
// cycles of the 200 MHz pipeline. `make check-sume` checks it with p4c's front
// and mid end only: SDNet and the board are P4-NetFPGA's.
#include <core.p4>
#include <sume_switch.p4>

#include "../../shared/profiles.p4"
#include "../../shared/headers.p4"
#include "../../shared/checksum.p4"

#define REG_READ  8w0
#define REG_WRITE 8w1
#define REG_ADD   8w2
#define RELOP_EQ  8w0
#define RELOP_NEQ 8w1
#define RELOP_GT  8w2
// Four 10G ports NF0..NF3 (one-hot bits 0, 2, 4, 6), registers indexed 0..3.
typedef bit<2> port_index_t;
// One cell per (port, weight class): (port << 3) | class; cell 32 holds RCP_RATE_NONE (no stamp) and no
// policing. The stamp cells hold the stamp's complement (defines.p4), so that SUME's registers, which start at
// 0 as bmv2's do, stamp nothing until the control plane writes them.
typedef bit<6> rate_cell_t;
#define UNCLASSIFIED_CELL 6w32
// One SYN stamp per (port, k): (port << SYN_RATE_BITS) | (k - 1).
typedef bit<5> syn_cell_t;
// A policing epoch: 2^22 cycles of 5 ns (21 ms).
#define POLICE_EPOCH_SHIFT 22

// Per port: input bytes (addition 1), RTT sum and count (additions 2 and 3); with policing, bytes it dropped.
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(2)
extern void rcp_input_reg_raw(in port_index_t index, in bit<32> newVal, in bit<32> incVal,
                              in bit<8> opCode, out bit<32> result);
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(2)
extern void rcp_rtt_sum_reg_raw(in port_index_t index, in bit<32> newVal, in bit<32> incVal,
                                in bit<8> opCode, out bit<32> result);
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(2)
extern void rcp_rtt_count_reg_raw(in port_index_t index, in bit<32> newVal, in bit<32> incVal,
                                  in bit<8> opCode, out bit<32> result);
#ifdef RCP_POLICING
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(2)
extern void rcp_policed_reg_raw(in port_index_t index, in bit<32> newVal, in bit<32> incVal,
                                in bit<8> opCode, out bit<32> result);
#endif
#ifdef RCP_FEEDFORWARD
// The feedforward (docs/design.md, "Sudden load"): long flows' SYNs (raw's result is the cell as it read
// it, before the addition) and the sizes, capped at P, of SYNs and DATA flagged ENDING, per port; the base,
// the SYN stamps (per (port, k - 1)), the short stamp, P and the long threshold, written by the control plane.
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(2)
extern void rcp_long_arrivals_reg_raw(in port_index_t index, in bit<32> newVal, in bit<32> incVal,
                                      in bit<8> opCode, out bit<32> result);
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(2)
extern void rcp_committed_arrivals_reg_raw(in port_index_t index, in bit<32> newVal, in bit<32> incVal,
                                           in bit<8> opCode, out bit<32> result);
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(2)
extern void rcp_committed_departures_reg_raw(in port_index_t index, in bit<32> newVal, in bit<32> incVal,
                                             in bit<8> opCode, out bit<32> result);
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(2)
extern void rcp_short_rate_reg_rw(in port_index_t index, in rate_kbps_t newVal, in bit<8> opCode,
                                  out rate_kbps_t result);
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(2)
extern void rcp_grant_packets_reg_rw(in port_index_t index, in size_pkts_t newVal, in bit<8> opCode,
                                     out size_pkts_t result);
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(2)
extern void rcp_long_packets_reg_rw(in port_index_t index, in size_pkts_t newVal, in bit<8> opCode,
                                    out size_pkts_t result);
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(2)
extern void rcp_arrivals_base_reg_rw(in port_index_t index, in bit<32> newVal, in bit<8> opCode, out bit<32> result);
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(5)
extern void rcp_syn_rate_reg_rw(in syn_cell_t index, in rate_kbps_t newVal, in bit<8> opCode, out rate_kbps_t result);
#endif
// Every packet writes the four output queues' occupancies (32-byte words, NF0 in bits 15..0): the pipe
// sees every queue on every arrival, so a quiet port's entry is refreshed by the other ports' packets.
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(1)
extern void rcp_queue_depth_reg_rw(in bit<1> index, in bit<64> newVal, in bit<8> opCode, out bit<64> result);
// Per (port, weight class) cell, written by the control plane.
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(6)
extern void rcp_rate_reg_rw(in rate_cell_t index, in rate_kbps_t newVal, in bit<8> opCode, out rate_kbps_t result);
#ifdef RCP_POLICING
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(6)
extern void rcp_police_bytes_reg_rw(in rate_cell_t index, in bit<32> newVal, in bit<8> opCode, out bit<32> result);
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(6)
extern void rcp_police_limit_reg_rw(in rate_cell_t index, in bit<32> newVal, in bit<8> opCode, out bit<32> result);
// The policing rows: each cell's epoch (write if it differs, say whether it did) and bucket.
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(16)
extern void rcp_police_row0_epoch_reg_praw(in police_index_t index, in bit<32> newVal, in bit<32> incVal,
                                           in bit<8> opCode, in bit<32> compVal, in bit<8> relOp,
                                           out bit<32> result, out bit<1> boolean);
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(16)
extern void rcp_police_row0_bytes_reg_ifElseRaw(in police_index_t index_2, in bit<32> newVal_2, in bit<32> incVal_2,
                                                in bit<8> opCode_2, in police_index_t index_1, in bit<32> newVal_1,
                                                in bit<32> incVal_1, in bit<8> opCode_1, in police_index_t index_comp,
                                                in bit<32> compVal, in bit<8> relOp, out bit<32> result,
                                                out bit<1> boolean);
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(16)
extern void rcp_police_row1_epoch_reg_praw(in police_index_t index, in bit<32> newVal, in bit<32> incVal,
                                           in bit<8> opCode, in bit<32> compVal, in bit<8> relOp,
                                           out bit<32> result, out bit<1> boolean);
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(16)
extern void rcp_police_row1_bytes_reg_ifElseRaw(in police_index_t index_2, in bit<32> newVal_2, in bit<32> incVal_2,
                                                in bit<8> opCode_2, in police_index_t index_1, in bit<32> newVal_1,
                                                in bit<32> incVal_1, in bit<8> opCode_1, in police_index_t index_comp,
                                                in bit<32> compVal, in bit<8> relOp, out bit<32> result,
                                                out bit<1> boolean);
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(0)
extern void hash_lrc(in bit<128> in_data, out bit<32> result);
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(0)
extern void tin_timestamp(in bit<1> valid, out bit<64> result);
#endif

struct user_metadata_t {
    port_index_t port_index;
    rate_cell_t cell;
}

// SimpleSumeSwitch requires a digest type; p4rcp sends no digests.
struct digest_data_t {
    bit<256> unused;
}

parser RcpParser(packet_in pkt, out headers_t hdr, out user_metadata_t meta, out digest_data_t digest,
                 inout sume_metadata_t sume_metadata) {
    state start {
        meta.port_index = 0;
        meta.cell = UNCLASSIFIED_CELL;
        digest.unused = 0;
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.flags[0:0], hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.src_port, hdr.udp.dst_port) {
            (RCP_UDP_PORT, _): parse_rcp;
            (_, RCP_UDP_PORT): parse_rcp;
            default: accept;
        }
    }

    // A frame is at least 60 bytes, so the 16 bytes after a UDP header always
    // exist; the pipe uses them only when the UDP length says they are RCP.
    state parse_rcp {
        pkt.extract(hdr.rcp);
        transition accept;
    }
}

control RcpPipe(inout headers_t hdr, inout user_metadata_t meta, inout digest_data_t digest,
                inout sume_metadata_t sume_metadata) {
    @name(".drop_routing_v4")
    action drop_routing_v4() {
        sume_metadata.dst_port = 0;
    }

    @name(".set_next_hop_routing_v4")
    action set_next_hop_routing_v4(port_t port, mac_addr_t src_mac, mac_addr_t dst_mac) {
        sume_metadata.dst_port = port;
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
        // TTL - 1: the TTL/protocol word of the header drops by 0x0100.
        hdr.ipv4.hdr_checksum = csum16_replace16(hdr.ipv4.hdr_checksum, hdr.ipv4.ttl ++ hdr.ipv4.protocol,
                                                 (hdr.ipv4.ttl - 1) ++ hdr.ipv4.protocol);
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    @name(".routing_v4")
    table routing_v4 {
        key = { hdr.ipv4.dst_addr: lpm @name("ipv4_dst"); }
        actions = { set_next_hop_routing_v4; drop_routing_v4; }
        default_action = drop_routing_v4();
        size = 64;
    }

    action set_port_index(port_index_t index) {
        meta.port_index = index;
    }

    // One-hot output port to register index; the DMA ports carry no RCP.
    table port_index {
        key = { sume_metadata.dst_port: exact; }
        actions = { set_port_index; NoAction; }
        const entries = {
            8w0b00000001: set_port_index(0);
            8w0b00000100: set_port_index(1);
            8w0b00010000: set_port_index(2);
            8w0b01000000: set_port_index(3);
        }
        default_action = NoAction();
    }

#ifdef RCP_WEIGHTS
    @name(".set_cell_weight_classifier")
    action set_cell_weight_classifier(rate_cell_t cell) {
        meta.cell = cell;
    }

    // Installed by the control plane for every (RCP port, DSCP): the cell of the DSCP's weight class.
    @name(".weight_classifier")
    table weight_classifier {
        key = {
            meta.port_index: exact @name("port");
            hdr.ipv4.dscp: exact @name("dscp");
        }
        actions = { set_cell_weight_classifier; }
        default_action = set_cell_weight_classifier(UNCLASSIFIED_CELL);
        size = 256;
    }
#endif

    apply {
        bool routable = hdr.ipv4.isValid() && hdr.ipv4.version == 4 && hdr.ipv4.ihl == 5 && hdr.ipv4.ttl > 1;
        if (!routable) {
            drop_routing_v4();
        } else {
            routing_v4.apply();
        }
        // The RCP work for a routed packet to one of the four 10G ports (not the DMA ports).
        if (routable && sume_metadata.dst_port != 0 && port_index.apply().hit) {
            port_index_t p = meta.port_index;
            bit<32> unused;
            bit<64> unused64;
            bit<32> len = (bit<32>) sume_metadata.pkt_len;

            rcp_input_reg_raw(p, 0, len, REG_ADD, unused);                                // addition 1
            rcp_queue_depth_reg_rw(0, sume_metadata.nf3_q_size ++ sume_metadata.nf2_q_size
                                      ++ sume_metadata.nf1_q_size ++ sume_metadata.nf0_q_size, REG_WRITE, unused64);

            bool is_forward_rcp = hdr.rcp.isValid() && hdr.udp.length >= UDP_HEADER_BYTES + RCP_HEADER_BYTES
                && hdr.rcp.version == RCP_VERSION
                && (hdr.rcp.type == RCP_TYPE_DATA || hdr.rcp.type == RCP_TYPE_SYN || hdr.rcp.type == RCP_TYPE_REF);
            if (is_forward_rcp) {
#ifdef RCP_WEIGHTS
                weight_classifier.apply();
#else
                meta.cell = (rate_cell_t) (p ++ (weight_class_t) 0);
#endif
                rate_kbps_t not_R;
                rcp_rate_reg_rw(meta.cell, 0, REG_READ, not_R);
                rate_kbps_t R = ~not_R;
                bool policed = false;
#ifdef RCP_POLICING
                bit<32> allowance;
                bit<32> limit;
                rcp_police_bytes_reg_rw(meta.cell, 0, REG_READ, allowance);
                rcp_police_limit_reg_rw(meta.cell, 0, REG_READ, limit);

                // Policing (docs/design.md, "Policing"), DATA and REF only: row 0 counts every packet; a
                // packet over the limit there goes to row 1, which counts what it lets through and drops the
                // rest. A cell's first packet of an epoch leaves bytes - allowance + length, or the length if
                // the bucket was under the allowance (the ifElseRaw's comparison), as on TNA; no cap on row 0.
                if (limit != 0 && hdr.rcp.type != RCP_TYPE_SYN) {
                    bit<64> now;
                    tin_timestamp(1, now);
                    bit<32> epoch = now[POLICE_EPOCH_SHIFT + 31:POLICE_EPOCH_SHIFT];
                    // The 5-tuple in four 32-bit words; the low and the high halves of their exclusive-or
                    // are two different hashes (different bits of the flow), one per row.
                    bit<32> hash;
                    hash_lrc(hdr.ipv4.src_addr ++ hdr.ipv4.dst_addr ++ hdr.udp.src_port ++ hdr.udp.dst_port
                             ++ 24w0 ++ hdr.ipv4.protocol, hash);
                    police_index_t i0 = hash[15:0];
                    police_index_t i1 = hash[31:16];

                    bit<32> old_epoch;
                    bit<1> new_epoch0;
                    rcp_police_row0_epoch_reg_praw(i0, epoch, 0, REG_WRITE, epoch, RELOP_NEQ, old_epoch, new_epoch0);
                    bit<32> b0;
                    bit<1> above0;
                    // Same epoch: the bucket is never above 0xffffffff, so operation 2: add the length. New
                    // epoch: above the allowance, add length - allowance; else write the length.
                    rcp_police_row0_bytes_reg_ifElseRaw(i0, len, len, new_epoch0 == 1 ? REG_WRITE : REG_ADD,
                                                        i0, 0, len - allowance, REG_ADD,
                                                        i0, new_epoch0 == 1 ? allowance : 32w0xffffffff, RELOP_GT,
                                                        b0, above0);
                    bit<32> bucket0 = new_epoch0 == 0 ? b0 + len : (above0 == 1 ? b0 - allowance + len : len);
                    if (bucket0 > limit) {                                                // comparison 3
                        bit<1> new_epoch1;
                        rcp_police_row1_epoch_reg_praw(i1, epoch, 0, REG_WRITE, epoch, RELOP_NEQ, old_epoch,
                                                       new_epoch1);
                        bit<32> b1;
                        bit<1> above1;
                        // Same epoch: add nothing if the packet would lift the bucket above the limit, else
                        // its length. New epoch: as in row 0 (the first packet always fits: the allowance is at
                        // least a frame).
                        rcp_police_row1_bytes_reg_ifElseRaw(i1, len, len, new_epoch1 == 1 ? REG_WRITE : REG_ADD,
                                                            i1, 0, new_epoch1 == 1 ? len - allowance : 32w0, REG_ADD,
                                                            i1, new_epoch1 == 1 ? allowance : limit - len, RELOP_GT,
                                                            b1, above1);
                        if (new_epoch1 == 0 && above1 == 1) {                             // comparison 4
                            rcp_policed_reg_raw(p, 0, len, REG_ADD, unused);
                            sume_metadata.dst_port = 0;
                            policed = true;
                        }
                    }
                }
#endif

                if (!policed) {
#ifdef RCP_FEEDFORWARD
                    bool ending = hdr.rcp.type == RCP_TYPE_DATA && (hdr.rcp.flags & RCP_FLAG_ENDING) != 0;
                    if (hdr.rcp.type == RCP_TYPE_SYN || ending) {
                        size_pkts_t grant;
                        rcp_grant_packets_reg_rw(p, 0, REG_READ, grant);
                        size_pkts_t committed = hdr.rcp.size;                             // min(size, P)
                        if (committed > grant) { committed = grant; }
                        if (ending) {
                            rcp_committed_departures_reg_raw(p, 0, (bit<32>) committed, REG_ADD, unused);
                        } else {
                            rcp_committed_arrivals_reg_raw(p, 0, (bit<32>) committed, REG_ADD, unused);
                            size_pkts_t long_packets;
                            rcp_long_packets_reg_rw(p, 0, REG_READ, long_packets);
                            rate_kbps_t not_syn_rate;
                            if (hdr.rcp.size > long_packets) {
                                bit<32> before;
                                bit<32> base;
                                rcp_long_arrivals_reg_raw(p, 0, 1, REG_ADD, before);
                                rcp_arrivals_base_reg_rw(p, 0, REG_READ, base);
                                bit<32> k = before - base;                                // 0 for the first
                                if (k >= SYN_RATES) { k = SYN_RATES - 1; }
                                rcp_syn_rate_reg_rw(p ++ k[SYN_RATE_BITS - 1:0], 0, REG_READ, not_syn_rate);
                            } else {
                                rcp_short_rate_reg_rw(p, 0, REG_READ, not_syn_rate);
                            }
                            if (~not_syn_rate < R) { R = ~not_syn_rate; }
                        }
                    }
#endif
                    if (hdr.rcp.rtt_us != 0 && hdr.rcp.rtt_us[31:RCP_RTT_BITS] == 0) {   // comparison 1
                        rcp_rtt_sum_reg_raw(p, 0, hdr.rcp.rtt_us, REG_ADD, unused);       // addition 2
                        rcp_rtt_count_reg_raw(p, 0, 1, REG_ADD, unused);                  // addition 3
                    }
                    if (hdr.rcp.rate_kbps > R) {                                          // comparison 2
                        hdr.udp.checksum = udp_csum_replace32(hdr.udp.checksum, hdr.rcp.rate_kbps, R);
                        hdr.rcp.rate_kbps = R;
                    }
                }
            }
        }
    }
}

control RcpDeparser(packet_out pkt, in headers_t hdr, in user_metadata_t meta, inout digest_data_t digest,
                    inout sume_metadata_t sume_metadata) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.rcp);
    }
}

SimpleSumeSwitch(RcpParser(), RcpPipe(), RcpDeparser()) main;

// p4rcp for NetFPGA SUME (SimpleSumeSwitch, P4-NetFPGA workflow). One
// pipeline: route, then the RCP work for the chosen output port.
// docs/porting.md says what differs from v1model.
#include <core.p4>
#include <sume_switch.p4>

#include "../../shared/headers.p4"
#include "../../shared/checksum.p4"

#define REG_READ  8w0
#define REG_WRITE 8w1
#define REG_ADD   8w2
// Four 10G ports NF0..NF3 (one-hot bits 0, 2, 4, 6); registers have 8 cells (3-bit index).
typedef bit<3> port_index_t;

// P4-NetFPGA register externs: <name>_reg_raw reads, adds or writes one cell atomically.
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(3)
extern void input_bytes_reg_raw(in port_index_t index, in bit<32> newVal, in bit<32> incVal,
                                in bit<8> opCode, out bit<32> result);
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(3)
extern void rtt_sum_reg_raw(in port_index_t index, in bit<32> newVal, in bit<32> incVal,
                            in bit<8> opCode, out bit<32> result);
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(3)
extern void rtt_count_reg_raw(in port_index_t index, in bit<32> newVal, in bit<32> incVal,
                              in bit<8> opCode, out bit<32> result);
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(3)
extern void queue_depth_reg_rw(in port_index_t index, in bit<32> newVal, in bit<8> opCode,
                               out bit<32> result);
@Xilinx_MaxLatency(1) @Xilinx_ControlWidth(3)
extern void rate_reg_rw(in port_index_t index, in rate_kbps_t newVal, in bit<8> opCode,
                        out rate_kbps_t result);

struct user_metadata_t {
    port_index_t port_index;
}

// SimpleSumeSwitch requires a digest type; p4rcp sends no digests.
struct digest_data_t {
    bit<256> unused;
}

parser RcpParser(packet_in pkt, out headers_t hdr, out user_metadata_t meta, out digest_data_t digest,
                 inout sume_metadata_t sume_metadata) {
    state start {
        meta.port_index = 0;
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

    apply {
        if (!hdr.ipv4.isValid() || hdr.ipv4.version != 4 || hdr.ipv4.ihl != 5 || hdr.ipv4.ttl <= 1) {
            drop_routing_v4();
            return;
        }
        routing_v4.apply();
        if (sume_metadata.dst_port == 0 || port_index.apply().miss) {
            return;
        }
        port_index_t p = meta.port_index;
        bit<32> unused;

        input_bytes_reg_raw(p, 0, (bit<32>) sume_metadata.pkt_len, REG_ADD, unused);     // addition 1

        // The output queue's occupancy on arrival, in 32-byte words (the SUME
        // metadata's unit); the control plane converts it to bytes.
        bit<16> queue_words = 0;
        if (p == 0) { queue_words = sume_metadata.nf0_q_size; }
        else if (p == 1) { queue_words = sume_metadata.nf1_q_size; }
        else if (p == 2) { queue_words = sume_metadata.nf2_q_size; }
        else { queue_words = sume_metadata.nf3_q_size; }
        queue_depth_reg_rw(p, (bit<32>) queue_words, REG_WRITE, unused);

        bool is_forward_rcp = hdr.rcp.isValid() && hdr.udp.length >= UDP_HEADER_BYTES + RCP_HEADER_BYTES
            && hdr.rcp.version == RCP_VERSION && (hdr.rcp.type == RCP_TYPE_DATA || hdr.rcp.type == RCP_TYPE_SYN);
        if (is_forward_rcp) {
            if (hdr.rcp.rtt_us != 0 && hdr.rcp.rtt_us <= RCP_MAX_RTT_US) {               // comparison 1
                rtt_sum_reg_raw(p, 0, hdr.rcp.rtt_us, REG_ADD, unused);                   // addition 2
                rtt_count_reg_raw(p, 0, 1, REG_ADD, unused);                              // addition 3
            }
            rate_kbps_t R;
            rate_reg_rw(p, 0, REG_READ, R);
            if (R != 0 && hdr.rcp.rate_kbps > R) {                                        // comparison 2
                hdr.udp.checksum = udp_csum_replace32(hdr.udp.checksum, hdr.rcp.rate_kbps, R);
                hdr.rcp.rate_kbps = R;
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

// IPv4 routing: longest-prefix match to an egress port and next-hop MACs.
#ifndef P4RCP_V1MODEL_ROUTING_P4
#define P4RCP_V1MODEL_ROUTING_P4

#include "size.p4"
// Frames the pipeline received per ingress port. Compared with the kernel's
// count of frames delivered to the switch's interfaces, it tells the
// experiments whether bmv2 dropped input for want of CPU.
@name(".ingress_packets") counter<PortId_t>(NUM_PORTS, CounterType.packets) ingress_packets;

control Routing(inout headers_t hdr, inout standard_metadata_t std_meta) {
    @name(".drop_routing_v4")
    action drop_routing_v4() {
        mark_to_drop(std_meta);
    }

    @name(".set_next_hop_routing_v4")
    action set_next_hop_routing_v4(bit<9> port, mac_addr_t src_mac, mac_addr_t dst_mac) {
        std_meta.egress_spec = port;
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    @name(".routing_v4")
    table routing_v4 {
        key = { hdr.ipv4.dst_addr: lpm @name("ipv4_dst"); }
        actions = { set_next_hop_routing_v4; drop_routing_v4; }
        default_action = drop_routing_v4();
        size = ROUTING_V4_SIZE;
    }

    apply {
        ingress_packets.count(std_meta.ingress_port);
        bool malformed = std_meta.parser_error != error.NoError || std_meta.checksum_error == 1;
        if (!hdr.ipv4.isValid() || malformed || hdr.ipv4.ttl <= 1) {
            mark_to_drop(std_meta);
        } else {
            routing_v4.apply();
        }
    }
}

#endif

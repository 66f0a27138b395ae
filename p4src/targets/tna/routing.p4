// IPv4 routing on TNA: the same table and action names as v1model.

control RcpIngress(inout headers_t hdr, inout ingress_metadata_t meta,
                   in ingress_intrinsic_metadata_t ig_intr_md,
                   in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    @name(".drop_routing_v4")
    action drop_routing_v4() {
        ig_dprsr_md.drop_ctl = 1;
    }

    @name(".set_next_hop_routing_v4")
    action set_next_hop_routing_v4(PortId_t port, mac_addr_t src_mac, mac_addr_t dst_mac) {
        ig_tm_md.ucast_egress_port = port;
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

    // RCP addition 1 runs here, on arrival, once the route chose the port:
    // Tofino's egress runs after the traffic manager's queues (see rcp.p4).
    // A counter extern, as on v1model: packets and bytes in one operation.
    @name(".rcp_input") Counter<bit<32>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) rcp_input;

    apply {
        bool malformed = ig_prsr_md.parser_err != 0 || meta.ipv4_checksum_error
            || hdr.ipv4.version != 4 || hdr.ipv4.ihl != 5;
        if (!hdr.ipv4.isValid() || malformed || hdr.ipv4.ttl <= 1) {
            drop_routing_v4();
        } else if (routing_v4.apply().hit) {
            rcp_input.count(ig_tm_md.ucast_egress_port);                                      // addition 1
        }
    }
}

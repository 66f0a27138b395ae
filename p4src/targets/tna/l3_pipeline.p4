// The host program's match-action pipeline: IPv4 routing, with the same table and action names as v1model,
// and RCP applied where the RCP library asks (p4src/lib/tna/rcp.p4): its ingress once the route chose the
// port, its egress in that port's egress, the stamp bridged between the two.

control L3Ingress(inout tna_headers_t hdr, inout ingress_metadata_t meta,
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

    RcpIngress() rcp;

    apply {
        hdr.bridged.setValid();         // before RcpIngress writes the stamp into it
        bool malformed = ig_prsr_md.parser_err != 0 || meta.ipv4_checksum_error
            || hdr.ipv4.version != 4 || hdr.ipv4.ihl != 5;
        if (!hdr.ipv4.isValid() || malformed || hdr.ipv4.ttl <= 1) {
            drop_routing_v4();
        } else if (routing_v4.apply().hit) {
            rcp.apply(hdr.ipv4, hdr.udp, hdr.rcp, ig_tm_md.ucast_egress_port, ig_prsr_md.global_tstamp,
                      meta.rcp, hdr.bridged.rate, ig_dprsr_md);
        }
    }
}

control L3Egress(inout tna_headers_t hdr, inout egress_metadata_t meta,
                 in egress_intrinsic_metadata_t eg_intr_md,
                 in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                 inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                 inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    RcpEgress() rcp;

    apply {
        rcp.apply(hdr.rcp, hdr.bridged.rate, eg_intr_md.egress_port, eg_intr_md.deq_qdepth);
        // The stamp changed the rate: the deparser folds it into a UDP checksum. A checksum of 0 means none
        // (RFC 768): keep it. Tofino sets a bool from a branch, not from a comparison's value.
        if (hdr.rcp.isValid() && hdr.udp.checksum != 0) { meta.udp_checksum_update = true; }
        hdr.bridged.setInvalid();
    }
}

// TNA parsers and deparsers. Both parsers take the RCP header of forward packets only (DATA, SYN, REF
// of this version), as on v1model: ingress for their weight class and policing, before the queue; egress
// for the rest of the RCP work, and to keep the UDP checksum's residual so that the deparser can fold
// the stamped rate back in (Checksum extern).
//
// What Tofino's parser asks for (docs/porting.md): a state matches at most 4 bytes (Tofino 1: one 16-bit
// and two 8-bit match registers), so the UDP ports are looked at before the header is extracted and the
// length after; a checksum operation sits in the state that extracts its field; metadata starts at 0
// (@pa_auto_init_metadata), so no parser writes a field twice.

parser RcpIngressParser(packet_in pkt, out tna_headers_t hdr, out ingress_metadata_t meta,
                        out ingress_intrinsic_metadata_t ig_intr_md) {
    Checksum() ipv4_checksum;

    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        ipv4_checksum.add(hdr.ipv4);
        meta.ipv4_checksum_error = ipv4_checksum.verify();
        // Only whole, unfragmented datagrams without options hold an L4 header we can trust.
        transition select(hdr.ipv4.ihl, hdr.ipv4.flags[0:0], hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    // RCP when the source or the destination port is RCP's: the two ports, ahead of the extraction.
    state parse_udp {
        transition select(pkt.lookahead<bit<32>>()) {
            RCP_UDP_PORT ++ 16w0 &&& 0xffff0000: parse_rcp_udp;
            16w0 ++ RCP_UDP_PORT &&& 0x0000ffff: parse_rcp_udp;
            default: accept;
        }
    }

    // A datagram on the RCP port too short for the header is not RCP (a range keyset: no comparator).
    state parse_rcp_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.length) {
            UDP_HEADER_BYTES + RCP_HEADER_BYTES .. 0xffff: parse_rcp_type;
            default: accept;
        }
    }

    state parse_rcp_type {
        transition select(pkt.lookahead<bit<8>>()) {
            RCP_VERSION ++ RCP_TYPE_DATA: parse_rcp;
            RCP_VERSION ++ RCP_TYPE_SYN: parse_rcp;
            RCP_VERSION ++ RCP_TYPE_REF: parse_rcp;
            default: accept;
        }
    }

    state parse_rcp {
        pkt.extract(hdr.rcp);
        transition accept;
    }
}

control RcpIngressDeparser(packet_out pkt, inout tna_headers_t hdr, in ingress_metadata_t meta,
                           in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_checksum;

    apply {
        hdr.ipv4.hdr_checksum = ipv4_checksum.update({
            hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
            hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
            hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr});
        pkt.emit(hdr);          // the bridged header first
    }
}

parser RcpEgressParser(packet_in pkt, out tna_headers_t hdr, out egress_metadata_t meta,
                       out egress_intrinsic_metadata_t eg_intr_md) {
    Checksum() udp_checksum;

    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridged);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        // Ingress dropped options.
        transition select(hdr.ipv4.flags[0:0], hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (0, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        transition select(pkt.lookahead<bit<32>>()) {
            RCP_UDP_PORT ++ 16w0 &&& 0xffff0000: parse_rcp_udp;
            16w0 ++ RCP_UDP_PORT &&& 0x0000ffff: parse_rcp_udp;
            default: accept;
        }
    }

    // The residual leaves out the two words the stamp may change: the checksum and the rate.
    state parse_rcp_udp {
        pkt.extract(hdr.udp);
        udp_checksum.subtract({hdr.udp.checksum});
        transition select(hdr.udp.length) {
            UDP_HEADER_BYTES + RCP_HEADER_BYTES .. 0xffff: parse_rcp_type;
            default: accept;
        }
    }

    state parse_rcp_type {
        transition select(pkt.lookahead<bit<8>>()) {
            RCP_VERSION ++ RCP_TYPE_DATA: parse_rcp;
            RCP_VERSION ++ RCP_TYPE_SYN: parse_rcp;
            RCP_VERSION ++ RCP_TYPE_REF: parse_rcp;
            default: accept;
        }
    }

    state parse_rcp {
        pkt.extract(hdr.rcp);
        udp_checksum.subtract({hdr.rcp.rate_kbps});
        udp_checksum.subtract_all_and_deposit(meta.udp_checksum_residual);
        transition accept;
    }
}

control RcpEgressDeparser(packet_out pkt, inout tna_headers_t hdr, in egress_metadata_t meta,
                          in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() udp_checksum;

    apply {
        // A datagram sent without a checksum (0) keeps 0 (rcp.p4 sets the condition only for the others);
        // a computed 0 goes out as 0xFFFF.
        if (meta.udp_checksum_update) {
            hdr.udp.checksum = udp_checksum.update({hdr.rcp.rate_kbps, meta.udp_checksum_residual}, true);
        }
        pkt.emit(hdr);          // the bridged header is invalid by now (rcp.p4)
    }
}

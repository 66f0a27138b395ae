// TNA parsers and deparsers. Ingress routes on IPv4 and parses the RCP header of
// forward packets (their weight class and policing run before the queue); egress
// re-parses the packet down to the RCP header and keeps the UDP checksum's
// residual so the deparser can fold the stamped rate back in (Checksum extern).

parser RcpIngressParser(packet_in pkt, out tna_headers_t hdr, out ingress_metadata_t meta,
                        out ingress_intrinsic_metadata_t ig_intr_md) {
    Checksum() ipv4_checksum;

    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        meta.ipv4_checksum_error = false;
        meta.rate = 0;
        meta.police_bytes = 0;
        meta.police_limit = 0;
        meta.police_epoch = 0;
        meta.police_len = 0;
        meta.police_leak_less_len = 0;
        meta.police_room = 0;
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
        transition select(hdr.ipv4.ihl, hdr.ipv4.flags[0:0], hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        // Tofino's parser has no comparator: the length test is a range keyset.
        transition select(hdr.udp.length, hdr.udp.src_port, hdr.udp.dst_port) {
            (UDP_HEADER_BYTES + RCP_HEADER_BYTES .. 0xffff, RCP_UDP_PORT, _): parse_rcp_type;
            (UDP_HEADER_BYTES + RCP_HEADER_BYTES .. 0xffff, _, RCP_UDP_PORT): parse_rcp_type;
            default: accept;
        }
    }

    // Forward RCP packets only (DATA, SYN, REF of this version), as on v1model.
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
        meta.udp_checksum_residual = 0;
        pkt.extract(hdr.bridged);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        // Ingress dropped options; only unfragmented datagrams carry a trustworthy L4 header.
        transition select(hdr.ipv4.flags[0:0], hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (0, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.length, hdr.udp.src_port, hdr.udp.dst_port) {
            (UDP_HEADER_BYTES + RCP_HEADER_BYTES .. 0xffff, RCP_UDP_PORT, _): parse_rcp;
            (UDP_HEADER_BYTES + RCP_HEADER_BYTES .. 0xffff, _, RCP_UDP_PORT): parse_rcp;
            default: accept;
        }
    }

    state parse_rcp {
        pkt.extract(hdr.rcp);
        udp_checksum.subtract({hdr.udp.checksum});
        udp_checksum.subtract({hdr.rcp.rate_kbps});
        meta.udp_checksum_residual = udp_checksum.get();
        transition accept;
    }
}

control RcpEgressDeparser(packet_out pkt, inout tna_headers_t hdr, in egress_metadata_t meta,
                          in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() udp_checksum;

    apply {
        // A datagram sent without a checksum (0) keeps 0; a computed 0 goes out as 0xFFFF.
        if (hdr.rcp.isValid() && hdr.udp.checksum != 0) {
            hdr.udp.checksum = udp_checksum.update({hdr.rcp.rate_kbps, meta.udp_checksum_residual}, true);
        }
        pkt.emit(hdr);          // the bridged header is invalid by now (rcp.p4)
    }
}

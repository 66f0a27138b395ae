// v1model parser, checksum controls and deparser.
// What is dropped and what is merely not parsed: docs/protocol.md.
#ifndef P4RCP_V1MODEL_PARSER_P4
#define P4RCP_V1MODEL_PARSER_P4

#include <core.p4>
#include <v1model.p4>
#include "../../shared/headers.p4"
#include "metadata.p4"

error { Ipv4HeaderUnsupported }

parser RcpParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t std_meta) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        // The IPv4 checksum is recomputed over a 20-byte header only.
        verify(hdr.ipv4.version == 4 && hdr.ipv4.ihl == 5, error.Ipv4HeaderUnsupported);
        // flags[0:0] is MF: only whole, unfragmented datagrams hold an L4 header we can trust.
        transition select(hdr.ipv4.flags[0:0], hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (0, 0, IP_PROTO_UDP): parse_udp;
            (0, 0, IP_PROTO_TCP): parse_tcp;
            default: accept;
        }
    }

    state parse_tcp {
        packet.extract(hdr.tcp);
        transition accept;
    }

    state parse_udp {
        packet.extract(hdr.udp);
        // A datagram on the RCP port too short for the header is not RCP.
        meta.udp_fits_rcp = hdr.udp.length >= UDP_HEADER_BYTES + RCP_HEADER_BYTES;
        transition select(meta.udp_fits_rcp, hdr.udp.src_port, hdr.udp.dst_port) {
            (true, RCP_UDP_PORT, _): parse_rcp_type;
            (true, _, RCP_UDP_PORT): parse_rcp_type;
            default: accept;
        }
    }

    // Only forward RCP packets (DATA, SYN and REF of this version) become hdr.rcp: the router classifies,
    // polices, samples and stamps nothing else, and the others pass through as payload, byte for byte.
    state parse_rcp_type {
        transition select(packet.lookahead<bit<8>>()) {
            RCP_VERSION ++ RCP_TYPE_DATA: parse_rcp;
            RCP_VERSION ++ RCP_TYPE_SYN: parse_rcp;
            RCP_VERSION ++ RCP_TYPE_REF: parse_rcp;
            default: accept;
        }
    }

    // XCP's header behind a forward RCP header that announces it, as the ns-3 router reads it: a datagram too
    // short to hold it passes as RCP alone.
    state parse_rcp {
        packet.extract(hdr.rcp);
        transition select(hdr.rcp.flags, hdr.udp.length >= UDP_HEADER_BYTES + RCP_HEADER_BYTES + XCP_HEADER_BYTES) {
            (RCP_FLAG_XCP &&& RCP_FLAG_XCP, true): parse_xcp;
            default: accept;
        }
    }

    state parse_xcp {
        packet.extract(hdr.xcp);
        transition accept;
    }
}

control RcpVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

// The UDP checksum is not recomputed here: the RCP stamp updates it
// incrementally (shared/checksum.p4), which every target can do.
control RcpComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control RcpDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
        packet.emit(hdr.tcp);
        packet.emit(hdr.rcp);
        packet.emit(hdr.xcp);
    }
}

#endif

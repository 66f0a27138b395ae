// IPv4 routing on TNA: the same table and action names as v1model; then, for
// forward RCP packets, the weight class (weights, policing parameters, the
// stamp bridged to egress) and policing, before the traffic manager's queues.

control RcpIngress(inout tna_headers_t hdr, inout ingress_metadata_t meta,
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
    // A counter extern, as on v1model: packets and bytes in one operation. Ingress byte counts include the
    // frame's 4-byte FCS, which count() takes off, so that bytes are the frame as R counts it (bmv2's
    // packet_length, the policer's length). Each pipe counts the packets that arrive on its own ports: the
    // control plane adds up the pipes (control_plane/p4runtime.py).
    @name(".rcp_input") Counter<bit<32>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) rcp_input;

    // Per (port, weight class) cell, written by the control plane: the stamp min(gamma C, w_k R)
    // (RCP_RATE_NONE, never written: no stamp), the policing allowance and limit (0: off). Each is read by
    // a stateful ALU of its own once the class chose the cell: a Tofino table addresses one stateful ALU.
    @name(".rcp_rate")         Register<rate_kbps_t, rate_cell_t>(RATE_CELLS, RCP_RATE_NONE) rcp_rate;
    @name(".rcp_police_bytes") Register<bit<32>, rate_cell_t>(RATE_CELLS, 0) rcp_police_bytes;
    @name(".rcp_police_limit") Register<bit<32>, rate_cell_t>(RATE_CELLS, 0) rcp_police_limit;
    RegisterAction<rate_kbps_t, rate_cell_t, rate_kbps_t>(rcp_rate) read_rate = {
        void apply(inout rate_kbps_t value, out rate_kbps_t read) { read = value; }
    };
    RegisterAction<bit<32>, rate_cell_t, bit<32>>(rcp_police_bytes) read_police_bytes = {
        void apply(inout bit<32> value, out bit<32> read) { read = value; }
    };
    RegisterAction<bit<32>, rate_cell_t, bit<32>>(rcp_police_limit) read_police_limit = {
        void apply(inout bit<32> value, out bit<32> read) { read = value; }
    };

    @name(".set_cell_weight_classifier")
    action set_cell_weight_classifier(rate_cell_t cell) {
        meta.cell = cell;
    }

    // Installed by the control plane for every (RCP port, DSCP): the cell of the DSCP's weight class
    // (class 0, weight 1, where the operator set none). docs/design.md, "Weights".
    @name(".weight_classifier")
    table weight_classifier {
        key = {
            ig_tm_md.ucast_egress_port: exact @name("port");
            hdr.ipv4.dscp: exact @name("dscp");
        }
        actions = { set_cell_weight_classifier; }
        const default_action = set_cell_weight_classifier(UNCLASSIFIED_CELL);
        size = WEIGHT_CLASSIFIER_SIZE;
    }

    Policer() policer;

    apply {
        bool malformed = ig_prsr_md.parser_err != 0 || meta.ipv4_checksum_error
            || hdr.ipv4.version != 4 || hdr.ipv4.ihl != 5;
        if (!hdr.ipv4.isValid() || malformed || hdr.ipv4.ttl <= 1) {
            drop_routing_v4();
        } else if (routing_v4.apply().hit) {
            rcp_input.count(ig_tm_md.ucast_egress_port, ETHERNET_FCS_BYTES);                  // addition 1
            if (hdr.rcp.isValid()) {                      // forward RCP packets only (parser.p4)
                weight_classifier.apply();
                meta.rate = read_rate.execute(meta.cell);
                meta.police_bytes = read_police_bytes.execute(meta.cell);
                meta.police_limit = read_police_limit.execute(meta.cell);
                // DATA and REF: a SYN opens a flow and is sent whatever R says.
                if (meta.police_limit != 0 && hdr.rcp.type != RCP_TYPE_SYN) {
                    policer.apply(hdr, meta, ig_prsr_md.global_tstamp, ig_tm_md.ucast_egress_port, ig_dprsr_md);
                }
            }
        }
        hdr.bridged.setValid();
        hdr.bridged.rate = meta.rate;
    }
}

// RCP's ingress on TNA, once the host's route chose the output port: addition 1, and for forward RCP
// packets the stamp of the packet's cell (read here, bridged to egress by the host) and, with policing,
// the policer, before the traffic manager's queues. Tofino's egress runs after those queues, so addition 1
// counts here, on arrival.

// RCP's working values in ingress. The host keeps them in its ingress metadata, which it starts at 0
// (@pa_auto_init_metadata) rather than spend an instruction on each.
struct rcp_ingress_md_t {
    rate_cell_t cell;               // the packet's (port, weight class)
#ifdef RCP_POLICING
    rcp_police_md_t police;
#endif
}

control RcpIngress(in ipv4_h ipv4, in udp_h udp, in rcp_h rcp, in PortId_t port, in bit<48> timestamp_ns,
                   inout rcp_ingress_md_t md, inout rate_kbps_t stamp,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    // Packets and bytes in one operation, as v1model's counter. Ingress byte counts include the frame's
    // 4-byte FCS, which count() takes off, so that bytes are the frame as R counts it (bmv2's
    // packet_length, the policer's length). Each pipe counts the packets that arrive on its own ports: the
    // control plane adds up the pipes (control_plane/p4runtime.py).
    @name(".rcp_input") Counter<bit<32>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) rcp_input;

    // Per (port, weight class) cell, written by the control plane: the stamp min(gamma C, w_k R) as its
    // complement (defines.p4: 0, the reset value, is RCP_RATE_NONE, no stamp, as on v1model and SUME; an
    // initial value in the register would hold only until the driver or a reset clears it). The ALU
    // returns the complement of the cell as RCP_RATE_NONE - cell, one subtraction: the same value as a NOT,
    // which p4c's open-source back end writes in a form its assembler (bfas) rejects.
    @name(".rcp_rate") Register<rate_kbps_t, rate_cell_t>(RATE_CELLS, 0) rcp_rate;
    RegisterAction<rate_kbps_t, rate_cell_t, rate_kbps_t>(rcp_rate) read_rate = {
        void apply(inout rate_kbps_t value, out rate_kbps_t read) { read = RCP_RATE_NONE - value; }
    };

#ifdef RCP_WEIGHTS
    @name(".set_cell_weight_classifier")
    action set_cell_weight_classifier(rate_cell_t cell) {
        md.cell = cell;
    }

    // Installed by the control plane for every (RCP port, DSCP): the cell of the DSCP's weight class
    // (class 0, weight 1, where the operator set none). docs/design.md, "Weights".
    @name(".weight_classifier")
    table weight_classifier {
        key = {
            port: exact @name("port");
            ipv4.dscp: exact @name("dscp");
        }
        actions = { set_cell_weight_classifier; }
        const default_action = set_cell_weight_classifier(UNCLASSIFIED_CELL);
        size = WEIGHT_CLASSIFIER_SIZE;
    }
#endif

#ifdef RCP_POLICING
    // The cell's allowance and limit (0: off), each read by a stateful ALU of its own: a Tofino table
    // addresses one stateful ALU.
    @name(".rcp_police_bytes") Register<bit<32>, rate_cell_t>(RATE_CELLS, 0) rcp_police_bytes;
    @name(".rcp_police_limit") Register<bit<32>, rate_cell_t>(RATE_CELLS, 0) rcp_police_limit;
    RegisterAction<bit<32>, rate_cell_t, bit<32>>(rcp_police_bytes) read_police_bytes = {
        void apply(inout bit<32> value, out bit<32> read) { read = value; }
    };
    RegisterAction<bit<32>, rate_cell_t, bit<32>>(rcp_police_limit) read_police_limit = {
        void apply(inout bit<32> value, out bit<32> read) { read = value; }
    };
    RcpPolicer() policer;
#endif

    apply {
        rcp_input.count(port, ETHERNET_FCS_BYTES);                                             // addition 1
        if (rcp.isValid()) {
#ifdef RCP_WEIGHTS
            weight_classifier.apply();
#else
            md.cell = port ++ (weight_class_t) 0;
#endif
            stamp = read_rate.execute(md.cell);
#ifdef RCP_POLICING
            md.police.bytes = read_police_bytes.execute(md.cell);
            md.police.limit = read_police_limit.execute(md.cell);
            // DATA and REF: a SYN opens a flow and is sent whatever R says.
            policer.apply(ipv4, udp, md.police, timestamp_ns, port,
                          md.police.limit != 0 && rcp.type != RCP_TYPE_SYN, ig_dprsr_md);
#endif
        }
    }
}

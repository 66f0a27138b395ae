// Policing on TNA, in ingress before the traffic manager's queues: the v1model rule (docs/dataplane.md,
// "Policing") with one stateful ALU per row. A cell is a pair (epoch, bytes); the epoch is 2^24 ns of
// the ingress parser's global timestamp. Row 0 counts every packet; a packet over the limit there goes to
// row 1, which counts what it lets through and drops the rest.
//
// What the ALUs do differently from v1model: the first packet of an epoch into a cell of an earlier
// epoch leaves bytes - allowance + length, saturating at 0 (v1model: max(bytes - allowance, 0) + length;
// the same but for a bucket below the allowance, where Tofino counts up to one packet less), and row 0
// has no cap on a bucket carried into a new epoch (a flow that was far above its allowance stays in
// row 1, which meters it, until its row-0 bucket has leaked back under the limit). The allowance is at
// least one frame (control_plane/policing.py), so the first packet of an epoch always fits in row 1.

control Policer(inout tna_headers_t hdr, inout ingress_metadata_t meta, in bit<48> timestamp_ns,
                in PortId_t port, inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    // bmv2's CRC-32 and CRC-16 (p4rcp/police.py), so that a flow has the same cells on both targets.
    CRCPolynomial<bit<32>>(32w0x04C11DB7, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) crc32;
    CRCPolynomial<bit<16>>(16w0x8005, true, false, false, 16w0, 16w0) crc16;
    Hash<police_index_t>(HashAlgorithm_t.CUSTOM, crc32) hash_row0;
    Hash<police_index_t>(HashAlgorithm_t.CUSTOM, crc16) hash_row1;

    @name(".rcp_police_row0") Register<police_cell_t, police_index_t>(POLICE_CELLS) rcp_police_row0;
    @name(".rcp_police_row1") Register<police_cell_t, police_index_t>(POLICE_CELLS) rcp_police_row1;
    @name(".rcp_policed") Counter<bit<32>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) rcp_policed;

    // Row 0: the bucket with this packet in it.
    RegisterAction<police_cell_t, police_index_t, bit<32>>(rcp_police_row0) count_flow = {
        void apply(inout police_cell_t cell, out bit<32> bytes) {
            if (cell.epoch == meta.police_epoch) {
                cell.bytes = cell.bytes |+| meta.police_len;
            } else {
                cell.bytes = cell.bytes |-| meta.police_leak_less_len;
            }
            cell.epoch = meta.police_epoch;
            bytes = cell.bytes;
        }
    };

    // Row 1: counts the packet if it fits under the limit; says whether it did not.
    RegisterAction<police_cell_t, police_index_t, bit<1>>(rcp_police_row1) meter_flow = {
        void apply(inout police_cell_t cell, out bit<1> over) {
            over = 0;
            if (cell.epoch != meta.police_epoch) {
                cell.bytes = cell.bytes |-| meta.police_leak_less_len;
            } else if (cell.bytes > meta.police_room) {
                over = 1;
            } else {
                cell.bytes = cell.bytes + meta.police_len;
            }
            cell.epoch = meta.police_epoch;
        }
    };

    apply {
        meta.police_epoch = (bit<32>) timestamp_ns[47:24];
        meta.police_len = (bit<32>) hdr.ipv4.total_len + 14;         // the Ethernet frame, as R counts it
        meta.police_leak_less_len = meta.police_bytes |-| meta.police_len;
        meta.police_room = meta.police_limit |-| meta.police_len;
        bit<32> bytes = count_flow.execute(hash_row0.get({hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                                                          hdr.udp.src_port, hdr.udp.dst_port}));
        if (bytes > meta.police_limit) {                                                   // comparison 3
            if (meter_flow.execute(hash_row1.get({hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                                                  hdr.udp.src_port, hdr.udp.dst_port})) == 1) {
                ig_dprsr_md.drop_ctl = 1;
                rcp_policed.count(port, ETHERNET_FCS_BYTES);
            }
        }
    }
}

// Policing of senders that ignore R (docs/design.md, "Policing"). In ingress, before the queue, so that
// the excess never takes queue space or link time from compliant flows.
//
// A flow (the UDP 5-tuple) has a byte bucket in each of two rows of cells, by two different hashes (row 0
// the XOR of the addresses' low halves and the ports, row 1 CRC-16 of the key: index_flow and meter_flow below). A cell
// holds the epoch it was last written in and its bucket: a packet adds its length; the first packet of a
// later epoch first lets the bucket leak the allowance (saturating at 0), so a flow may send the allowance
// per epoch and, for a while, the limit more (both in rcp_police). The rows are used in
// series: row 0 counts every packet, and only a packet whose row-0 bucket is over the limit (its flow, or
// a flow sharing its cell, sends above the allowance) goes on to row 1, which counts the packets it lets
// through and drops the rest. So a packet is dropped only when both its cells are over, as in a count-min
// sketch, and a compliant packet pays for one cell. The epoch is the data plane's own clock; the control
// plane writes the allowance and the limit per (port, class) from R (p4rcp/police.py) and never
// touches a cell. No timestamp is multiplied by a rate.
#ifndef P4RCP_V1MODEL_POLICING_P4
#define P4RCP_V1MODEL_POLICING_P4

#include "size.p4"

// Allowance (bytes per epoch) in bits 63..32 and bucket limit (bytes) in 31..0 per cell
// (port << WEIGHT_CLASS_BITS) | class, written by the control plane; a limit of 0 turns policing off there.
// Read by the weight class's action (weights.p4), which knows the cell: no table of its own. One 64-bit
// register rather than two (TNA, SUME): bmv2 charges a packet for each register read and each field it
// writes (docs/dataplane.md, "Writing P4 that bmv2 runs cheaply").
@name(".rcp_police") register<bit<64>, rate_cell_t>(RATE_CELLS) rcp_police;
#define POLICE_ALLOWANCE meta.police[63:32]
#define POLICE_LIMIT meta.police[31:0]

// This epoch's number (the data plane's clock in epochs), and its cell value with an empty bucket (the same
// bits, shifted in one step: two operators fewer for the test every packet makes).
#define POLICE_EPOCH std_meta.ingress_global_timestamp[POLICE_EPOCH_SHIFT + 31:POLICE_EPOCH_SHIFT]
#define POLICE_BASE ((((bit<64>) std_meta.ingress_global_timestamp) << (32 - POLICE_EPOCH_SHIFT)) \
                     & 0xFFFFFFFF00000000)

control Policer(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std_meta) {
    // Cells: epoch in bits 63..32, bytes in 31..0.
    @name(".rcp_police_row0") register<bit<64>, police_index_t>(POLICE_CELLS) rcp_police_row0;
    @name(".rcp_police_row1") register<bit<64>, police_index_t>(POLICE_CELLS) rcp_police_row1;
    // Packets and bytes dropped per output port: the control plane takes them out of y, which the routing
    // action counted on arrival, so that the excess does not lower R for everyone.
    @name(".rcp_policed") counter<PortId_t>(NUM_PORTS, CounterType.packets_and_bytes) rcp_policed;

    // Row 0's index: the addresses' low 16 bits and the ports, xored, computed from the headers. bmv2
    // hashes only fields copied first into a header (police_key: about 8 000 instructions a packet), so row 0,
    // which every packet pays for, uses what costs three operators; row 1, which only packets over the limit
    // reach, keeps a CRC of the whole key (docs/design.md, "Policing"). An action of its own: in the same
    // block as the read, p4c would copy the index into temporaries.
    action index_flow() {
        meta.police_index = (hdr.ipv4.src_addr ^ hdr.ipv4.dst_addr)[15:0] ^ hdr.udp.src_port ^ hdr.udp.dst_port;
    }

    // Row 0, every packet: the flow's row-0 bucket with this packet in it, written back at once (the rare
    // branches below write it again).
    action count_flow() {
        rcp_police_row0.read(meta.police_cell, meta.police_index);
        meta.police_cell = meta.police_cell + (bit<64>) std_meta.packet_length;               // addition 4
        rcp_police_row0.write(meta.police_index, meta.police_cell);
    }

    // The cell was last written in an earlier epoch: its bucket leaks the allowance, saturating at 0.
    // Adding 2^32 - allowance moves a cell of the last epoch to this one with the allowance taken out; the
    // maximum with this epoch's empty bucket saturates, and empties a cell older than the last epoch.
    action carry_cell() {
        meta.police_cell = meta.police_cell + ((64w1 << 32) - (bit<64>) POLICE_ALLOWANCE)
                               > POLICE_BASE + (bit<64>) std_meta.packet_length
                           ? meta.police_cell + ((64w1 << 32) - (bit<64>) POLICE_ALLOWANCE)
                           : POLICE_BASE + (bit<64>) std_meta.packet_length;
    }

    // Row 0 counts every packet, so a flow far above its allowance keeps its cell full; carried into a new
    // epoch, the bucket is capped at the limit, so that the cell empties again once its flows slow down.
    action cap_cell() {
        meta.police_cell = meta.police_cell[31:0] > POLICE_LIMIT + std_meta.packet_length
                           ? POLICE_BASE + (bit<64>) (POLICE_LIMIT + std_meta.packet_length)
                           : meta.police_cell;
    }

    action write_row0() {
        rcp_police_row0.write(meta.police_index, meta.police_cell);
    }

    // Row 1, only for packets over the limit in row 0: the flow's row-1 bucket (CRC-16 of its key) with this
    // packet in it.
    action meter_flow() {
        meta.police_key.setValid();
        meta.police_key.src_addr = hdr.ipv4.src_addr;
        meta.police_key.dst_addr = hdr.ipv4.dst_addr;
        meta.police_key.src_port = hdr.udp.src_port;
        meta.police_key.dst_port = hdr.udp.dst_port;
        hash(meta.police_index, HashAlgorithm.crc16, 16w0, meta.police_key, (bit<32>) POLICE_CELLS);
        rcp_police_row1.read(meta.police_cell, meta.police_index);
        meta.police_cell = meta.police_cell + (bit<64>) std_meta.packet_length;
    }

    // Row 1 counts only the packets it lets through.
    action write_row1() {
        rcp_police_row1.write(meta.police_index, meta.police_cell);
    }

    // Over in both rows: drop. Row 1's cell stays as it was: the packet is not counted, and the cell is of
    // this epoch already (a cell's first packet of an epoch fits: the allowance is at least one frame).
    action drop_flow() {
        rcp_policed.count(std_meta.egress_spec);
        mark_to_drop(std_meta);
    }

    apply {
        index_flow();
        count_flow();
        // A compliant packet pays for one cell read and written and one condition; the branches are for
        // what is rare: a cell's first packet in an epoch (1 in 160 at 10 kpkt/s), a bucket over its limit.
        // The condition is both as one comparison: the difference is the bucket for a cell of this epoch and
        // wraps far above any limit for a cell of another.
        if (meta.police_cell - POLICE_BASE > (bit<64>) POLICE_LIMIT) {
            if (meta.police_cell[63:32] != POLICE_EPOCH) {
                carry_cell();
                cap_cell();
                write_row0();
            }
            if (meta.police_cell[31:0] > POLICE_LIMIT) {                                // comparison 3
                meter_flow();
                if (meta.police_cell[63:32] != POLICE_EPOCH) {
                    carry_cell();
                }
                if (meta.police_cell[31:0] <= POLICE_LIMIT) {                           // comparison 4
                    write_row1();
                } else {
                    drop_flow();
                }
            }
        }
    }
}

#endif

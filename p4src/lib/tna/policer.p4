// Policing on TNA, in ingress before the traffic manager's queues: the v1model rule (docs/dataplane.md,
// "Policing"). A sketch cell is two registers, as on SUME: the epoch it was last written in and its bucket
// (bytes); the epoch is 2^24 ns of the ingress parser's global timestamp. Row 0 counts every packet; a
// packet over the limit there goes to row 1, which counts what it lets through and drops the rest.
//
// A stateful ALU takes at most two packet values (p4c's Tofino back end, mau/tofino/input_xbar.cpp), so
// a cell's epoch is one stateful ALU and its bucket another, which runs one of two RegisterActions: the
// bucket of a cell already in this epoch takes the packet; the bucket of a cell of an earlier epoch leaks
// first. Each compares the bucket with one precomputed bound, so that no gateway compares two fields.
//
// What the ALUs do differently from v1model: the first packet of an epoch into a cell of an earlier
// epoch leaves bytes - allowance + length, saturating at 0 (v1model: max(bytes - allowance, 0) + length;
// the same but for a bucket below the allowance, where Tofino counts up to one packet less), and row 0
// has no cap on a bucket carried into a new epoch (a flow that was far above its allowance stays in
// row 1, which meters it, until its row-0 bucket has leaked back under the limit). The allowance is at
// least one frame (p4rcp/police.py), so the first packet of an epoch always fits in row 1.

// The working values of one packet: the cell's allowance and limit, then what the bounds are made of.
struct rcp_police_md_t {
    bit<32> bytes;          // the cell's allowance per epoch
    bit<32> limit;          // the cell's bucket limit; 0 = policing off
    bit<32> epoch;
    bit<32> len;
    bit<32> leak;           // a new epoch's leak: the allowance less this packet, saturating at 0
    bit<32> room;           // the most a bucket may hold before this packet: the limit less it
    bit<32> leak_room;      // the same for a bucket that leaks first: the limit plus the leak
    bit<32> limit_and_allowance;
    bit<32> bound0;         // what row 0's bucket RegisterAction compares with and adds or leaks:
    bit<32> delta0;         // one pair for both of its actions (a stateful ALU takes two packet values)
    bit<32> bound1;         // the same for row 1
    bit<32> delta1;
}

// `policed`: the packet is policed (its cell's limit is set, and it is no SYN), known only once the cell is
// read; the frame's length and the epoch, which need no cell, are made before that, in a stage of their own.
control RcpPolicer(in ipv4_h ipv4, in udp_h udp, inout rcp_police_md_t police, in bit<48> timestamp_ns,
                   in PortId_t port, in bool policed, inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    // Row 1 is bmv2's CRC-16 (p4rcp/police.py), so that a flow has the same row-1 cell on both targets; row 0
    // a CRC-32 from the hash unit, where bmv2 xors words of the key (a CRC there costs every packet a copy).
    CRCPolynomial<bit<32>>(32w0x04C11DB7, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) crc32;
    CRCPolynomial<bit<16>>(16w0x8005, true, false, false, 16w0, 16w0) crc16;
    Hash<police_index_t>(HashAlgorithm_t.CUSTOM, crc32) hash_row0;
    Hash<police_index_t>(HashAlgorithm_t.CUSTOM, crc16) hash_row1;
    // The IPv4 length into a 32-bit field: a 16-bit header field cannot be an operand of 32-bit
    // arithmetic (PHV containers of one size per operation), an identity hash moves it across.
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) ip_length;

    @name(".rcp_police_row0_epoch") Register<bit<32>, police_index_t>(POLICE_CELLS, 0) rcp_police_row0_epoch;
    @name(".rcp_police_row0_bytes") Register<bit<32>, police_index_t>(POLICE_CELLS, 0) rcp_police_row0_bytes;
    @name(".rcp_police_row1_epoch") Register<bit<32>, police_index_t>(POLICE_CELLS, 0) rcp_police_row1_epoch;
    @name(".rcp_police_row1_bytes") Register<bit<32>, police_index_t>(POLICE_CELLS, 0) rcp_police_row1_bytes;
    @name(".rcp_policed") Counter<bit<32>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) rcp_policed;

    // A cell's epoch: this one from now on; says whether it was an earlier one.
    RegisterAction<bit<32>, police_index_t, bit<1>>(rcp_police_row0_epoch) new_epoch_row0 = {
        void apply(inout bit<32> epoch, out bit<1> earlier) {
            earlier = 0;
            if (epoch != police.epoch) { earlier = 1; }
            epoch = police.epoch;
        }
    };
    RegisterAction<bit<32>, police_index_t, bit<1>>(rcp_police_row1_epoch) new_epoch_row1 = {
        void apply(inout bit<32> epoch, out bit<1> earlier) {
            earlier = 0;
            if (epoch != police.epoch) { earlier = 1; }
            epoch = police.epoch;
        }
    };

    // Row 0: the bucket with this packet in it; says whether that is over the limit.
    RegisterAction<bit<32>, police_index_t, bit<1>>(rcp_police_row0_bytes) count_row0 = {
        void apply(inout bit<32> bytes, out bit<1> over) {
            over = 0;
            if (bytes > police.bound0) { over = 1; }                                  // comparison 3
            bytes = bytes |+| police.delta0;
        }
    };
    RegisterAction<bit<32>, police_index_t, bit<1>>(rcp_police_row0_bytes) leak_row0 = {
        void apply(inout bit<32> bytes, out bit<1> over) {
            over = 0;
            if (bytes > police.bound0) { over = 1; }                                  // comparison 3
            bytes = bytes |-| police.delta0;
        }
    };

    // Row 1: counts the packet if it fits under the limit; says whether it did not. The first packet of
    // an epoch always fits.
    RegisterAction<bit<32>, police_index_t, bit<1>>(rcp_police_row1_bytes) meter_row1 = {
        void apply(inout bit<32> bytes, out bit<1> over) {
            over = 0;
            if (bytes > police.bound1) {                                               // comparison 4
                over = 1;
            } else {
                bytes = bytes + police.delta1;
            }
        }
    };
    RegisterAction<bit<32>, police_index_t, void>(rcp_police_row1_bytes) leak_row1 = {
        void apply(inout bit<32> bytes) { bytes = bytes |-| police.delta1; }
    };

    // The bounds in three actions, each a table of its own: an action runs in one stage, and each uses
    // what the one before computes.
    action frame_and_epoch() {
        police.epoch = (bit<32>) timestamp_ns[47:24];
        police.len = ip_length.get({ipv4.total_len}) + 14;  // the Ethernet frame, as R counts it
    }
    action limit_and_allowance() {
        police.limit_and_allowance = police.limit |+| police.bytes;
    }
    action bounds() {
        police.leak = police.bytes |-| police.len;
        police.room = police.limit |-| police.len;
        // max(bytes - leak, 0) > limit exactly when bytes > limit + leak (the allowance covers a frame)
        police.leak_room = police.limit_and_allowance |-| police.len;
    }

    apply {
        frame_and_epoch();
        if (!policed) { return; }
        limit_and_allowance();
        bounds();
        police_index_t i0 = hash_row0.get({ipv4.src_addr, ipv4.dst_addr, udp.src_port, udp.dst_port});
        bit<1> over;
        if (new_epoch_row0.execute(i0) == 1) {
            police.bound0 = police.leak_room;
            police.delta0 = police.leak;
            over = leak_row0.execute(i0);
        } else {
            police.bound0 = police.room;
            police.delta0 = police.len;
            over = count_row0.execute(i0);
        }
        if (over == 1) {
            police_index_t i1 = hash_row1.get({ipv4.src_addr, ipv4.dst_addr,
                                               udp.src_port, udp.dst_port});
            if (new_epoch_row1.execute(i1) == 1) {
                police.delta1 = police.leak;
                leak_row1.execute(i1);
            } else {
                police.bound1 = police.room;
                police.delta1 = police.len;
                if (meter_row1.execute(i1) == 1) {
                    ig_dprsr_md.drop_ctl = 1;
                    rcp_policed.count(port, ETHERNET_FCS_BYTES);
                }
            }
        }
    }
}

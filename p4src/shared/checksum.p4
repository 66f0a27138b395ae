// Incremental Internet checksum update (RFC 1624, eq. 3):
//     HC' = ~(~HC + ~m + m')
// for a 32-bit field that changed from m to m'. Additions only, no payload
// walk, so every target can run it after the RCP stamp.
#ifndef P4RCP_CHECKSUM_P4
#define P4RCP_CHECKSUM_P4

bit<16> csum16_replace32(in bit<16> checksum, in bit<32> old_value,
                                  in bit<32> new_value) {
    bit<32> sum = (bit<32>) ~checksum
                + (bit<32>) ~old_value[31:16] + (bit<32>) ~old_value[15:0]
                + (bit<32>) new_value[31:16] + (bit<32>) new_value[15:0];
    // Five 16-bit terms fit in 19 bits: two end-around carries suffice.
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return ~sum[15:0];
}

// The same for a 16-bit field (e.g. the IPv4 TTL/protocol word), for targets
// without a checksum unit.
bit<16> csum16_replace16(in bit<16> checksum, in bit<16> old_value, in bit<16> new_value) {
    bit<32> sum = (bit<32>) ~checksum + (bit<32>) ~old_value + (bit<32>) new_value;
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return ~sum[15:0];
}

// The UDP checksum after a 32-bit field changed. 0 means "no checksum" in
// UDP: a datagram sent without one keeps none, and a computed 0 goes out as
// 0xFFFF. Written without branches (the ternaries sit inside arithmetic):
// p4c turns a branch into separate bmv2 tables, each costing a lookup per
// packet.
bit<16> udp_csum_replace32(in bit<16> checksum, in bit<32> old_value,
                                    in bit<32> new_value) {
    bit<16> updated = csum16_replace32(checksum, old_value, new_value);
    updated = updated - (updated == 0 ? 16w1 : 16w0);          // 0 -> 0xFFFF
    return updated & (checksum == 0 ? 16w0 : 16w0xffff);      // none stays none
}

#endif

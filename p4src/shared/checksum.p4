// Incremental Internet checksum update (RFC 1624) for a 32-bit field that
// changed from m to m'. Additions only, no payload walk, so every target can
// run it after the RCP stamp.
//
// In one's-complement arithmetic ~x = -x, so RFC 1624's eq. 3,
//     HC' = ~(~HC + ~m + m'),
// equals the sum HC + m + ~m' folded to 16 bits, without the final
// complement. The fold of a positive sum is never 0, so a checksum that
// computes to zero comes out as 0xFFFF, the form UDP sends (RFC 768). 0 in
// the packet means "no checksum": a datagram sent without one keeps none (a
// mask, not a branch: p4c makes every branch a bmv2 table). The PTF suite
// checks the result against Scapy's full computation, including both cases.
#ifndef P4RCP_CHECKSUM_P4
#define P4RCP_CHECKSUM_P4

// For hardware pipelines: five 16-bit terms (< 2^19), two end-around carries.
bit<16> udp_csum_replace32(in bit<16> checksum, in bit<32> old_value, in bit<32> new_value) {
    bit<32> sum = (bit<32>) checksum + (bit<32>) old_value[31:16] + (bit<32>) old_value[15:0]
                + (bit<32>) ~new_value[31:16] + (bit<32>) ~new_value[15:0];
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return sum[15:0] & (checksum == 0 ? 16w0 : 16w0xffff);
}

// For software switches, where the stamp lowers the field (new_value <
// old_value): the same result with the sum used once. bmv2 evaluates every
// use of an intermediate value again (p4c substitutes it into each use), so
// the two folds above cost four evaluations of the sum. Since ~m' = 2^32 - 1
// - m' and 2^32 - 1 = 0xFFFF * 0x10001 folds to one's-complement zero,
// HC + (m - m') is congruent to HC + m + ~m' modulo 0xFFFF, and both are
// positive, so both fold to the same value (and m - m' saves bmv2 a
// complement and two widenings). Multiplying by 0x0001_0001_0001_0001 adds
// the sum's 16-bit digits into the top 16 bits of the 64-bit product, each
// lower digit's carry included: the end-around-carry fold, for any sum below
// 2^48 (p4rcp/tests/test_checksum_fold.py checks it against RFC 1624's
// folds; the PTF suite checks the packets against Scapy).
bit<16> udp_csum_replace32_mul(in bit<16> checksum, in bit<32> old_value, in bit<32> new_value) {
    bit<64> sum = (bit<64>) checksum + (bit<64>) (old_value - new_value);
    return (sum * 0x0001000100010001)[63:48] & (checksum == 0 ? 16w0 : 16w0xffff);
}

// RFC 1624 eq. 3 for a 16-bit field (e.g. the IPv4 TTL/protocol word), for
// targets without a checksum unit.
bit<16> csum16_replace16(in bit<16> checksum, in bit<16> old_value, in bit<16> new_value) {
    bit<32> sum = (bit<32>) ~checksum + (bit<32>) ~old_value + (bit<32>) new_value;
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return ~sum[15:0];
}

#endif

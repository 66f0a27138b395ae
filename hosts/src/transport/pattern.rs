//! Flow content: byte `o` of flow `f` is a pure function of `(f, o)`, so the
//! receiver checks every byte it delivers without the sender sending a
//! digest. The 8-byte word `w = o / 8` is `splitmix64(key(f) ^ w)`, written
//! little-endian; byte `o` is byte `o % 8` of that word.

use std::ops::Range;

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn key(flow_id: u32) -> u64 {
    (flow_id as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93) ^ 0x7263_7034_7263_7034
}

fn word(flow_id: u32, w: u64) -> [u8; 8] {
    splitmix64(key(flow_id) ^ w).to_le_bytes()
}

/// The byte at `offset` of flow `flow_id`.
#[cfg(test)]
pub fn byte_at(flow_id: u32, offset: u64) -> u8 {
    word(flow_id, offset / 8)[(offset % 8) as usize]
}

/// The flow's bytes from `offset` on, for a buffer of `len` bytes, word by
/// word: (range in the buffer, the word, range of the same bytes in it).
fn pieces(flow_id: u32, offset: u64, len: usize) -> impl Iterator<Item = (Range<usize>, [u8; 8], Range<usize>)> {
    let mut i = 0;
    std::iter::from_fn(move || {
        if i >= len {
            return None;
        }
        let o = offset + i as u64;
        let start = (o % 8) as usize;
        let n = (8 - start).min(len - i);
        let piece = (i..i + n, word(flow_id, o / 8), start..start + n);
        i += n;
        Some(piece)
    })
}

/// Fill `buf` with the flow's bytes starting at `offset`.
pub fn fill(flow_id: u32, offset: u64, buf: &mut [u8]) {
    for (at, w, from) in pieces(flow_id, offset, buf.len()) {
        buf[at].copy_from_slice(&w[from]);
    }
}

/// Does `buf` hold the flow's bytes starting at `offset`?
pub fn check(flow_id: u32, offset: u64, buf: &[u8]) -> bool {
    pieces(flow_id, offset, buf.len()).all(|(at, w, from)| buf[at] == w[from])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_matches_byte_at_for_any_alignment() {
        for start in 0..20u64 {
            let mut buf = vec![0u8; 37];
            fill(42, start, &mut buf);
            for (i, b) in buf.iter().enumerate() {
                assert_eq!(*b, byte_at(42, start + i as u64));
            }
            assert!(check(42, start, &buf));
        }
    }

    #[test]
    fn check_detects_corruption_offset_and_flow() {
        let mut buf = vec![0u8; 1000];
        fill(7, 12_345, &mut buf);
        assert!(check(7, 12_345, &buf));
        assert!(!check(8, 12_345, &buf));
        assert!(!check(7, 12_346, &buf));
        buf[500] ^= 1;
        assert!(!check(7, 12_345, &buf));
    }
}

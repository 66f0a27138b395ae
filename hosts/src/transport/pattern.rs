//! Flow content: byte `o` of flow `f` is a pure function of `(f, o)`, so the
//! receiver checks every byte it delivers without the sender sending a
//! digest. The 8-byte word `w = o / 8` is `splitmix64(key(f) ^ w)`, written
//! little-endian; byte `o` is byte `o % 8` of that word.

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

/// A buffer of the flow's bytes from `offset` on, cut at word boundaries:
/// the bytes before the first boundary (head), whole words from word
/// `first_word` on, and the bytes after the last boundary (tail). Whole
/// words are most of a packet's payload (DATA offsets are multiples of the
/// MSS), and are filled and checked as u64s.
struct Split {
    head: usize,
    first_word: u64,
}

fn split(offset: u64, len: usize) -> Split {
    let head = ((8 - offset % 8) % 8).min(len as u64) as usize;
    Split {
        head,
        first_word: (offset + head as u64) / 8,
    }
}

/// Fill `buf` with the flow's bytes starting at `offset`.
pub fn fill(flow_id: u32, offset: u64, buf: &mut [u8]) {
    let Split { head, first_word } = split(offset, buf.len());
    let (head_bytes, rest) = buf.split_at_mut(head);
    if head > 0 {
        let at = (offset % 8) as usize;
        head_bytes.copy_from_slice(&word(flow_id, offset / 8)[at..at + head]);
    }
    let k = key(flow_id);
    let mut words = rest.chunks_exact_mut(8);
    let mut w = first_word;
    for chunk in &mut words {
        chunk.copy_from_slice(&splitmix64(k ^ w).to_le_bytes());
        w += 1;
    }
    let tail = words.into_remainder();
    let n = tail.len();
    if n > 0 {
        tail.copy_from_slice(&word(flow_id, w)[..n]);
    }
}

/// Does `buf` hold the flow's bytes starting at `offset`?
pub fn check(flow_id: u32, offset: u64, buf: &[u8]) -> bool {
    let Split { head, first_word } = split(offset, buf.len());
    let (head_bytes, rest) = buf.split_at(head);
    if head > 0 {
        let at = (offset % 8) as usize;
        if head_bytes != &word(flow_id, offset / 8)[at..at + head] {
            return false;
        }
    }
    let k = key(flow_id);
    let words = rest.chunks_exact(8);
    let tail = words.remainder();
    let mut w = first_word;
    for chunk in words {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(chunk);
        if u64::from_le_bytes(bytes) != splitmix64(k ^ w) {
            return false;
        }
        w += 1;
    }
    tail.is_empty() || tail == &word(flow_id, w)[..tail.len()]
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
    fn short_buffers_within_one_word_or_two() {
        for start in 0..16u64 {
            for len in 0..20 {
                let mut buf = vec![0u8; len];
                fill(3, start, &mut buf);
                let want: Vec<u8> = (0..len as u64).map(|i| byte_at(3, start + i)).collect();
                assert_eq!(buf, want, "start {start} len {len}");
                assert!(check(3, start, &buf));
                if len > 0 {
                    buf[len - 1] ^= 0x80;
                    assert!(!check(3, start, &buf), "start {start} len {len}");
                }
            }
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

//! The XCP congestion header (`docs/xcp.md`): 12 bytes that follow the RCP
//! header in every datagram of an XCP flow, announced by the RCP header's
//! [`FLAG_XCP`]. This module is the only Rust definition of it; the RCP
//! header's `rtt_us` is XCP's H_rtt.
//!
//! | offset | field            | meaning                                                   |
//! |--------|------------------|-----------------------------------------------------------|
//! | 16     | `cwnd_bytes` u32 | H_cwnd: the sender's window, bytes of Ethernet frames     |
//! | 20     | `x_ns` u32       | x = rtt s / cwnd, ns: what the router sums and multiplies |
//! | 24     | `feedback` i32   | H_feedback, bytes: forward, the request routers lower; on an answer (ACK, SYNACK, ...), the echo of the acknowledged packet's |
//!
//! x is the time the packet's s frame bytes take at the flow's rate
//! cwnd / rtt, computed by the sender so that a router needs no division
//! (`p4rcp/xcp_law.py` has the laws in these symbols).

use super::wire::ParseError;

/// RCP header flag: the XCP congestion header follows the RCP header.
pub const FLAG_XCP: u8 = 0x80;
/// Length of the XCP congestion header.
pub const XCP_HEADER_LEN: usize = 12;
/// Offsets of its fields from the start of the UDP payload.
pub const XCP_CWND_OFFSET: usize = super::wire::RCP_HEADER_LEN;
pub const XCP_X_OFFSET: usize = XCP_CWND_OFFSET + 4;
pub const XCP_FEEDBACK_OFFSET: usize = XCP_CWND_OFFSET + 8;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XcpHeader {
    /// H_cwnd, bytes of Ethernet frames.
    pub cwnd_bytes: u32,
    /// rtt * s / cwnd in ns (saturating; 0 while the sender knows no RTT).
    pub x_ns: u32,
    /// H_feedback, bytes (signed).
    pub feedback: i32,
}

impl XcpHeader {
    /// The header a sender with window `cwnd` (frame bytes) and RTT estimate
    /// `rtt_s` (0: none yet) puts on a packet of `s` frame bytes, asking for
    /// `feedback` bytes.
    pub fn forward(cwnd: f64, rtt_s: f64, s: usize, feedback: f64) -> XcpHeader {
        let cwnd = cwnd.max(1.0);
        XcpHeader {
            cwnd_bytes: cwnd.round().clamp(1.0, u32::MAX as f64) as u32,
            x_ns: (rtt_s.max(0.0) * s as f64 / cwnd * 1e9).round().clamp(0.0, u32::MAX as f64) as u32,
            feedback: feedback.round().clamp(i32::MIN as f64, i32::MAX as f64) as i32,
        }
    }

    /// The receiver's answer to a packet that carried `self`: its feedback
    /// echoed, nothing else (an answer is not traffic routers control).
    pub fn echo(&self) -> XcpHeader {
        XcpHeader {
            cwnd_bytes: 0,
            x_ns: 0,
            feedback: self.feedback,
        }
    }

    /// Parse the header at the start of `buf` (the bytes after the RCP header).
    pub fn parse(buf: &[u8]) -> Result<XcpHeader, ParseError> {
        let b = buf.get(..XCP_HEADER_LEN).ok_or(ParseError::Truncated)?;
        let word = |at: usize| [b[at], b[at + 1], b[at + 2], b[at + 3]];
        Ok(XcpHeader {
            cwnd_bytes: u32::from_be_bytes(word(0)),
            x_ns: u32::from_be_bytes(word(4)),
            feedback: i32::from_be_bytes(word(8)),
        })
    }

    /// Append the 12 bytes to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.cwnd_bytes.to_be_bytes());
        out.extend_from_slice(&self.x_ns.to_be_bytes());
        out.extend_from_slice(&self.feedback.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_big_endian_and_feedback_signed() {
        let h = XcpHeader {
            cwnd_bytes: 0x0102_0304,
            x_ns: 0x0a0b_0c0d,
            feedback: -2,
        };
        let mut out = Vec::new();
        h.write(&mut out);
        assert_eq!(out, vec![1, 2, 3, 4, 0x0a, 0x0b, 0x0c, 0x0d, 0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(XcpHeader::parse(&out), Ok(h));
        assert_eq!(XcpHeader::parse(&out[..11]), Err(ParseError::Truncated));
        assert_eq!((XCP_CWND_OFFSET, XCP_X_OFFSET, XCP_FEEDBACK_OFFSET), (16, 20, 24));
    }

    #[test]
    fn the_sender_computes_x() {
        // 100 ms, 1500-byte frames, 15 000-byte window: 10 packets per RTT, 10 ms each
        let h = XcpHeader::forward(15_000.0, 0.1, 1500, 3000.4);
        assert_eq!((h.cwnd_bytes, h.x_ns, h.feedback), (15_000, 10_000_000, 3000));
        // no RTT yet: x 0; extremes saturate instead of wrapping
        assert_eq!(XcpHeader::forward(15_000.0, 0.0, 1500, 0.0).x_ns, 0);
        let big = XcpHeader::forward(1.0, 8.0, 1500, -1e12);
        assert_eq!((big.x_ns, big.feedback), (u32::MAX, i32::MIN));
        assert_eq!(XcpHeader::forward(1e12, 0.1, 1500, 1e12).cwnd_bytes, u32::MAX);
        let e = h.echo();
        assert_eq!((e.cwnd_bytes, e.x_ns, e.feedback), (0, 0, 3000));
    }
}

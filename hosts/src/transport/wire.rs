//! The p4rcp wire format: the 16-byte RCP header of `docs/protocol.md` and
//! the host transport header that follows it ("Host transport" in the same
//! document). This module is the only Rust definition of both.
//!
//! Every multi-byte field is big-endian (network byte order). Parsing never
//! panics: anything that is not a well-formed p4rcp datagram is an
//! [`ParseError`], which the hosts count and drop.

use std::fmt;

/// UDP port of RCP datagrams (source or destination), `docs/protocol.md`.
pub const RCP_UDP_PORT: u16 = 6577;
/// Version carried in the high 4 bits of byte 0.
pub const RCP_VERSION: u8 = 1;
/// Length of the RCP header.
pub const RCP_HEADER_LEN: usize = 16;
/// Largest RTT (µs) a router accepts as a valid sample (`RCP_MAX_RTT_US`):
/// 2^23 - 1, so that routers test the high bits (`docs/protocol.md`).
pub const RCP_MAX_RTT_US: u32 = (1 << 23) - 1;
/// The lowest rate RCP gives a flow: routers clamp R there (the control
/// plane's R_min) and senders send no slower (`--min-rate`'s default).
pub const RCP_MIN_RATE_KBPS: u32 = 10;

/// Bytes of the host header common to every packet type (after the RCP header).
pub const COMMON_LEN: usize = 12;
/// Offset of the type-specific body.
pub const BODY_OFFSET: usize = RCP_HEADER_LEN + COMMON_LEN;
/// Bytes in front of the payload of a DATA packet (RCP + common + offset).
pub const DATA_HEADER_LEN: usize = BODY_OFFSET + 8;
/// Most SACK blocks one ACK carries.
pub const MAX_SACKS: usize = 4;
/// Ethernet header (14) + IPv4 header without options (20) + UDP header (8):
/// what a datagram's payload costs on top of itself in an Ethernet frame.
pub const FRAME_OVERHEAD: usize = 14 + 20 + 8;
/// `total_size` of a SYN whose flow has no size fixed in advance.
pub const SIZE_UNKNOWN: u64 = u64::MAX;

const SYN_BODY: usize = 12;
const SYNACK_BODY: usize = 4;
const ACK_FIXED_BODY: usize = 16;
const SACK_LEN: usize = 16;
const FIN_BODY: usize = 8;
const FINACK_BODY: usize = 12;
/// A SYN's and a FIN's Ethernet frame, bytes.
pub const SYN_FRAME_LEN: usize = FRAME_OVERHEAD + BODY_OFFSET + SYN_BODY;
pub const FIN_FRAME_LEN: usize = FRAME_OVERHEAD + BODY_OFFSET + FIN_BODY;

/// FINACK status bit: every byte delivered matched the flow's content pattern.
pub const STATUS_VERIFIED: u8 = 1;

/// RCP header flag on the first transmission of a flow's last DATA packet:
/// routers count departures by it (docs/protocol.md, "The RCP header").
pub const FLAG_LAST: u8 = 0x01;

/// RCP packet types (low 4 bits of byte 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PktType {
    Data = 0,
    Ack = 1,
    Syn = 2,
    SynAck = 3,
    Fin = 4,
    FinAck = 5,
    /// A probe a slow sender sends once per RTT between its DATA packets so
    /// that it hears R (ns-2's REF): stamped and sampled like DATA.
    Ref = 6,
    /// The receiver's answer to a REF: its stamped rate as feedback.
    RefAck = 7,
}

impl PktType {
    pub fn from_u8(v: u8) -> Option<PktType> {
        Some(match v {
            0 => PktType::Data,
            1 => PktType::Ack,
            2 => PktType::Syn,
            3 => PktType::SynAck,
            4 => PktType::Fin,
            6 => PktType::Ref,
            7 => PktType::RefAck,
            5 => PktType::FinAck,
            _ => return None,
        })
    }
}

/// The 16-byte RCP header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RcpHeader {
    pub ptype: PktType,
    pub flags: u8,
    pub reserved: u16,
    /// Rate the sender asks for, kb/s of Ethernet frames; routers lower it.
    pub rate_kbps: u32,
    /// Sender's RTT estimate in µs (0 = unknown).
    pub rtt_us: u32,
    /// On ACK / SYNACK / FINACK: the `rate_kbps` of the packet acknowledged.
    pub feedback_kbps: u32,
}

impl RcpHeader {
    pub fn new(ptype: PktType) -> RcpHeader {
        RcpHeader {
            ptype,
            flags: 0,
            reserved: 0,
            rate_kbps: 0,
            rtt_us: 0,
            feedback_kbps: 0,
        }
    }

    /// Parse the first 16 bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<RcpHeader, ParseError> {
        if buf.len() < RCP_HEADER_LEN {
            return Err(ParseError::TooShort);
        }
        let version = buf[0] >> 4;
        if version != RCP_VERSION {
            return Err(ParseError::BadVersion);
        }
        let ptype = PktType::from_u8(buf[0] & 0x0f).ok_or(ParseError::UnknownType)?;
        Ok(RcpHeader {
            ptype,
            flags: buf[1],
            reserved: be16(buf, 2),
            rate_kbps: be32(buf, 4),
            rtt_us: be32(buf, 8),
            feedback_kbps: be32(buf, 12),
        })
    }

    /// Append the 16 bytes to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.push((RCP_VERSION << 4) | (self.ptype as u8 & 0x0f));
        out.push(self.flags);
        out.extend_from_slice(&self.reserved.to_be_bytes());
        out.extend_from_slice(&self.rate_kbps.to_be_bytes());
        out.extend_from_slice(&self.rtt_us.to_be_bytes());
        out.extend_from_slice(&self.feedback_kbps.to_be_bytes());
    }
}

/// Host header fields every packet type carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Common {
    /// Chosen by the sender; with the sender's address it names the flow.
    pub flow_id: u32,
    /// DATA / SYN / FIN: transmission number of this packet (every
    /// transmission, retransmissions included, gets a new one).
    /// ACK / SYNACK / FINACK: the number of the packet acknowledged.
    pub pkt_seq: u32,
    /// DATA / SYN / FIN: sender clock in µs (wrapping).
    /// ACK / SYNACK / FINACK: echo of the acknowledged packet's value.
    pub ts_us: u32,
}

/// Selective acknowledgement blocks `[start, end)` (byte offsets) above the
/// cumulative acknowledgement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Sacks {
    len: u8,
    blocks: [(u64, u64); MAX_SACKS],
}

impl Sacks {
    /// Add a block; blocks past `MAX_SACKS` are ignored (returns false).
    pub fn push(&mut self, start: u64, end: u64) -> bool {
        if (self.len as usize) >= MAX_SACKS {
            return false;
        }
        self.blocks[self.len as usize] = (start, end);
        self.len += 1;
        true
    }
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.blocks[..self.len as usize]
    }
    pub fn len(&self) -> usize {
        self.len as usize
    }
    #[allow(dead_code)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Type-specific part of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body<'a> {
    /// `total_size`: bytes of the flow, or [`SIZE_UNKNOWN`]; `mss`: application
    /// bytes per DATA packet; `cc`: the sender's scheme (see [`cc_code`]).
    Syn {
        total_size: u64,
        mss: u16,
        cc: u8,
    },
    /// `window`: bytes beyond the cumulative ack the receiver will buffer.
    SynAck {
        window: u32,
    },
    Data {
        offset: u64,
        payload: &'a [u8],
    },
    Ack {
        cum_ack: u64,
        window: u32,
        sacks: Sacks,
    },
    Fin {
        final_size: u64,
    },
    FinAck {
        cum_ack: u64,
        status: u8,
    },
    /// The 12 common bytes only: flow id, its own transmission number, time.
    Ref,
    /// The common bytes of the REF it answers, echoed.
    RefAck,
}

impl Body<'_> {
    pub fn ptype(&self) -> PktType {
        match self {
            Body::Syn { .. } => PktType::Syn,
            Body::SynAck { .. } => PktType::SynAck,
            Body::Data { .. } => PktType::Data,
            Body::Ack { .. } => PktType::Ack,
            Body::Fin { .. } => PktType::Fin,
            Body::FinAck { .. } => PktType::FinAck,
            Body::Ref => PktType::Ref,
            Body::RefAck => PktType::RefAck,
        }
    }
}

/// A whole p4rcp datagram (UDP payload).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    pub rcp: RcpHeader,
    pub common: Common,
    pub body: Body<'a>,
}

/// Why a datagram was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ParseError {
    /// Shorter than the 16-byte RCP header.
    TooShort,
    /// Version field is not 1.
    BadVersion,
    /// Type field is not 0..=5.
    UnknownType,
    /// RCP header present but the host header or body is cut short.
    Truncated,
    /// Extra bytes after a fixed-length body.
    TrailingBytes,
    /// A field holds an impossible value (empty DATA, SACK start >= end,
    /// offset overflow, MSS 0, too many SACK blocks, ...).
    BadField,
}

impl ParseError {
    pub fn reason(&self) -> &'static str {
        match self {
            ParseError::TooShort => "too_short",
            ParseError::BadVersion => "bad_version",
            ParseError::UnknownType => "unknown_type",
            ParseError::Truncated => "truncated",
            ParseError::TrailingBytes => "trailing_bytes",
            ParseError::BadField => "bad_field",
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason())
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn be64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

/// Check that `buf` is exactly `BODY_OFFSET + n` bytes.
fn exact(buf: &[u8], n: usize) -> Result<(), ParseError> {
    let want = BODY_OFFSET + n;
    if buf.len() < want {
        Err(ParseError::Truncated)
    } else if buf.len() > want {
        Err(ParseError::TrailingBytes)
    } else {
        Ok(())
    }
}

impl<'a> Packet<'a> {
    /// Parse a UDP payload. Never panics, whatever the input.
    pub fn parse(buf: &'a [u8]) -> Result<Packet<'a>, ParseError> {
        let rcp = RcpHeader::parse(buf)?;
        if buf.len() < BODY_OFFSET {
            return Err(ParseError::Truncated);
        }
        let common = Common {
            flow_id: be32(buf, 16),
            pkt_seq: be32(buf, 20),
            ts_us: be32(buf, 24),
        };
        let b = BODY_OFFSET;
        let body = match rcp.ptype {
            PktType::Syn => {
                exact(buf, SYN_BODY)?;
                let mss = be16(buf, b + 8);
                if mss == 0 {
                    return Err(ParseError::BadField);
                }
                Body::Syn {
                    total_size: be64(buf, b),
                    mss,
                    cc: buf[b + 10],
                }
            }
            PktType::SynAck => {
                exact(buf, SYNACK_BODY)?;
                Body::SynAck { window: be32(buf, b) }
            }
            PktType::Data => {
                if buf.len() < DATA_HEADER_LEN {
                    return Err(ParseError::Truncated);
                }
                let offset = be64(buf, b);
                let payload = &buf[DATA_HEADER_LEN..];
                if payload.is_empty() || offset.checked_add(payload.len() as u64).is_none() {
                    return Err(ParseError::BadField);
                }
                Body::Data { offset, payload }
            }
            PktType::Ack => {
                if buf.len() < BODY_OFFSET + ACK_FIXED_BODY {
                    return Err(ParseError::Truncated);
                }
                let n = buf[b + 12] as usize;
                if n > MAX_SACKS {
                    return Err(ParseError::BadField);
                }
                exact(buf, ACK_FIXED_BODY + n * SACK_LEN)?;
                let cum_ack = be64(buf, b);
                let mut sacks = Sacks::default();
                for i in 0..n {
                    let at = b + ACK_FIXED_BODY + i * SACK_LEN;
                    let (s, e) = (be64(buf, at), be64(buf, at + 8));
                    if s >= e {
                        return Err(ParseError::BadField);
                    }
                    sacks.push(s, e);
                }
                Body::Ack {
                    cum_ack,
                    window: be32(buf, b + 8),
                    sacks,
                }
            }
            PktType::Fin => {
                exact(buf, FIN_BODY)?;
                Body::Fin {
                    final_size: be64(buf, b),
                }
            }
            PktType::FinAck => {
                exact(buf, FINACK_BODY)?;
                Body::FinAck {
                    cum_ack: be64(buf, b),
                    status: buf[b + 8],
                }
            }
            PktType::Ref => {
                exact(buf, 0)?;
                Body::Ref
            }
            PktType::RefAck => {
                exact(buf, 0)?;
                Body::RefAck
            }
        };
        Ok(Packet { rcp, common, body })
    }

    /// Write the datagram into `out` (cleared first). The RCP type is taken
    /// from the body, so the two cannot disagree.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.clear();
        let mut rcp = self.rcp;
        rcp.ptype = self.body.ptype();
        rcp.write(out);
        out.extend_from_slice(&self.common.flow_id.to_be_bytes());
        out.extend_from_slice(&self.common.pkt_seq.to_be_bytes());
        out.extend_from_slice(&self.common.ts_us.to_be_bytes());
        match self.body {
            Body::Syn { total_size, mss, cc } => {
                out.extend_from_slice(&total_size.to_be_bytes());
                out.extend_from_slice(&mss.to_be_bytes());
                out.push(cc);
                out.push(0);
            }
            Body::SynAck { window } => out.extend_from_slice(&window.to_be_bytes()),
            Body::Data { offset, payload } => {
                out.extend_from_slice(&offset.to_be_bytes());
                out.extend_from_slice(payload);
            }
            Body::Ack { cum_ack, window, sacks } => {
                out.extend_from_slice(&cum_ack.to_be_bytes());
                out.extend_from_slice(&window.to_be_bytes());
                out.push(sacks.len() as u8);
                out.extend_from_slice(&[0, 0, 0]);
                for &(s, e) in sacks.as_slice() {
                    out.extend_from_slice(&s.to_be_bytes());
                    out.extend_from_slice(&e.to_be_bytes());
                }
            }
            Body::Fin { final_size } => out.extend_from_slice(&final_size.to_be_bytes()),
            Body::FinAck { cum_ack, status } => {
                out.extend_from_slice(&cum_ack.to_be_bytes());
                out.push(status);
                out.extend_from_slice(&[0, 0, 0]);
            }
            Body::Ref | Body::RefAck => {}
        }
    }
}

/// Write the header of a DATA packet into `out` (cleared first); the caller
/// appends the payload. Same bytes as [`Packet::encode`] with `Body::Data`.
pub fn encode_data_header(rcp: &RcpHeader, common: &Common, offset: u64, out: &mut Vec<u8>) {
    out.clear();
    let mut rcp = *rcp;
    rcp.ptype = PktType::Data;
    rcp.write(out);
    out.extend_from_slice(&common.flow_id.to_be_bytes());
    out.extend_from_slice(&common.pkt_seq.to_be_bytes());
    out.extend_from_slice(&common.ts_us.to_be_bytes());
    out.extend_from_slice(&offset.to_be_bytes());
}

/// Bytes of the Ethernet frame carrying a UDP payload of `udp_payload` bytes
/// (the unit of every rate, `docs/protocol.md` "Units").
pub fn frame_bytes(udp_payload: usize) -> usize {
    FRAME_OVERHEAD + udp_payload
}

/// Scheme codes carried in the SYN (informational, for the receiver's record).
pub fn cc_code(scheme: &str) -> u8 {
    match scheme {
        "rcp" => 1,
        "allegro" => 2,
        "vivace" => 3,
        "vivace-loss" => 4,
        "vivace-latency" => 5,
        s if s.starts_with("fixed") => 6,
        "allegro-ref" => 7,
        "vivace-stop" => 8,
        "vivace-loss-p4rcp" => 9,
        _ => 0,
    }
}

/// Inverse of [`cc_code`].
pub fn cc_name(code: u8) -> &'static str {
    match code {
        1 => "rcp",
        2 => "allegro",
        3 => "vivace",
        4 => "vivace-loss",
        5 => "vivace-latency",
        6 => "fixed",
        7 => "allegro-ref",
        8 => "vivace-stop",
        9 => "vivace-loss-p4rcp",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    fn rcp(rate: u32, rtt: u32, fb: u32) -> RcpHeader {
        RcpHeader {
            ptype: PktType::Data,
            flags: 0,
            reserved: 0,
            rate_kbps: rate,
            rtt_us: rtt,
            feedback_kbps: fb,
        }
    }

    fn samples() -> Vec<(Vec<u8>, Packet<'static>)> {
        static PAYLOAD: [u8; 5] = [1, 2, 3, 4, 5];
        let c = Common {
            flow_id: 0xdead_beef,
            pkt_seq: 7,
            ts_us: 123_456,
        };
        let mut sacks = Sacks::default();
        sacks.push(10, 20);
        sacks.push(30, 40);
        let bodies = [
            Body::Syn {
                total_size: 200_000,
                mss: 1000,
                cc: 2,
            },
            Body::SynAck { window: 1 << 24 },
            Body::Data {
                offset: 1 << 40,
                payload: &PAYLOAD,
            },
            Body::Ack {
                cum_ack: 5,
                window: 77,
                sacks,
            },
            Body::Ack {
                cum_ack: 5,
                window: 77,
                sacks: Sacks::default(),
            },
            Body::Fin { final_size: 99 },
            Body::FinAck {
                cum_ack: 99,
                status: STATUS_VERIFIED,
            },
            Body::Ref,
            Body::RefAck,
        ];
        bodies
            .iter()
            .map(|b| {
                let p = Packet {
                    rcp: rcp(15_000, 30_000, 14_000),
                    common: c,
                    body: *b,
                };
                let mut out = Vec::new();
                p.encode(&mut out);
                let mut expect = p;
                expect.rcp.ptype = b.ptype();
                (out, expect)
            })
            .collect()
    }

    #[test]
    fn rcp_header_layout_matches_protocol_md() {
        // version 1, type 2 (SYN) -> 0x12; rate 15000 = 0x00003a98;
        // rtt 30000 us = 0x00007530; feedback 0.
        let mut h = RcpHeader::new(PktType::Syn);
        h.rate_kbps = 15_000;
        h.rtt_us = 30_000;
        let mut out = Vec::new();
        h.write(&mut out);
        assert_eq!(out, vec![0x12, 0, 0, 0, 0, 0, 0x3a, 0x98, 0, 0, 0x75, 0x30, 0, 0, 0, 0]);
        assert_eq!(RcpHeader::parse(&out), Ok(h));
    }

    #[test]
    fn roundtrip_every_type() {
        for (bytes, expect) in samples() {
            assert_eq!(Packet::parse(&bytes), Ok(expect), "{:?}", expect.body);
        }
    }

    #[test]
    fn data_header_helper_matches_encode() {
        let c = Common {
            flow_id: 1,
            pkt_seq: 2,
            ts_us: 3,
        };
        let p = Packet {
            rcp: rcp(1, 2, 3),
            common: c,
            body: Body::Data {
                offset: 9,
                payload: &[7, 7],
            },
        };
        let mut a = Vec::new();
        p.encode(&mut a);
        let mut b = Vec::new();
        encode_data_header(&p.rcp, &c, 9, &mut b);
        b.extend_from_slice(&[7, 7]);
        assert_eq!(a, b);
        assert_eq!(a.len(), DATA_HEADER_LEN + 2);
    }

    #[test]
    fn malformed_inputs_are_errors() {
        assert_eq!(Packet::parse(&[]), Err(ParseError::TooShort));
        assert_eq!(Packet::parse(&[0x10; 15]), Err(ParseError::TooShort));
        // version 2
        let mut v = samples()[0].0.clone();
        v[0] = 0x22;
        assert_eq!(Packet::parse(&v), Err(ParseError::BadVersion));
        // type 9
        v[0] = 0x19;
        assert_eq!(Packet::parse(&v), Err(ParseError::UnknownType));
        // RCP header only (what a router's test might send)
        let mut h = Vec::new();
        RcpHeader::new(PktType::Data).write(&mut h);
        assert_eq!(Packet::parse(&h), Err(ParseError::Truncated));
        // empty DATA payload
        let mut d = Vec::new();
        encode_data_header(&rcp(0, 0, 0), &Common::default(), 0, &mut d);
        assert_eq!(Packet::parse(&d), Err(ParseError::BadField));
        // DATA whose offset + len overflows
        let mut d = Vec::new();
        encode_data_header(&rcp(0, 0, 0), &Common::default(), u64::MAX, &mut d);
        d.push(1);
        assert_eq!(Packet::parse(&d), Err(ParseError::BadField));
        // SYN with mss 0
        let p = Packet {
            rcp: rcp(0, 0, 0),
            common: Common::default(),
            body: Body::Syn {
                total_size: 1,
                mss: 0,
                cc: 0,
            },
        };
        let mut s = Vec::new();
        p.encode(&mut s);
        assert_eq!(Packet::parse(&s), Err(ParseError::BadField));
        // FIN with a trailing byte, FIN cut short
        let p = Packet {
            rcp: rcp(0, 0, 0),
            common: Common::default(),
            body: Body::Fin { final_size: 1 },
        };
        let mut f = Vec::new();
        p.encode(&mut f);
        f.push(0);
        assert_eq!(Packet::parse(&f), Err(ParseError::TrailingBytes));
        f.truncate(f.len() - 2);
        assert_eq!(Packet::parse(&f), Err(ParseError::Truncated));
        // ACK claiming 5 SACK blocks, ACK with an empty block
        let mut sacks = Sacks::default();
        sacks.push(10, 20);
        let p = Packet {
            rcp: rcp(0, 0, 0),
            common: Common::default(),
            body: Body::Ack {
                cum_ack: 0,
                window: 0,
                sacks,
            },
        };
        let mut a = Vec::new();
        p.encode(&mut a);
        let n_at = BODY_OFFSET + 12;
        let mut a5 = a.clone();
        a5[n_at] = 5;
        assert_eq!(Packet::parse(&a5), Err(ParseError::BadField));
        let mut a2 = a.clone();
        a2[n_at] = 2; // claims 2 blocks, carries 1
        assert_eq!(Packet::parse(&a2), Err(ParseError::Truncated));
        let mut ae = a.clone();
        // end = start = 10
        ae[BODY_OFFSET + 16 + 8..BODY_OFFSET + 16 + 16].copy_from_slice(&10u64.to_be_bytes());
        assert_eq!(Packet::parse(&ae), Err(ParseError::BadField));
    }

    #[test]
    fn sacks_cap_at_max() {
        let mut s = Sacks::default();
        for i in 0..MAX_SACKS as u64 {
            assert!(s.push(i * 10, i * 10 + 5));
        }
        assert!(!s.push(100, 200));
        assert_eq!(s.len(), MAX_SACKS);
    }

    /// Property test: random bytes and random mutations of valid packets never
    /// panic; whatever parses re-encodes to the same bytes (except the
    /// reserved/pad bytes, which encode writes as 0).
    #[test]
    fn parser_fuzz() {
        let mut rng = SmallRng::seed_from_u64(0x5eed);
        let valid = samples();
        let mut out = Vec::new();
        for i in 0..200_000u32 {
            let mut buf: Vec<u8> = if i % 2 == 0 {
                let n = rng.gen_range(0..160);
                (0..n).map(|_| rng.gen()).collect()
            } else {
                let mut b = valid[rng.gen_range(0..valid.len())].0.clone();
                for _ in 0..rng.gen_range(1..4) {
                    match rng.gen_range(0..3) {
                        0 if !b.is_empty() => {
                            let at = rng.gen_range(0..b.len());
                            b[at] = rng.gen();
                        }
                        1 => b.truncate(rng.gen_range(0..=b.len())),
                        _ => b.push(rng.gen()),
                    }
                }
                b
            };
            if i % 7 == 0 && !buf.is_empty() {
                buf[0] = 0x10 | (buf[0] & 0x0f); // mostly version 1
            }
            if let Ok(p) = Packet::parse(&buf) {
                p.encode(&mut out);
                assert_eq!(out.len(), buf.len());
                assert_eq!(Packet::parse(&out), Ok(p));
            }
        }
    }

    #[test]
    fn frame_size_and_codes() {
        // 1000 bytes of data: 36 header + 1000 = 1036 UDP payload,
        // + 8 UDP + 20 IPv4 + 14 Ethernet = 1078.
        assert_eq!(frame_bytes(DATA_HEADER_LEN + 1000), 1078);
        for s in [
            "rcp",
            "allegro",
            "vivace",
            "vivace-loss",
            "vivace-latency",
            "fixed",
            "allegro-ref",
            "vivace-stop",
            "vivace-loss-p4rcp",
        ] {
            assert_eq!(cc_name(cc_code(s)), s);
        }
    }
}

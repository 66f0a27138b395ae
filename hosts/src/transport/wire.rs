//! The p4rcp wire format: the 16-byte RCP header of `docs/protocol.md` and
//! the host transport header that follows it ("Host transport" in the same
//! document). This module is the only Rust definition of both.
//!
//! Every multi-byte field is big-endian (network byte order). Parsing never
//! panics: anything that is not a well-formed p4rcp datagram is an
//! [`ParseError`], which the hosts count and drop.

use std::fmt;

use super::xcp_header::{XcpHeader, FLAG_XCP, XCP_HEADER_LEN};

/// UDP port of RCP datagrams (source or destination), `docs/protocol.md`.
pub const RCP_UDP_PORT: u16 = 6577;
/// Version carried in the high 4 bits of byte 0.
pub const RCP_VERSION: u8 = 1;
/// Length of the RCP header.
pub const RCP_HEADER_LEN: usize = 16;
/// Offsets of the RCP header's fields after byte 0 (version and type).
pub const RCP_FLAGS_OFFSET: usize = 1;
pub const RCP_SIZE_OFFSET: usize = 2;
pub const RCP_RATE_OFFSET: usize = 4;
pub const RCP_RTT_OFFSET: usize = 8;
pub const RCP_FEEDBACK_OFFSET: usize = 12;
/// A router takes `0 < rtt_us <= RCP_MAX_RTT_US` as a valid RTT sample:
/// the bits from this one up are 0, a test of bits every target makes in
/// one step (`docs/protocol.md`).
pub const RCP_RTT_BITS: u32 = 23;
/// Largest RTT (µs) a router accepts as a valid sample: 2^23 - 1.
pub const RCP_MAX_RTT_US: u32 = (1 << RCP_RTT_BITS) - 1;
/// The lowest rate RCP gives a flow: routers clamp R there (the control
/// plane's R_min) and senders send no slower (`--min-rate`'s default).
pub const RCP_MIN_RATE_KBPS: u32 = 10;

/// Bytes of the host header common to every packet type (after the RCP header).
pub const COMMON_LEN: usize = 12;
/// Offsets of the common host fields.
pub const FLOW_ID_OFFSET: usize = RCP_HEADER_LEN;
pub const PKT_SEQ_OFFSET: usize = RCP_HEADER_LEN + 4;
pub const TS_OFFSET: usize = RCP_HEADER_LEN + 8;
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
/// One SACK block: start and end, u64 each.
pub const SACK_LEN: usize = 16;
const FIN_BODY: usize = 8;
const FINACK_BODY: usize = 12;
/// Datagram (UDP payload) lengths of every type; an ACK's grows by
/// [`SACK_LEN`] per block, a DATA packet's by its payload.
pub const SYN_LEN: usize = BODY_OFFSET + SYN_BODY;
pub const SYNACK_LEN: usize = BODY_OFFSET + SYNACK_BODY;
pub const ACK_LEN: usize = BODY_OFFSET + ACK_FIXED_BODY;
pub const FIN_LEN: usize = BODY_OFFSET + FIN_BODY;
pub const FINACK_LEN: usize = BODY_OFFSET + FINACK_BODY;
pub const REF_LEN: usize = BODY_OFFSET;
/// A SYN's and a FIN's Ethernet frame, bytes.
pub const SYN_FRAME_LEN: usize = FRAME_OVERHEAD + SYN_LEN;
pub const FIN_FRAME_LEN: usize = FRAME_OVERHEAD + FIN_LEN;

/// FINACK status bit: every byte delivered matched the flow's content pattern.
pub const STATUS_VERIFIED: u8 = 1;

/// RCP header flag on the first DATA packet a flow sends once the data it
/// has not sent yet takes at most one round trip at its rate: routers count
/// the flow's departure by it, one round trip before its share frees
/// (docs/protocol.md, "The RCP header").
pub const FLAG_ENDING: u8 = 0x01;
/// The RCP header's `size` when a flow's size is unknown (open-ended) or
/// this large or larger: full DATA packets, saturating.
pub const SIZE_UNKNOWN_PACKETS: u16 = u16::MAX;

/// The `size` field of a flow of `total` application bytes in DATA packets
/// of `mss` bytes: its packet count, saturating at [`SIZE_UNKNOWN_PACKETS`].
pub fn size_packets(total: u64, mss: u32) -> u16 {
    if total == u64::MAX || mss == 0 {
        return SIZE_UNKNOWN_PACKETS;
    }
    total.div_ceil(mss as u64).min(SIZE_UNKNOWN_PACKETS as u64) as u16
}

/// The scheme code of a SYN whose sender names no scheme of [`SCHEMES`].
pub const SCHEME_OTHER: u8 = 0;
/// Scheme codes carried in the SYN (informational, for the receiver's
/// record): every UDP scheme of [`crate::cc::CcSpec`] by its name
/// (`fixed` for every `fixed:RATE`).
pub const SCHEMES: [(u8, &str); 10] = [
    (1, "rcp"),
    (2, "allegro"),
    (3, "vivace"),
    (4, "vivace-loss"),
    (5, "vivace-latency"),
    (6, "fixed"),
    (7, "allegro-ref"),
    (8, "vivace-stop"),
    (9, "vivace-loss-p4rcp"),
    (10, "xcp"),
];

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
    /// Every type, by code.
    pub const ALL: [PktType; 8] = [
        PktType::Data,
        PktType::Ack,
        PktType::Syn,
        PktType::SynAck,
        PktType::Fin,
        PktType::FinAck,
        PktType::Ref,
        PktType::RefAck,
    ];

    pub fn from_u8(v: u8) -> Option<PktType> {
        PktType::ALL.get(v as usize).copied()
    }

    /// Forward packets (DATA, SYN, REF) are stamped and RTT-sampled by
    /// routers; the others pass untouched (docs/protocol.md).
    pub fn is_forward(self) -> bool {
        matches!(self, PktType::Data | PktType::Syn | PktType::Ref)
    }

    /// The name docs/protocol.md gives the type (DATA, SYNACK, ...).
    pub fn name(self) -> &'static str {
        match self {
            PktType::Data => "DATA",
            PktType::Ack => "ACK",
            PktType::Syn => "SYN",
            PktType::SynAck => "SYNACK",
            PktType::Fin => "FIN",
            PktType::FinAck => "FINACK",
            PktType::Ref => "REF",
            PktType::RefAck => "REFACK",
        }
    }
}

/// The 16-byte RCP header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RcpHeader {
    pub ptype: PktType,
    pub flags: u8,
    /// On SYN and on the DATA flagged ENDING: the flow's size in DATA packets
    /// (routers weigh its arrival and departure by it); 0 on other packets.
    pub size: u16,
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
            size: 0,
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
            flags: buf[RCP_FLAGS_OFFSET],
            size: be16(buf, RCP_SIZE_OFFSET),
            rate_kbps: be32(buf, RCP_RATE_OFFSET),
            rtt_us: be32(buf, RCP_RTT_OFFSET),
            feedback_kbps: be32(buf, RCP_FEEDBACK_OFFSET),
        })
    }

    /// Append the 16 bytes to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.push((RCP_VERSION << 4) | (self.ptype as u8 & 0x0f));
        out.push(self.flags);
        out.extend_from_slice(&self.size.to_be_bytes());
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
    /// The XCP congestion header, between the RCP header and the host
    /// header when the RCP header's `FLAG_XCP` is set (`xcp_header.rs`).
    pub xcp: Option<XcpHeader>,
    pub common: Common,
    pub body: Body<'a>,
}

/// The XCP header behind the RCP header of `buf` when its flag says so, and
/// how far it moves the host header. The host header is then read from
/// `buf[shift..]` at the offsets above, which count from the payload's start.
fn xcp_of(rcp: &RcpHeader, buf: &[u8]) -> Result<(Option<XcpHeader>, usize), ParseError> {
    if rcp.flags & FLAG_XCP == 0 {
        return Ok((None, 0));
    }
    Ok((Some(XcpHeader::parse(&buf[RCP_HEADER_LEN..])?), XCP_HEADER_LEN))
}

/// Write the RCP header, its flag saying whether `xcp` follows, then `xcp`.
fn write_headers(rcp: &RcpHeader, xcp: Option<&XcpHeader>, out: &mut Vec<u8>) {
    let mut rcp = *rcp;
    rcp.flags = if xcp.is_some() { rcp.flags | FLAG_XCP } else { rcp.flags & !FLAG_XCP };
    rcp.write(out);
    if let Some(x) = xcp {
        x.write(out);
    }
}

/// Why a datagram was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ParseError {
    /// Shorter than the 16-byte RCP header.
    TooShort,
    /// Version field is not 1.
    BadVersion,
    /// Type field is not one of [`PktType::ALL`].
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

/// The flow a datagram belongs to, from its headers alone (the RCP header
/// and the common host bytes; [`Packet::parse`] checks the rest), so that a
/// host finds the flow before the flow parses the datagram.
pub fn flow_id(buf: &[u8]) -> Result<u32, ParseError> {
    let rcp = RcpHeader::parse(buf)?;
    let (_, shift) = xcp_of(&rcp, buf)?;
    let buf = &buf[shift..];
    if buf.len() < BODY_OFFSET {
        return Err(ParseError::Truncated);
    }
    Ok(be32(buf, FLOW_ID_OFFSET))
}

impl<'a> Packet<'a> {
    /// Parse a UDP payload. Never panics, whatever the input.
    pub fn parse(buf: &'a [u8]) -> Result<Packet<'a>, ParseError> {
        let rcp = RcpHeader::parse(buf)?;
        let (xcp, shift) = xcp_of(&rcp, buf)?;
        let buf = &buf[shift..];
        if buf.len() < BODY_OFFSET {
            return Err(ParseError::Truncated);
        }
        let common = Common {
            flow_id: be32(buf, FLOW_ID_OFFSET),
            pkt_seq: be32(buf, PKT_SEQ_OFFSET),
            ts_us: be32(buf, TS_OFFSET),
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
        Ok(Packet { rcp, xcp, common, body })
    }

    /// Write the datagram into `out` (cleared first). The RCP type is taken
    /// from the body, so the two cannot disagree.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.clear();
        let mut rcp = self.rcp;
        rcp.ptype = self.body.ptype();
        write_headers(&rcp, self.xcp.as_ref(), out);
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

/// Write a DATA packet of `len` payload bytes into `out` (cleared first) and
/// return its payload for the caller to fill in place. Same bytes as
/// [`Packet::encode`] with `Body::Data` once filled.
pub fn encode_data<'a>(
    rcp: &RcpHeader,
    xcp: Option<&XcpHeader>,
    common: &Common,
    offset: u64,
    len: usize,
    out: &'a mut Vec<u8>,
) -> &'a mut [u8] {
    out.clear();
    let mut rcp = *rcp;
    rcp.ptype = PktType::Data;
    write_headers(&rcp, xcp, out);
    out.extend_from_slice(&common.flow_id.to_be_bytes());
    out.extend_from_slice(&common.pkt_seq.to_be_bytes());
    out.extend_from_slice(&common.ts_us.to_be_bytes());
    out.extend_from_slice(&offset.to_be_bytes());
    let header_len = out.len();
    out.resize(header_len + len, 0);
    &mut out[header_len..]
}

/// Bytes of the Ethernet frame carrying a UDP payload of `udp_payload` bytes
/// (the unit of every rate, `docs/protocol.md` "Units").
pub fn frame_bytes(udp_payload: usize) -> usize {
    FRAME_OVERHEAD + udp_payload
}

/// The code a SYN carries for `scheme` (a scheme name as records write
/// it, [`crate::cc::CcSpec::name`]); [`SCHEME_OTHER`] for names not in
/// [`SCHEMES`].
pub fn cc_code(scheme: &str) -> u8 {
    let name = if scheme.starts_with("fixed") { "fixed" } else { scheme };
    SCHEMES.iter().find(|(_, n)| *n == name).map_or(SCHEME_OTHER, |(code, _)| *code)
}

/// The scheme name of a SYN's code ("unknown" for codes not in [`SCHEMES`]).
pub fn cc_name(code: u8) -> &'static str {
    SCHEMES.iter().find(|(c, _)| *c == code).map_or("unknown", |(_, name)| name)
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
            size: 0,
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
        // each body without and with the XCP congestion header
        let congestion = XcpHeader {
            cwnd_bytes: 15_000,
            x_ns: 10_000_000,
            feedback: -1500,
        };
        bodies
            .iter()
            .flat_map(|b| [None, Some(congestion)].map(|xcp| (*b, xcp)))
            .map(|(b, xcp)| {
                let p = Packet {
                    rcp: rcp(15_000, 30_000, 14_000),
                    xcp,
                    common: c,
                    body: b,
                };
                let mut out = Vec::new();
                p.encode(&mut out);
                let mut expect = p;
                expect.rcp.ptype = b.ptype();
                if xcp.is_some() {
                    expect.rcp.flags |= FLAG_XCP;
                }
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
    fn data_helper_matches_encode() {
        let c = Common {
            flow_id: 1,
            pkt_seq: 2,
            ts_us: 3,
        };
        let p = Packet {
            rcp: rcp(1, 2, 3),
            xcp: None,
            common: c,
            body: Body::Data {
                offset: 9,
                payload: &[7, 7],
            },
        };
        let mut a = Vec::new();
        p.encode(&mut a);
        let mut b = Vec::new();
        encode_data(&p.rcp, None, &c, 9, 2, &mut b).copy_from_slice(&[7, 7]);
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
        encode_data(&rcp(0, 0, 0), None, &Common::default(), 0, 0, &mut d);
        assert_eq!(Packet::parse(&d), Err(ParseError::BadField));
        // DATA whose offset + len overflows
        let mut d = Vec::new();
        encode_data(&rcp(0, 0, 0), None, &Common::default(), u64::MAX, 1, &mut d);
        assert_eq!(Packet::parse(&d), Err(ParseError::BadField));
        // SYN with mss 0
        let p = Packet {
            rcp: rcp(0, 0, 0),
            xcp: None,
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
            xcp: None,
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
            xcp: None,
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
    fn the_xcp_flag_announces_the_congestion_header_before_the_host_header() {
        let (plain, p) = samples()[4].clone(); // DATA without, then with the XCP header
        let (with, x) = samples()[5].clone();
        assert_eq!((p.xcp, x.body), (None, p.body));
        assert_eq!(with.len(), plain.len() + XCP_HEADER_LEN);
        assert_eq!(with[1] & FLAG_XCP, FLAG_XCP);
        assert_eq!(with[..16], {
            let mut h = plain[..16].to_vec();
            h[1] |= FLAG_XCP;
            h
        }[..]);
        assert_eq!(with[16 + XCP_HEADER_LEN..], plain[16..]);
        assert_eq!(XcpHeader::parse(&with[16..]), Ok(x.xcp.unwrap()));
        // the flag without the 12 bytes (an RCP header alone, flagged) is cut short
        let mut h = Vec::new();
        let mut rcp = RcpHeader::new(PktType::Data);
        rcp.flags = FLAG_XCP;
        rcp.write(&mut h);
        h.extend_from_slice(&[0; 11]);
        assert_eq!(Packet::parse(&h), Err(ParseError::Truncated));
        assert_eq!(flow_id(&h), Err(ParseError::Truncated));
        // encode writes the flag from the header's presence, whatever rcp.flags said
        let mut q = x;
        q.xcp = None;
        let mut out = Vec::new();
        q.encode(&mut out);
        assert_eq!(out, plain);
        let mut d = Vec::new();
        encode_data(&p.rcp, x.xcp.as_ref(), &p.common, 1 << 40, 5, &mut d).copy_from_slice(&[1, 2, 3, 4, 5]);
        assert_eq!(d, with);
    }

    #[test]
    fn a_flow_id_is_read_from_the_headers() {
        for (bytes, p) in samples() {
            assert_eq!(flow_id(&bytes), Ok(p.common.flow_id));
        }
        assert_eq!(flow_id(&[0x10; 27]), Err(ParseError::Truncated));
        assert_eq!(flow_id(&[0x20; 28]), Err(ParseError::BadVersion));
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
        for (code, name) in SCHEMES {
            assert_eq!((cc_code(name), cc_name(code)), (code, name));
        }
        assert_eq!(cc_code("fixed:10mbit"), 6);
        assert_eq!(cc_code("tcp"), SCHEME_OTHER);
        assert_eq!(cc_name(SCHEME_OTHER), "unknown");
        // every scheme of the hosts that runs over UDP has its code
        for name in crate::cc::UDP_SCHEMES {
            let spec = crate::cc::CcSpec::parse(name).unwrap_or_else(|e| panic!("{e}"));
            assert_ne!(cc_code(&spec.name()), SCHEME_OTHER, "{name}");
        }
    }

    #[test]
    fn lengths_are_the_encoded_ones() {
        let lens: Vec<(PktType, usize, bool)> = samples()
            .iter()
            .map(|(bytes, p)| (p.body.ptype(), bytes.len(), p.xcp.is_some()))
            .collect();
        for (ptype, len_with, xcp) in lens {
            let len = len_with - if xcp { XCP_HEADER_LEN } else { 0 };
            let want = match ptype {
                PktType::Syn => SYN_LEN,
                PktType::SynAck => SYNACK_LEN,
                PktType::Data => DATA_HEADER_LEN + 5,
                PktType::Ack => ACK_LEN + if len > ACK_LEN { 2 * SACK_LEN } else { 0 },
                PktType::Fin => FIN_LEN,
                PktType::FinAck => FINACK_LEN,
                PktType::Ref | PktType::RefAck => REF_LEN,
            };
            assert_eq!(len, want, "{ptype:?}");
        }
        for (code, t) in PktType::ALL.iter().enumerate() {
            assert_eq!(*t as usize, code);
        }
    }
}

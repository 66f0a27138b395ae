//! `include/p4rcp_wire.h`: the wire constants of [`crate::transport::wire`]
//! as C macros, for C and C++ (the ns-3 engine's router and applications)
//! and for the checks of the other languages' copies (Python's
//! `p4rcp/protocol.py` reads it; tests hold P4's `defines.p4` and the
//! Wireshark dissector to it). Rendered here, committed, and compared by
//! the test below: `P4RCP_WRITE_HEADER=1 cargo test wire_header` rewrites it.

use crate::transport::sender::DEFAULT_MAX_RATE;
use crate::transport::wire::{self, PktType};
use crate::transport::xcp_header;
use crate::units::parse_rate_kbps;

/// A macro's value as C spells it.
enum Value {
    Int(u64),
    Hex(u64),
}

struct Section {
    comment: &'static str,
    macros: Vec<(String, Value)>,
}

fn int(name: &str, v: impl Into<u64>) -> (String, Value) {
    (format!("P4RCP_{name}"), Value::Int(v.into()))
}

fn hex(name: &str, v: impl Into<u64>) -> (String, Value) {
    (format!("P4RCP_{name}"), Value::Hex(v.into()))
}

/// The macro name of a scheme: `vivace-loss-p4rcp` -> `VIVACE_LOSS_P4RCP`.
pub(super) fn scheme_macro(name: &str) -> String {
    name.to_ascii_uppercase().replace('-', "_")
}

fn sections() -> Vec<Section> {
    let size = |n: usize| n as u64;
    let forward_mask = PktType::ALL
        .iter()
        .filter(|t| t.is_forward())
        .fold(0u64, |m, t| m | 1 << (*t as u8));
    vec![
        Section {
            comment: "The RCP header: the first 16 bytes of the UDP payload, big-endian (docs/protocol.md).\n\
                      Byte 0 holds the version (high 4 bits) and the type (low 4 bits).",
            macros: vec![
                int("UDP_PORT", wire::RCP_UDP_PORT),
                int("VERSION", wire::RCP_VERSION),
                int("HEADER_LEN", size(wire::RCP_HEADER_LEN)),
                int("FLAGS_OFFSET", size(wire::RCP_FLAGS_OFFSET)),
                int("SIZE_OFFSET", size(wire::RCP_SIZE_OFFSET)),
                int("RATE_OFFSET", size(wire::RCP_RATE_OFFSET)),
                int("RTT_OFFSET", size(wire::RCP_RTT_OFFSET)),
                int("FEEDBACK_OFFSET", size(wire::RCP_FEEDBACK_OFFSET)),
            ],
        },
        Section {
            comment: "Packet types; forward types (a bit each in the mask) are stamped and RTT-sampled by routers.",
            macros: PktType::ALL
                .iter()
                .map(|t| int(&format!("TYPE_{}", t.name()), *t as u8))
                .chain([hex("FORWARD_TYPES_MASK", forward_mask)])
                .collect(),
        },
        Section {
            comment: "Flags: the first DATA packet sent once a flow's unsent data fits in one round trip at its rate\n\
                      (routers count the departure by it). Size: a flow's size in DATA packets on SYN and ENDING;\n\
                      P4RCP_SIZE_UNKNOWN_PACKETS when unknown or that large.",
            macros: vec![
                hex("FLAG_ENDING", wire::FLAG_ENDING),
                int("SIZE_UNKNOWN_PACKETS", wire::SIZE_UNKNOWN_PACKETS),
            ],
        },
        Section {
            comment: "A valid RTT sample: 0 < rtt_us <= P4RCP_MAX_RTT_US = 2^P4RCP_RTT_BITS - 1.\n\
                      Rates are kb/s of Ethernet frames; no flow is given less than P4RCP_MIN_RATE_KBPS;\n\
                      a sender asks for P4RCP_DEFAULT_MAX_RATE_KBPS unless told otherwise (--max-rate).",
            macros: vec![
                int("RTT_BITS", wire::RCP_RTT_BITS),
                int("MAX_RTT_US", wire::RCP_MAX_RTT_US),
                int("MIN_RATE_KBPS", wire::RCP_MIN_RATE_KBPS),
                int(
                    "DEFAULT_MAX_RATE_KBPS",
                    parse_rate_kbps(DEFAULT_MAX_RATE).expect("the default parses") as u64,
                ),
            ],
        },
        Section {
            comment: "The hosts' transport header behind the RCP header: offsets from the UDP payload's start,\n\
                      and each type's datagram length (an ACK's grows by a SACK block each, a DATA's by its payload).",
            macros: vec![
                int("FLOW_ID_OFFSET", size(wire::FLOW_ID_OFFSET)),
                int("PKT_SEQ_OFFSET", size(wire::PKT_SEQ_OFFSET)),
                int("TS_OFFSET", size(wire::TS_OFFSET)),
                int("BODY_OFFSET", size(wire::BODY_OFFSET)),
                int("SYN_LEN", size(wire::SYN_LEN)),
                int("SYNACK_LEN", size(wire::SYNACK_LEN)),
                int("DATA_HEADER_LEN", size(wire::DATA_HEADER_LEN)),
                int("ACK_LEN", size(wire::ACK_LEN)),
                int("SACK_LEN", size(wire::SACK_LEN)),
                int("MAX_SACKS", size(wire::MAX_SACKS)),
                int("FIN_LEN", size(wire::FIN_LEN)),
                int("FINACK_LEN", size(wire::FINACK_LEN)),
                int("REF_LEN", size(wire::REF_LEN)),
                hex("SIZE_UNKNOWN", wire::SIZE_UNKNOWN),
                hex("STATUS_VERIFIED", wire::STATUS_VERIFIED),
                int("FRAME_OVERHEAD", size(wire::FRAME_OVERHEAD)),
            ],
        },
        Section {
            comment: "The XCP congestion header (docs/xcp.md): P4RCP_XCP_HEADER_LEN bytes between the RCP header and the\n\
                      hosts' header when the RCP header's flags hold P4RCP_FLAG_XCP (the host offsets below then move\n\
                      by that much). Offsets from the UDP payload's start: H_cwnd (u32, frame bytes), x = rtt s / cwnd\n\
                      (u32, ns), H_feedback (i32, bytes); H_rtt is the RCP header's rtt_us.",
            macros: vec![
                hex("FLAG_XCP", xcp_header::FLAG_XCP),
                int("XCP_HEADER_LEN", size(xcp_header::XCP_HEADER_LEN)),
                int("XCP_CWND_OFFSET", size(xcp_header::XCP_CWND_OFFSET)),
                int("XCP_X_OFFSET", size(xcp_header::XCP_X_OFFSET)),
                int("XCP_FEEDBACK_OFFSET", size(xcp_header::XCP_FEEDBACK_OFFSET)),
            ],
        },
        Section {
            comment: "Scheme codes of the SYN: the macro names the scheme (VIVACE_LOSS_P4RCP: vivace-loss-p4rcp).",
            macros: std::iter::once(int("SCHEME_OTHER", wire::SCHEME_OTHER))
                .chain(
                    wire::SCHEMES
                        .iter()
                        .map(|(code, name)| int(&format!("SCHEME_{}", scheme_macro(name)), *code)),
                )
                .collect(),
        },
    ]
}

/// The header's text.
pub(super) fn render() -> String {
    let mut out = String::from(
        "/* p4rcp's wire constants (docs/protocol.md), generated from hosts/src/transport/wire.rs by\n \
         * hosts/src/ffi/wire_header.rs: do not edit. `P4RCP_WRITE_HEADER=1 cargo test wire_header`\n \
         * rewrites it; cargo test fails while it differs. */\n\
         #ifndef P4RCP_WIRE_H\n#define P4RCP_WIRE_H\n",
    );
    for s in sections() {
        out.push('\n');
        for line in s.comment.lines() {
            out.push_str(&format!("/* {} */\n", line.trim()));
        }
        for (name, value) in s.macros {
            let v = match value {
                Value::Int(v) if v > u32::MAX as u64 => format!("{v}ull"),
                Value::Int(v) if v > i32::MAX as u64 => format!("{v}u"),
                Value::Int(v) => format!("{v}"),
                Value::Hex(v) if v > u32::MAX as u64 => format!("0x{v:X}ull"),
                Value::Hex(v) => format!("0x{v:02X}"),
            };
            out.push_str(&format!("#define {name} {v}\n"));
        }
    }
    out.push_str("\n#endif\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn wire_header_is_the_wire_modules() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("include")
            .join("p4rcp_wire.h");
        let text = render();
        if std::env::var_os("P4RCP_WRITE_HEADER").is_some() {
            std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == text,
            "{} differs from hosts/src/transport/wire.rs: run P4RCP_WRITE_HEADER=1 cargo test wire_header",
            path.display()
        );
    }

    #[test]
    fn scheme_macros_name_their_schemes() {
        for (_, name) in wire::SCHEMES {
            let back = scheme_macro(name).to_ascii_lowercase().replace('_', "-");
            assert_eq!(back, name);
        }
        let text = render();
        assert!(text.contains("#define P4RCP_SCHEME_VIVACE_LOSS_P4RCP 9\n"));
        assert!(text.contains("#define P4RCP_FORWARD_TYPES_MASK 0x45\n")); // DATA, SYN, REF
        assert!(text.contains("#define P4RCP_SIZE_UNKNOWN 0xFFFFFFFFFFFFFFFFull\n"));
    }
}

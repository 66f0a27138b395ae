//! The record of a TCP flow from what its sender measured, whichever TCP
//! carried it: the kernel's ([`super::run_flow`]) or ns-3's (through
//! [`crate::ffi`]).

use crate::transport::record::{round, FlowRecord};

/// The receiver's confirmation of a flow (`DONE`), as its sender read it.
#[derive(Clone, Debug)]
pub struct Confirmation {
    /// Seconds from just before connect() until it was read: the FCT.
    pub fct_s: f64,
    /// Bytes the receiver read.
    pub bytes: u64,
    /// Whether every byte matched the flow's pattern (None: the receiver
    /// checked no content, as ns-3's TCP carries none).
    pub verified: Option<bool>,
}

/// What a TCP flow's sender measured.
#[derive(Clone, Debug, Default)]
pub struct TcpSent {
    pub flow_id: u32,
    pub index: Option<u64>,
    pub scheme: String,
    pub dst: String,
    pub dscp: u8,
    pub start_unix_s: f64,
    pub size_bytes: u64,
    pub confirmation: Option<Confirmation>,
    /// Why the flow has no confirmation (a socket error, the timeout, ...).
    pub error: Option<String>,
    pub retransmissions: u64,
    /// Segments sent, retransmissions included.
    pub segments: u64,
    pub srtt_s: Option<f64>,
    pub min_rtt_s: Option<f64>,
}

impl TcpSent {
    /// The flow's record: completed when the receiver confirmed every byte.
    pub fn record(&self) -> FlowRecord {
        let ms = |s: Option<f64>| s.map(|s| round(s * 1e3, 3));
        let mut rec = FlowRecord {
            flow_id: self.flow_id,
            index: self.index,
            scheme: self.scheme.clone(),
            dst: self.dst.clone(),
            dscp: self.dscp,
            size_bytes: self.size_bytes,
            start_unix_s: round(self.start_unix_s, 6),
            retransmissions: self.retransmissions,
            packets_sent: self.segments,
            srtt_ms: ms(self.srtt_s),
            min_rtt_ms: ms(self.min_rtt_s),
            error: self.error.clone(),
            ..Default::default()
        };
        match &self.confirmation {
            Some(c) if c.bytes == self.size_bytes => {
                rec.completed = true;
                rec.verified = c.verified;
                rec.fct_s = Some(round(c.fct_s, 6));
                rec.mean_rate_kbps = Some(round(self.size_bytes as f64 * 8.0 / c.fct_s.max(1e-9) / 1000.0, 3));
            }
            Some(c) => {
                rec.verified = c.verified.map(|_| false);
                rec.error = Some(format!("receiver confirmed {} of {} bytes", c.bytes, self.size_bytes));
            }
            None => {}
        }
        rec
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(confirmation: Option<Confirmation>) -> TcpSent {
        TcpSent {
            flow_id: 7,
            scheme: "tcp".into(),
            dst: "10.0.0.2:6578".into(),
            start_unix_s: 100.0,
            size_bytes: 1_000_000,
            confirmation,
            segments: 990,
            srtt_s: Some(0.0421234),
            ..Default::default()
        }
    }

    #[test]
    fn a_confirmed_flow_completes_with_its_fct_and_rate() {
        let rec = sent(Some(Confirmation {
            fct_s: 0.8,
            bytes: 1_000_000,
            verified: Some(true),
        }))
        .record();
        assert!(rec.completed && rec.error.is_none());
        assert_eq!((rec.fct_s, rec.verified), (Some(0.8), Some(true)));
        assert_eq!(rec.mean_rate_kbps, Some(10_000.0));
        assert_eq!((rec.srtt_ms, rec.min_rtt_ms, rec.packets_sent), (Some(42.123), None, 990));
    }

    #[test]
    fn a_short_confirmation_or_none_is_a_failed_flow() {
        let short = sent(Some(Confirmation {
            fct_s: 0.8,
            bytes: 5,
            verified: Some(true),
        }))
        .record();
        assert!(!short.completed && short.fct_s.is_none());
        assert_eq!(short.verified, Some(false));
        assert_eq!(short.error.as_deref(), Some("receiver confirmed 5 of 1000000 bytes"));
        let unchecked = sent(Some(Confirmation {
            fct_s: 0.8,
            bytes: 5,
            verified: None,
        }))
        .record();
        assert_eq!(unchecked.verified, None);
        let mut none = sent(None);
        none.error = Some("tcp: no confirmation".into());
        let rec = none.record();
        assert!(!rec.completed && rec.verified.is_none());
        assert_eq!(rec.error.as_deref(), Some("tcp: no confirmation"));
    }
}

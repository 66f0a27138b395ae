//! Per-flow JSON records and trace lines, one JSON object per line
//! (written by [`crate::io::sink::Sink`]).

use serde::Serialize;

/// One line per flow, written by `send` and `traffic` (all schemes, TCP too).
#[derive(Clone, Debug, Serialize, Default)]
pub struct FlowRecord {
    pub flow_id: u32,
    /// Position of the flow in a `traffic` run (0, 1, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<u64>,
    pub scheme: String,
    pub dst: String,
    /// DSCP of its packets (absent: 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub dscp: u8,
    /// Application bytes of the flow (for `--duration` flows: what was sent).
    pub size_bytes: u64,
    /// Wall-clock time of the SYN (UDP) or of connect() (TCP).
    pub start_unix_s: f64,
    /// Flow completion time (docs/protocol.md "Flow completion time"); null
    /// if the flow did not complete.
    pub fct_s: Option<f64>,
    pub completed: bool,
    /// The receiver reported that every byte matched the flow's pattern
    /// (FINACK status; TCP: the confirmation); null if it never said.
    pub verified: Option<bool>,
    /// Retransmitted DATA packets (TCP: tcpi_total_retrans).
    pub retransmissions: u64,
    /// DATA packets sent, retransmissions included (TCP: segments out).
    pub packets_sent: u64,
    /// DATA transmissions declared lost: no ACK covered them in time (UDP;
    /// null for TCP).
    pub packets_lost: Option<u64>,
    /// size_bytes * 8 / fct_s / 1000: application goodput over the FCT.
    pub mean_rate_kbps: Option<f64>,
    /// Frame bits of all DATA packets / time from first to last DATA (UDP).
    pub send_rate_kbps: Option<f64>,
    /// Rate echoed in the SYNACK (UDP).
    pub synack_rate_kbps: Option<u32>,
    pub min_rtt_ms: Option<f64>,
    pub srtt_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One line per flow on the receiving side (`recv --out`).
#[derive(Clone, Debug, Serialize, Default)]
pub struct RecvRecord {
    pub role: &'static str,
    pub flow_id: u32,
    pub peer: String,
    pub scheme: String,
    pub transport: &'static str,
    /// Size the sender announced (null: open-ended).
    pub size_bytes: Option<u64>,
    pub bytes_delivered: u64,
    /// Every delivered byte matched the pattern, and no byte was delivered
    /// twice; null where no content was checked (ns-3's TCP carries none).
    pub verified: Option<bool>,
    /// All announced bytes delivered and the sender closed the flow.
    pub completed: bool,
    pub data_pkts: u64,
    pub duplicate_pkts: u64,
    pub start_unix_s: f64,
    pub duration_s: f64,
    /// Wall-clock time at which the receiver held every byte of the flow:
    /// the end of its flow completion time as the RCP papers define it (first
    /// SYN sent to last byte received; docs/protocol.md). Null for a flow
    /// that never completed or had no announced size.
    pub last_byte_unix_s: Option<f64>,
}

impl RecvRecord {
    /// The record of a TCP flow from `peer` that arrived at `start_unix_s`,
    /// before anything was read.
    pub fn tcp(peer: String, start_unix_s: f64) -> RecvRecord {
        RecvRecord {
            role: "recv",
            peer,
            scheme: "tcp".into(),
            transport: "tcp",
            start_unix_s: round(start_unix_s, 6),
            ..Default::default()
        }
    }
}

/// A rate change or a periodic sample of one flow (`--trace FILE`).
#[derive(Clone, Debug, Serialize)]
pub struct TraceLine {
    pub flow_id: u32,
    /// "rate" (the pacing rate changed), "sample" (periodic) or "mi" (a
    /// monitor interval's result).
    pub event: &'static str,
    /// Seconds since the flow's SYN.
    pub t_s: f64,
    pub rate_kbps: f64,
    pub srtt_ms: f64,
    /// Loss rate of the latest monitor interval reported.
    pub mi_loss: f64,
    /// "sample": application bytes newly acknowledged / sample period.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goodput_kbps: Option<f64>,
    /// "sample": frame bits sent / sample period; "mi": the MI's send rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_kbps: Option<f64>,
    /// "sample": the share of the DATA transmissions whose fate became
    /// known in the period (covered by an ACK, or declared lost) that were
    /// lost; absent when none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss: Option<f64>,
    /// "mi": the MI's target rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mi_rate_kbps: Option<f64>,
    /// "mi": the MI's throughput.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throughput_kbps: Option<f64>,
    /// "mi": the slope of RTT over send time of the MI's reliable RTT
    /// samples, how many there were, and the RMS of their residuals over
    /// their mean (the scatter Vivace's gradient must exceed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_gradient: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_samples: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_scatter: Option<f64>,
    pub state: &'static str,
}

impl TraceLine {
    /// A line of `event` with what every line holds, rounded as records
    /// are; the fields of particular events empty.
    pub fn new(
        flow_id: u32,
        event: &'static str,
        t_s: f64,
        rate_kbps: f64,
        srtt_s: f64,
        mi_loss: f64,
        state: &'static str,
    ) -> TraceLine {
        TraceLine {
            flow_id,
            event,
            t_s: round(t_s, 6),
            rate_kbps: round(rate_kbps, 3),
            srtt_ms: round(srtt_s * 1e3, 3),
            mi_loss: round(mi_loss, 5),
            goodput_kbps: None,
            send_kbps: None,
            loss: None,
            mi_rate_kbps: None,
            throughput_kbps: None,
            rtt_gradient: None,
            rtt_samples: None,
            rtt_scatter: None,
            state,
        }
    }

    /// The periodic sample of a TCP flow: a congestion window per smoothed
    /// RTT as its rate, the bytes the peer acknowledged as its goodput.
    pub fn tcp_sample(flow_id: u32, t_s: f64, cwnd_kbps: f64, srtt_s: f64, goodput_kbps: f64) -> TraceLine {
        TraceLine {
            goodput_kbps: Some(round(goodput_kbps, 3)),
            ..TraceLine::new(flow_id, "sample", t_s, cwnd_kbps, srtt_s, 0.0, "tcp")
        }
    }
}

/// Round to `digits` decimals (keeps records short and readable).
pub fn round(x: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (x * m).round() / m
}

fn is_zero(v: &u8) -> bool {
    *v == 0
}

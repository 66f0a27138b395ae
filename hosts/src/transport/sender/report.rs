//! What a sending flow reports: trace lines (`--trace`: rate changes,
//! monitor intervals, periodic samples) and its record.

use super::SenderFlow;
use crate::cc::MiReport;
use crate::transport::record::{round, FlowRecord, TraceLine};

/// What the flow sent (DATA packets), for its record and trace.
#[derive(Clone, Debug, Default)]
pub(super) struct Sent {
    pkts: u64,
    retransmissions: u64,
    frame_bytes: u64,
    /// The first packet's frame bytes and send time, the last one's.
    first_frame: u64,
    first_at: Option<f64>,
    last_at: f64,
}

impl Sent {
    pub(super) fn new(now: f64) -> Sent {
        Sent {
            last_at: now,
            ..Sent::default()
        }
    }

    /// A DATA packet of `frame` bytes left at `now`.
    pub(super) fn on_send(&mut self, frame: u32, now: f64, is_retx: bool) {
        if is_retx {
            self.retransmissions += 1;
        }
        if self.first_at.is_none() {
            self.first_at = Some(now);
            self.first_frame = frame as u64;
        }
        self.last_at = now;
        self.pkts += 1;
        self.frame_bytes += frame as u64;
    }
}

/// The counters at the trace's last "sample" line, and when the next is due.
#[derive(Clone, Debug, Default)]
pub(super) struct Sampled {
    next: f64,
    acked_bytes: u64,
    frame_bytes: u64,
    lost: u64,
    delivered: u64,
}

impl Sampled {
    /// The first sample is due at `now`.
    pub(super) fn new(now: f64) -> Sampled {
        Sampled {
            next: now,
            ..Sampled::default()
        }
    }

    pub(super) fn next(&self) -> f64 {
        self.next
    }
}

impl SenderFlow {
    pub(super) fn sample(&mut self, now: f64) {
        if !self.p.trace || self.p.sample_interval_s <= 0.0 || now < self.sampled.next {
            return;
        }
        let dt = self.p.sample_interval_s;
        let mut line = self.trace_line("sample", now);
        let kbps = |bytes: u64| Some(round(bytes as f64 * 8.0 / dt / 1000.0, 3));
        line.goodput_kbps = kbps(self.loss.acked_bytes() - self.sampled.acked_bytes);
        line.send_kbps = kbps(self.sent.frame_bytes - self.sampled.frame_bytes);
        let lost = self.loss.lost() - self.sampled.lost;
        let resolved = lost + self.loss.delivered() - self.sampled.delivered;
        line.loss = (resolved > 0).then(|| round(lost as f64 / resolved as f64, 5));
        self.trace.push(line);
        let mut next = self.sampled.next + dt;
        if next < now {
            next = now + dt;
        }
        self.sampled = Sampled {
            next,
            acked_bytes: self.loss.acked_bytes(),
            frame_bytes: self.sent.frame_bytes,
            lost: self.loss.lost(),
            delivered: self.loss.delivered(),
        };
    }

    /// The "mi" line of a monitor interval's report.
    pub(super) fn mi_line(&self, r: &MiReport, now: f64) -> TraceLine {
        let mut line = self.trace_line("mi", now);
        line.mi_rate_kbps = Some(round(r.rate_kbps, 3));
        line.send_kbps = Some(round(r.send_kbps, 3));
        line.throughput_kbps = Some(round(r.throughput_kbps, 3));
        line.rtt_gradient = Some(round(r.rtt_gradient, 6));
        line.rtt_samples = Some(r.rtt_samples);
        if r.avg_rtt_s > 0.0 {
            line.rtt_scatter = Some(round(r.rtt_residual / r.avg_rtt_s, 6));
        }
        line
    }

    /// A trace line of `event` with the flow's state at `now`.
    pub(super) fn trace_line(&self, event: &'static str, now: f64) -> TraceLine {
        TraceLine::new(
            self.p.flow_id,
            event,
            now - self.t_start,
            self.pacer.rate(),
            self.rtt.srtt(),
            self.last_loss,
            self.cc.state(),
        )
    }

    pub fn record(&self) -> FlowRecord {
        let size = if self.end == u64::MAX { self.next_new } else { self.end };
        let span = self.sent.last_at - self.sent.first_at.unwrap_or(self.sent.last_at);
        let (min_rtt, srtt) = (self.rtt.min_rtt(), self.rtt.srtt());
        FlowRecord {
            flow_id: self.p.flow_id,
            index: self.p.index,
            scheme: self.p.scheme.clone(),
            dst: self.p.dst.to_string(),
            dscp: self.p.dscp,
            size_bytes: size,
            start_unix_s: round(self.t_start_unix, 6),
            fct_s: self.fct.map(|f| round(f, 6)),
            completed: self.fct.is_some(),
            verified: self.verified,
            retransmissions: self.sent.retransmissions,
            packets_sent: self.sent.pkts,
            packets_lost: Some(self.loss.lost()),
            mean_rate_kbps: self.fct.map(|f| round(size as f64 * 8.0 / f.max(1e-9) / 1000.0, 3)),
            send_rate_kbps: (span > 0.0).then(|| {
                round(
                    (self.sent.frame_bytes - self.sent.first_frame) as f64 * 8.0 / span / 1000.0,
                    3,
                )
            }),
            synack_rate_kbps: self.synack_rate,
            min_rtt_ms: min_rtt.is_finite().then(|| round(min_rtt * 1e3, 3)),
            srtt_ms: (srtt > 0.0).then(|| round(srtt * 1e3, 3)),
            error: self.error.clone(),
        }
    }
}

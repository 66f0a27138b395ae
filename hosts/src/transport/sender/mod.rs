//! The sending side of one UDP flow, written once for every rate controller
//! (`docs/protocol.md`, "Host transport"). A [`SenderFlow`] composes the
//! parts of the protocol, each a type of its own:
//!
//! - Exchange: SYN attempts and their backoff ([`Handshake`]), paced DATA
//!   acknowledged one by one, the FIN attempts once every byte arrived
//!   ([`Close`]);
//! - Reliability: RTT estimation ([`RttEstimator`]); the SACK scoreboard,
//!   loss detection and the retransmission queue ([`LossDetector`]);
//! - Pacing ([`Pacer`]) at the rate the controller ([`crate::cc`]) sets
//!   from the monitor intervals ([`Monitor`]).
//!
//! What the flow reports (trace lines, periodic samples, its record) is in
//! `report.rs`.
//!
//! The flow never reads a clock or touches a socket: every call gets `now`
//! (seconds on the engine's monotonic clock) and a [`Tx`] to send with, so
//! the same code runs in the event loop and on the simulated test bed.

mod report;

use crate::cc::{Ctx, RateController};
use crate::transport::handshake::{Close, Handshake};
use crate::transport::loss::LossDetector;
use crate::transport::monitor::{Monitor, Sample};
use crate::transport::pacer::Pacer;
use crate::transport::probe::RefProbe;
use crate::transport::record::TraceLine;
use crate::transport::rtt::RttEstimator;
use crate::transport::wire::{
    self, Body, Common, Packet, PktType, RcpHeader, DATA_HEADER_LEN, SIZE_UNKNOWN, STATUS_VERIFIED,
};
use crate::transport::xcp_header::{XcpHeader, XCP_HEADER_LEN};
use crate::transport::Tx;
use crate::transport::pattern;
use std::net::SocketAddr;

/// What a sender asks for in its SYN (and `rcp` in every packet) and the
/// upper bound of its rate, unless told otherwise (`--max-rate`'s default).
pub const DEFAULT_MAX_RATE: &str = "1gbit";

/// Most DATA packets one flow sends per wake-up before yielding.
const BURST_MAX: u32 = 64;
/// How far beyond the cumulative ack new data may go until the SYNACK
/// announces the receiver's window.
const INITIAL_WINDOW: u64 = 1 << 20;
/// An ACK echoing a timestamp older than this gives no RTT sample.
const RTT_SAMPLE_MAX_S: f64 = 60.0;

/// Everything that describes one flow to send.
#[derive(Clone, Debug)]
pub struct FlowParams {
    pub flow_id: u32,
    pub index: Option<u64>,
    pub dst: SocketAddr,
    pub scheme: String,
    /// Application bytes; None: send until `duration` has passed.
    pub size: Option<u64>,
    /// Seconds of new data for open-ended flows.
    pub duration: Option<f64>,
    pub mss: usize,
    pub max_rate_kbps: f64,
    pub min_rate_kbps: f64,
    /// Give up (completed = false) this long after the SYN.
    pub timeout_s: f64,
    pub trace: bool,
    /// Period of "sample" trace lines (0: none).
    pub sample_interval_s: f64,
    /// DSCP its packets carry (set on the socket; recorded).
    pub dscp: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    SynSent,
    Established,
    FinSent,
    Done,
}

pub struct SenderFlow {
    p: FlowParams,
    cc: Box<dyn RateController>,
    phase: Phase,
    t_start: f64,
    /// Wall clock at `t_start`: the record's start, which the receiver's
    /// last-byte time is compared with.
    t_start_unix: f64,
    // exchange
    handshake: Handshake,
    close: Close,
    synack_rate: Option<u32>,
    // reliability
    rtt: RttEstimator,
    loss: LossDetector,
    // pacing, and REF probes when it is slower than a packet per RTT
    pacer: Pacer,
    probe: RefProbe,
    // the byte stream: [0, end), new data from next_new, within cum + window
    end: u64,
    next_new: u64,
    /// The offset of the DATA packet the flow flagged ENDING, once it has: a retransmission of that
    /// packet carries the flag again, so that a router that dropped the first still counts the ending.
    ending_offset: Option<u64>,
    window: u64,
    /// Bytes the congestion header adds to every packet (XCP's; 0 for others).
    congestion_header_len: usize,
    // monitor intervals
    monitor: Monitor,
    last_loss: f64,
    // outcome
    sent: report::Sent,
    fct: Option<f64>,
    verified: Option<bool>,
    error: Option<String>,
    // trace
    trace: Vec<TraceLine>,
    sampled: report::Sampled,
    // scratch
    buf: Vec<u8>,
}

fn ts_us(now: f64) -> u32 {
    ((now * 1e6) as u64) as u32
}

/// A rate in an RCP header's 32-bit kb/s field.
fn rate_field(kbps: f64) -> u32 {
    kbps.round().clamp(1.0, u32::MAX as f64) as u32
}

impl SenderFlow {
    /// A flow that sends its SYN at the first `on_timer` call; `now_unix`
    /// is the wall clock at `now`.
    pub fn new(p: FlowParams, cc: Box<dyn RateController>, now: f64, now_unix: f64) -> SenderFlow {
        let congestion_header_len = if cc.congestion_request(1, 0.0).is_some() { XCP_HEADER_LEN } else { 0 };
        SenderFlow {
            cc,
            phase: Phase::SynSent,
            t_start: now,
            t_start_unix: now_unix,
            handshake: Handshake::new(now),
            close: Close::new(f64::INFINITY), // due once every byte arrived
            synack_rate: None,
            rtt: RttEstimator::default(),
            loss: LossDetector::new(p.mss),
            pacer: Pacer::new(now, p.min_rate_kbps),
            probe: RefProbe::new(now),
            end: p.size.unwrap_or(u64::MAX),
            ending_offset: None,
            next_new: 0,
            window: INITIAL_WINDOW,
            congestion_header_len,
            monitor: Monitor::default(),
            last_loss: 0.0,
            sent: report::Sent::new(now),
            fct: None,
            verified: None,
            error: None,
            trace: Vec::new(),
            sampled: report::Sampled::new(now),
            buf: Vec::with_capacity(DATA_HEADER_LEN + p.mss),
            p,
        }
    }

    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }
    /// Trace lines produced since the last call.
    pub fn take_trace(&mut self) -> Vec<TraceLine> {
        std::mem::take(&mut self.trace)
    }

    fn ctx(&self) -> Ctx {
        let srtt = self.rtt.srtt();
        Ctx {
            srtt_s: if srtt > 0.0 { srtt } else { 0.1 },
            frame_bytes: wire::frame_bytes(self.congestion_header_len + DATA_HEADER_LEN + self.p.mss),
            min_rate_kbps: self.p.min_rate_kbps,
            max_rate_kbps: self.p.max_rate_kbps,
        }
    }

    fn deadline(&self) -> f64 {
        self.t_start + self.p.timeout_s
    }

    // ---------------------------------------------------------------- timers

    /// When this flow next needs `on_timer` (seconds; infinity: never).
    pub fn next_wake(&self) -> f64 {
        let mut w = self.deadline();
        match self.phase {
            Phase::SynSent => w = w.min(self.handshake.next_retry()),
            Phase::FinSent => w = w.min(self.close.next_retry()),
            Phase::Done => return f64::INFINITY,
            Phase::Established => {
                if let (Some(d), u64::MAX) = (self.p.duration, self.end) {
                    w = w.min(self.t_start + d);
                }
                if let Some(t) = self.loss.next_deadline(&self.rtt) {
                    w = w.min(t);
                }
                if let Some(end) = self.monitor.current_end() {
                    w = w.min(end);
                }
                if self.has_data() {
                    w = w.min(self.pacer.next_departure());
                }
                if let Some(t) = self.probe_due() {
                    w = w.min(t);
                }
                if self.p.trace && self.p.sample_interval_s > 0.0 {
                    w = w.min(self.sampled.next());
                }
            }
        }
        w
    }

    /// Do whatever is due at `now`.
    pub fn on_timer(&mut self, now: f64, tx: &mut dyn Tx) {
        if self.phase != Phase::Done && now >= self.deadline() {
            let what = match self.phase {
                Phase::SynSent => "no SYNACK before the flow timeout",
                Phase::Established => "flow timeout before every byte was acknowledged",
                _ => "no FINACK before the flow timeout",
            };
            if self.phase == Phase::FinSent {
                self.phase = Phase::Done; // completed; only the close failed
            } else {
                self.abort(what);
            }
            return;
        }
        match self.phase {
            Phase::SynSent => {
                if now >= self.handshake.next_retry() {
                    self.send_syn(now, tx);
                }
            }
            Phase::Established => {
                if let (Some(d), u64::MAX) = (self.p.duration, self.end) {
                    if now >= self.t_start + d {
                        self.end = self.next_new;
                        self.check_complete(now);
                        if self.phase != Phase::Established {
                            self.on_timer(now, tx);
                            return;
                        }
                    }
                }
                self.loss.detect(now, &self.rtt, &mut self.monitor);
                self.deliver_reports(now);
                if self.monitor.current_end().is_some_and(|end| now >= end) {
                    self.start_mi(now);
                }
                self.send_paced(now, tx);
                if self.probe_due().is_some_and(|t| now >= t) {
                    self.send_ref(now, tx);
                }
                self.sample(now);
            }
            Phase::FinSent => {
                if now >= self.close.next_retry() {
                    if self.close.exhausted() {
                        self.phase = Phase::Done; // FCT is known; the close was lost
                    } else {
                        self.send_fin(now, tx);
                    }
                }
            }
            Phase::Done => {}
        }
    }

    /// The process is stopping: end the flow now.
    pub fn interrupt(&mut self) {
        match self.phase {
            Phase::Done => {}
            Phase::FinSent => self.phase = Phase::Done,
            _ => self.abort("interrupted"),
        }
    }

    fn abort(&mut self, why: &str) {
        self.error = Some(why.to_string());
        self.phase = Phase::Done;
    }

    // ------------------------------------------------------------- exchange

    /// The RCP header of a DATA or FIN packet: the rate the controller asks
    /// for, the smoothed RTT.
    fn forward_header(&self, ptype: PktType) -> RcpHeader {
        let mut rcp = RcpHeader::new(ptype);
        rcp.rate_kbps = rate_field(self.cc.asked_kbps(self.pacer.rate()));
        rcp.rtt_us = ((self.rtt.srtt() * 1e6) as u32).clamp(1, wire::RCP_MAX_RTT_US);
        rcp
    }

    /// The congestion header of a forward packet with `rcp` and a datagram of
    /// `len` bytes without it (XCP's; None for other controllers).
    fn congestion_header(&self, rcp: &RcpHeader, len: usize) -> Option<XcpHeader> {
        let s = wire::frame_bytes(len + self.congestion_header_len);
        let rtt_s = rcp.rtt_us as f64 / 1e6;
        let r = self.cc.congestion_request(s, rtt_s)?;
        Some(XcpHeader::forward(r.cwnd_bytes, rtt_s, s, r.feedback_bytes))
    }

    fn send_syn(&mut self, now: f64, tx: &mut dyn Tx) {
        let mut rcp = RcpHeader::new(PktType::Syn);
        rcp.rate_kbps = rate_field(self.p.max_rate_kbps);
        rcp.size = self.size_field();
        let common = Common {
            flow_id: self.p.flow_id,
            pkt_seq: self.handshake.next_seq(),
            ts_us: ts_us(now),
        };
        let body = Body::Syn {
            total_size: self.p.size.unwrap_or(SIZE_UNKNOWN),
            mss: self.p.mss as u16,
            cc: wire::cc_code(&self.p.scheme),
        };
        let xcp = self.congestion_header(&rcp, wire::SYN_LEN);
        Packet { rcp, xcp, common, body }.encode(&mut self.buf);
        if tx.send(&self.buf, self.p.dst) {
            self.handshake.on_sent(now);
        } else {
            self.handshake.on_blocked(now);
        }
    }

    fn on_synack(&mut self, rcp: &RcpHeader, xcp: Option<&XcpHeader>, common: &Common, window: u32, now: f64) {
        if self.phase != Phase::SynSent {
            return;
        }
        let Some(rtt) = self.handshake.rtt(common.pkt_seq, now) else {
            return; // not an answer to one of our SYNs
        };
        self.rtt.on_sample(rtt.max(1e-6));
        self.window = (window as u64).max(self.p.mss as u64);
        self.synack_rate = Some(rcp.feedback_kbps);
        let ctx = self.ctx();
        let mut r = self.cc.start(rcp.feedback_kbps, &ctx);
        if let Some(r_xcp) = xcp.and_then(|x| self.cc.on_congestion_feedback(x.feedback, &ctx)) {
            r = r_xcp;
        }
        self.phase = Phase::Established;
        self.pacer.restart(now);
        self.sampled = report::Sampled::new(now);
        self.set_rate(r, now);
        self.start_mi(now);
        self.check_complete(now); // a 0-byte flow is done at once
    }

    fn on_ack(
        &mut self,
        rcp: &RcpHeader,
        xcp: Option<&XcpHeader>,
        common: &Common,
        cum: u64,
        sacks: &[(u64, u64)],
        now: f64,
    ) {
        let rtt = (ts_us(now).wrapping_sub(common.ts_us)) as f64 / 1e6;
        let seq = common.pkt_seq;
        if !self.loss.was_sent(seq) {
            return; // acknowledges nothing we sent
        }
        let srtt = self.rtt.srtt();
        let sample = (rtt < RTT_SAMPLE_MAX_S).then(|| rtt.max(1e-6));
        if let Some(r) = sample {
            self.rtt.on_sample(r);
        }
        // the transmission this ACK echoes: an RTT sample of its interval
        if let (Some(rtt), Some((mi, sent_at))) = (sample, self.loss.echoed(seq)) {
            self.monitor.on_rtt_sample(Sample { mi, sent_at, rtt }, now, srtt);
        }
        // what the ACK covers was delivered, whether or not its own ACK arrives
        if self.loss.on_ack(seq, cum, sacks, &mut self.monitor) {
            self.rtt.on_spurious_loss();
        }
        if self.phase == Phase::Established {
            let ctx = self.ctx();
            if let Some(r) = self.cc.on_feedback(rcp.feedback_kbps, &ctx) {
                self.set_rate(r, now);
            }
            if let Some(r) = xcp.and_then(|x| self.cc.on_congestion_feedback(x.feedback, &ctx)) {
                self.set_rate(r, now);
            }
            self.loss.detect(now, &self.rtt, &mut self.monitor);
            self.deliver_reports(now);
            self.check_complete(now);
        }
    }

    /// Every byte arrived: the FCT is known, the FIN is due.
    fn check_complete(&mut self, now: f64) {
        if self.phase == Phase::Established && self.end != u64::MAX && self.loss.received(0, self.end) {
            self.fct = Some(now - self.t_start);
            self.monitor.close(now);
            self.phase = Phase::FinSent;
            self.close = Close::new(now);
        }
    }

    fn send_fin(&mut self, now: f64, tx: &mut dyn Tx) {
        let rcp = self.forward_header(PktType::Fin);
        let common = Common {
            flow_id: self.p.flow_id,
            pkt_seq: self.close.next_seq(),
            ts_us: ts_us(now),
        };
        Packet {
            rcp,
            xcp: self.congestion_header(&rcp, wire::FIN_LEN),
            common,
            body: Body::Fin { final_size: self.end },
        }
        .encode(&mut self.buf);
        if tx.send(&self.buf, self.p.dst) {
            self.close.on_sent(now, self.rtt.rto());
        } else {
            self.close.on_blocked(now);
        }
    }

    /// When a REF is due: the controller follows R and its packets leave
    /// further apart than the flow's minimum RTT (`transport/probe.rs`).
    fn probe_due(&self) -> Option<f64> {
        if self.phase != Phase::Established || !self.cc.follows_routers() {
            return None;
        }
        let frame_bits = self.ctx().frame_bytes as f64 * 8.0;
        let ref_bits = wire::frame_bytes(wire::REF_LEN) as f64 * 8.0;
        let bps = self.pacer.rate() * 1000.0;
        self.probe.due(frame_bits / bps, self.rtt.min_rtt(), ref_bits / bps)
    }

    fn send_ref(&mut self, now: f64, tx: &mut dyn Tx) {
        let common = Common {
            flow_id: self.p.flow_id,
            pkt_seq: self.probe.next_seq(),
            ts_us: ts_us(now),
        };
        Packet {
            rcp: self.forward_header(PktType::Ref),
            xcp: None, // REF probes are RCP's
            common,
            body: Body::Ref,
        }
        .encode(&mut self.buf);
        if tx.send(&self.buf, self.p.dst) {
            self.probe.on_forward(now);
        }
    }

    /// A REF's answer: the rate the routers stamped into it, and an RTT sample.
    fn on_refack(&mut self, rcp: &RcpHeader, common: &Common, now: f64) {
        let rtt = (ts_us(now).wrapping_sub(common.ts_us)) as f64 / 1e6;
        if rtt < RTT_SAMPLE_MAX_S {
            self.rtt.on_sample(rtt.max(1e-6));
        }
        let ctx = self.ctx();
        if let Some(r) = self.cc.on_feedback(rcp.feedback_kbps, &ctx) {
            self.set_rate(r, now);
        }
    }

    fn on_finack(&mut self, cum_ack: u64, status: u8) {
        if self.phase != Phase::FinSent {
            return;
        }
        if cum_ack >= self.end {
            self.verified = Some(status & STATUS_VERIFIED != 0);
        } else {
            self.verified = Some(false);
            self.error = Some(format!("receiver closed with {cum_ack} of {} bytes", self.end));
        }
        self.phase = Phase::Done;
    }

    /// A datagram for this flow arrived.
    pub fn on_packet(&mut self, pkt: &Packet, now: f64, tx: &mut dyn Tx) {
        match pkt.body {
            Body::SynAck { window } => self.on_synack(&pkt.rcp, pkt.xcp.as_ref(), &pkt.common, window, now),
            Body::Ack { cum_ack, sacks, .. } if self.phase == Phase::Established || self.phase == Phase::FinSent => {
                self.on_ack(&pkt.rcp, pkt.xcp.as_ref(), &pkt.common, cum_ack, sacks.as_slice(), now);
            }
            Body::FinAck { cum_ack, status } => self.on_finack(cum_ack, status),
            Body::RefAck if self.phase == Phase::Established => self.on_refack(&pkt.rcp, &pkt.common, now),
            _ => {} // forward types are not for a sender
        }
        if self.phase == Phase::Established || self.phase == Phase::FinSent {
            self.on_timer(now, tx);
        }
    }

    // ---------------------------------------------------- monitor intervals

    fn set_rate(&mut self, r: f64, now: f64) {
        let r = self.ctx().clamp(r);
        if self.pacer.set_rate(r) && self.p.trace {
            let line = self.trace_line("rate", now);
            self.trace.push(line);
        }
    }

    /// End the current interval (if any) and start the next one planned by
    /// the controller.
    fn start_mi(&mut self, now: f64) {
        let ctx = self.ctx();
        let mut plan = self.cc.next_mi(self.monitor.next_id(), &ctx);
        plan.rate_kbps = ctx.clamp(plan.rate_kbps);
        plan.duration_s = plan.duration_s.max(1e-4);
        self.monitor.open(plan, now);
        self.set_rate(plan.rate_kbps, now);
    }

    fn deliver_reports(&mut self, now: f64) {
        while let Some(r) = self.monitor.pop_ready() {
            self.last_loss = r.loss;
            let ctx = self.ctx();
            let restart = self.cc.on_mi(&r, &ctx);
            if self.p.trace {
                let line = self.mi_line(&r, now);
                self.trace.push(line);
            }
            if restart && self.phase == Phase::Established {
                self.start_mi(now);
            }
        }
    }

    // -------------------------------------------------------------- sending

    fn has_data(&self) -> bool {
        self.loss.has_retransmissions()
            || (self.next_new < self.end && self.next_new < self.loss.cum().saturating_add(self.send_window()))
    }

    /// How far beyond the cumulative ack new data may go: the receiver's
    /// window, and a window-based controller's cwnd in whole packets.
    fn send_window(&self) -> u64 {
        match self.cc.cwnd_bytes() {
            Some(cwnd) => {
                let packets = (cwnd / self.ctx().frame_bytes as f64).floor().max(1.0);
                self.window.min(packets as u64 * self.p.mss as u64)
            }
            None => self.window,
        }
    }

    /// Next bytes to send: retransmissions first, then new data.
    fn next_chunk(&self) -> Option<(u64, u32, bool)> {
        if let Some((s, len)) = self.loss.next_retransmission() {
            return Some((s, len, true));
        }
        let limit = self.end.min(self.loss.cum().saturating_add(self.send_window()));
        if self.next_new < limit {
            let len = (limit - self.next_new).min(self.p.mss as u64) as u32;
            return Some((self.next_new, len, false));
        }
        None
    }

    fn send_paced(&mut self, now: f64, tx: &mut dyn Tx) {
        let mut n = 0;
        while self.phase == Phase::Established && self.pacer.ready(now) && n < BURST_MAX {
            let Some((off, len, is_retx)) = self.next_chunk() else {
                self.pacer.idle(now);
                self.monitor.on_app_limited();
                break;
            };
            let mut rcp = self.forward_header(PktType::Data);
            let last = !is_retx && self.is_last_new(off + len as u64, len, now);
            // The flow's last new packet is its ENDING at the latest: at a rate too low for a round trip to
            // carry a packet, the unsent data never fits one, and a router that never heard the ending
            // would count the flow forever.
            let ending = match self.ending_offset {
                None => !is_retx && (last || self.is_ending(off, now)),
                Some(at) => is_retx && at == off,
            };
            if ending {
                rcp.flags |= wire::FLAG_ENDING;
                rcp.size = self.size_field();
            }
            let common = Common {
                flow_id: self.p.flow_id,
                pkt_seq: self.loss.next_seq(),
                ts_us: ts_us(now),
            };
            let xcp = self.congestion_header(&rcp, DATA_HEADER_LEN + len as usize);
            let payload = wire::encode_data(&rcp, xcp.as_ref(), &common, off, len as usize, &mut self.buf);
            pattern::fill(self.p.flow_id, off, payload);
            if !tx.send(&self.buf, self.p.dst) {
                self.pacer.on_blocked(now);
                break;
            }
            let frame = wire::frame_bytes(self.buf.len()) as u32;
            if !is_retx {
                self.next_new = off + len as u64;
            }
            if last {
                self.end = self.next_new; // an open-ended flow's new data ends with its last packet
            }
            if ending {
                self.ending_offset.get_or_insert(off);
            }
            let mi = self.monitor.on_send(frame, now);
            self.loss.on_send(off, len, frame, now, mi, is_retx);
            self.sent.on_send(frame, now, is_retx);
            self.pacer.on_send(now, frame as usize);
            self.probe.on_forward(now);
            n += 1;
            if self.loss.next_seq() == u32::MAX {
                self.abort("ran out of packet sequence numbers");
            }
        }
    }

    /// The `size` the flow announces on its SYN and its ENDING packet.
    fn size_field(&self) -> u16 {
        wire::size_packets(self.p.size.unwrap_or(u64::MAX), self.p.mss as u32)
    }

    /// Does the data not sent yet from `off` on take at most one round trip at the pacing rate (for an
    /// open-ended flow: does its time end within one round trip)? Then its routers may give its share to
    /// others from now on: the flows that hear it speed up one round trip later, as this one stops.
    fn is_ending(&self, off: u64, now: f64) -> bool {
        let rtt = self.rtt.srtt();
        if rtt <= 0.0 {
            return false;
        }
        match (self.p.duration, self.end) {
            (Some(d), u64::MAX) => self.t_start + d - now <= rtt,
            (_, end) => ((end - off) as f64) * 8.0 <= self.pacer.rate() * 1000.0 * rtt,
        }
    }

    /// Whether new data ending at `end_offset` is the flow's last: its final
    /// bytes, or, for an open-ended flow, the packet after which the next one
    /// would leave at or after the end of its duration at the pace in force.
    /// (An open-ended flow that sends no new data in its last packet interval,
    /// window-limited, ends at its deadline without it.)
    fn is_last_new(&self, end_offset: u64, len: u32, now: f64) -> bool {
        if end_offset == self.end {
            return true;
        }
        match (self.p.duration, self.end) {
            (Some(d), u64::MAX) => {
                let frame_bits =
                    wire::frame_bytes(self.congestion_header_len + wire::DATA_HEADER_LEN + len as usize) as f64 * 8.0;
                let next = self.pacer.next_departure().max(now) + frame_bits / (self.pacer.rate() * 1000.0);
                next >= self.t_start + d
            }
            _ => false,
        }
    }

    /// Packets declared lost that were acknowledged later.
    pub fn spurious(&self) -> u64 {
        self.loss.spurious()
    }
}

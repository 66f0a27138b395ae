//! The sending side of one UDP flow: handshake, pacing, selective-ack
//! bookkeeping, loss detection, retransmission and RTT estimation, written
//! once for every rate controller; monitor intervals are counted in
//! [`crate::transport::monitor`].
//!
//! The flow never reads a clock or touches a socket: every call gets `now`
//! (seconds on the engine's monotonic clock) and a [`Tx`] to send with, so
//! the same code runs in the event loop and in simulated-network tests.

use super::Tx;
use crate::cc::{Ctx, RateController};
use crate::transport::monitor::{Monitor, Sample};
use crate::transport::rangeset::RangeSet;
use crate::transport::record::{round, FlowRecord, TraceLine};
use crate::transport::wire::{self, Body, Common, Packet, RcpHeader, DATA_HEADER_LEN, SIZE_UNKNOWN, STATUS_VERIFIED};
use crate::units::Pacer;
use crate::workload::pattern;
use std::collections::{BTreeSet, HashSet, VecDeque};
use std::net::SocketAddr;

/// Most DATA packets one flow sends per wake-up before yielding.
const BURST_MAX: u32 = 64;
/// FIN attempts before the flow gives up on a FINACK.
const FIN_TRIES: u32 = 8;
/// Initial SYN retransmission timeout (RFC 6298's 1 s), doubled per try.
const SYN_RTO: f64 = 1.0;

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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    SynSent,
    Established,
    FinSent,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PktState {
    Out,
    Acked,
    Lost,
}

#[derive(Clone, Copy, Debug)]
struct SentPkt {
    seq: u32,
    offset: u64,
    len: u32,
    frame: u32,
    sent_at: f64,
    mi: u64,
    state: PktState,
}

pub struct SenderFlow {
    p: FlowParams,
    cc: Box<dyn RateController>,
    phase: Phase,
    t_start: f64,
    /// Wall clock at `t_start`: the record's start, which the receiver's
    /// last-byte time is compared with.
    t_start_unix: f64,
    // handshake and close
    syn_sent: Vec<f64>,
    fin_tries: u32,
    next_retry: f64,
    synack_rate: Option<u32>,
    // RTT
    srtt: f64,
    rttvar: f64,
    min_rtt: f64,
    reo_mult: f64,
    // pacing
    pacer: Pacer,
    pace_rate: f64,
    blocked_until: f64,
    // data
    end: u64,
    next_new: u64,
    window: u64,
    sacked: RangeSet,
    retx: RangeSet,
    sent: VecDeque<SentPkt>,
    /// (offset, seq) of the transmissions still `Out`, to find those a new
    /// cumulative ack or SACK block covers.
    out_by_offset: BTreeSet<(u64, u32)>,
    next_seq: u32,
    largest_acked: u32,
    recently_lost: HashSet<u32>,
    recently_lost_order: VecDeque<u32>,
    // monitor intervals
    monitor: Monitor,
    last_loss: f64,
    // statistics
    retransmissions: u64,
    pkts_sent: u64,
    /// DATA transmissions declared lost (nothing had covered them).
    pkts_lost: u64,
    pkts_delivered: u64,
    frame_bytes_sent: u64,
    first_frame: u64,
    first_data_at: Option<f64>,
    last_data_at: f64,
    acked_bytes: u64,
    spurious: u64,
    fct: Option<f64>,
    verified: Option<bool>,
    error: Option<String>,
    // trace
    trace: Vec<TraceLine>,
    next_sample: f64,
    sample_acked: u64,
    sample_frames: u64,
    sample_lost: u64,
    sample_delivered: u64,
    // scratch
    buf: Vec<u8>,
    payload: Vec<u8>,
}

fn ts_us(now: f64) -> u32 {
    ((now * 1e6) as u64) as u32
}

impl SenderFlow {
    /// A flow that sends its SYN at the first `on_timer` call; `now_unix`
    /// is the wall clock at `now`.
    pub fn new(p: FlowParams, cc: Box<dyn RateController>, now: f64, now_unix: f64) -> SenderFlow {
        let end = p.size.unwrap_or(u64::MAX);
        SenderFlow {
            cc,
            phase: Phase::SynSent,
            t_start: now,
            t_start_unix: now_unix,
            syn_sent: Vec::new(),
            fin_tries: 0,
            next_retry: now,
            synack_rate: None,
            srtt: 0.0,
            rttvar: 0.0,
            min_rtt: f64::INFINITY,
            reo_mult: 1.0,
            pacer: Pacer::new(now),
            pace_rate: p.min_rate_kbps,
            blocked_until: 0.0,
            end,
            next_new: 0,
            window: 1 << 20,
            sacked: RangeSet::new(),
            retx: RangeSet::new(),
            sent: VecDeque::new(),
            out_by_offset: BTreeSet::new(),
            next_seq: 1,
            largest_acked: 0,
            recently_lost: HashSet::new(),
            recently_lost_order: VecDeque::new(),
            monitor: Monitor::default(),
            last_loss: 0.0,
            retransmissions: 0,
            pkts_sent: 0,
            pkts_lost: 0,
            pkts_delivered: 0,
            frame_bytes_sent: 0,
            first_frame: 0,
            first_data_at: None,
            last_data_at: now,
            acked_bytes: 0,
            spurious: 0,
            fct: None,
            verified: None,
            error: None,
            trace: Vec::new(),
            next_sample: now,
            sample_acked: 0,
            sample_frames: 0,
            sample_lost: 0,
            sample_delivered: 0,
            buf: Vec::with_capacity(2048),
            payload: vec![0u8; p.mss],
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
        Ctx {
            srtt_s: if self.srtt > 0.0 { self.srtt } else { 0.1 },
            frame_bytes: wire::frame_bytes(DATA_HEADER_LEN + self.p.mss),
            min_rate_kbps: self.p.min_rate_kbps,
            max_rate_kbps: self.p.max_rate_kbps,
        }
    }

    fn cum(&self) -> u64 {
        self.sacked.run_end(0)
    }

    /// Reordering window of the time-based loss detection.
    fn reo_wnd(&self) -> f64 {
        (self.min_rtt / 4.0).max(0.001) * self.reo_mult
    }

    /// Retransmission timeout of a packet with no later packet acknowledged.
    fn rto(&self) -> f64 {
        self.srtt + (4.0 * self.rttvar).max(0.25 * self.srtt).max(0.005) + self.reo_wnd()
    }

    fn deadline(&self) -> f64 {
        self.t_start + self.p.timeout_s
    }

    // ---------------------------------------------------------------- timers

    /// When this flow next needs `on_timer` (seconds; infinity: never).
    pub fn next_wake(&self) -> f64 {
        let mut w = self.deadline();
        match self.phase {
            Phase::SynSent | Phase::FinSent => w = w.min(self.next_retry),
            Phase::Done => return f64::INFINITY,
            Phase::Established => {
                if let (Some(d), u64::MAX) = (self.p.duration, self.end) {
                    w = w.min(self.t_start + d);
                }
                if let Some(front) = self.sent.front() {
                    w = w.min(self.loss_deadline(front));
                }
                if let Some(end) = self.monitor.current_end() {
                    w = w.min(end);
                }
                if self.has_data() {
                    w = w.min(self.pacer.next_departure().max(self.blocked_until));
                }
                if self.p.trace && self.p.sample_interval_s > 0.0 {
                    w = w.min(self.next_sample);
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
                if now >= self.next_retry {
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
                self.detect_losses(now);
                self.deliver_reports(now);
                if self.monitor.current_end().is_some_and(|end| now >= end) {
                    self.start_mi(now);
                }
                if now >= self.blocked_until {
                    self.send_paced(now, tx);
                }
                self.sample(now);
            }
            Phase::FinSent => {
                if now >= self.next_retry {
                    if self.fin_tries >= FIN_TRIES {
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

    // ------------------------------------------------------------ handshake

    fn send_syn(&mut self, now: f64, tx: &mut dyn Tx) {
        let mut rcp = RcpHeader::new(wire::PktType::Syn);
        rcp.rate_kbps = self.p.max_rate_kbps.round().clamp(1.0, u32::MAX as f64) as u32;
        let common = Common {
            flow_id: self.p.flow_id,
            pkt_seq: self.syn_sent.len() as u32,
            ts_us: ts_us(now),
        };
        let body = Body::Syn {
            total_size: self.p.size.unwrap_or(SIZE_UNKNOWN),
            mss: self.p.mss as u16,
            cc: wire::cc_code(&self.p.scheme),
        };
        Packet { rcp, common, body }.encode(&mut self.buf);
        if !tx.send(&self.buf, self.p.dst) {
            self.next_retry = now + 0.001;
            return;
        }
        let tries = self.syn_sent.len() as i32;
        self.syn_sent.push(now);
        self.next_retry = now + (SYN_RTO * 2f64.powi(tries)).min(8.0);
    }

    fn on_synack(&mut self, rcp: &RcpHeader, common: &Common, window: u32, now: f64) {
        if self.phase != Phase::SynSent {
            return;
        }
        let rtt = match self.syn_sent.get(common.pkt_seq as usize) {
            Some(&t) => now - t,
            None => return, // not an answer to one of our SYNs
        };
        self.rtt_sample(rtt.max(1e-6));
        self.window = (window as u64).max(self.p.mss as u64);
        self.synack_rate = Some(rcp.feedback_kbps);
        let ctx = self.ctx();
        let r = self.cc.start(rcp.feedback_kbps, &ctx);
        self.phase = Phase::Established;
        self.pacer = Pacer::new(now);
        self.next_sample = now;
        self.set_rate(r, now);
        self.start_mi(now);
        self.check_complete(now); // a 0-byte flow is done at once
    }

    fn send_fin(&mut self, now: f64, tx: &mut dyn Tx) {
        let mut rcp = RcpHeader::new(wire::PktType::Fin);
        rcp.rate_kbps = self.cc.asked_kbps(self.pace_rate).round().clamp(1.0, u32::MAX as f64) as u32;
        rcp.rtt_us = ((self.srtt * 1e6) as u32).clamp(1, wire::RCP_MAX_RTT_US);
        let common = Common {
            flow_id: self.p.flow_id,
            pkt_seq: self.fin_tries,
            ts_us: ts_us(now),
        };
        Packet {
            rcp,
            common,
            body: Body::Fin { final_size: self.end },
        }
        .encode(&mut self.buf);
        if !tx.send(&self.buf, self.p.dst) {
            self.next_retry = now + 0.001;
            return;
        }
        self.fin_tries += 1;
        self.next_retry = now + (self.rto() * 2f64.powi(self.fin_tries as i32 - 1)).clamp(0.01, 2.0);
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

    fn check_complete(&mut self, now: f64) {
        if self.phase == Phase::Established && self.end != u64::MAX && self.sacked.contains(0, self.end) {
            self.fct = Some(now - self.t_start);
            self.monitor.close(now);
            self.phase = Phase::FinSent;
            self.next_retry = now;
        }
    }

    // ------------------------------------------------------------------ RTT

    fn rtt_sample(&mut self, r: f64) {
        if self.srtt == 0.0 {
            self.srtt = r;
            self.rttvar = r / 2.0;
        } else {
            self.rttvar = 0.75 * self.rttvar + 0.25 * (self.srtt - r).abs();
            self.srtt = 0.875 * self.srtt + 0.125 * r;
        }
        self.min_rtt = self.min_rtt.min(r);
    }

    // ---------------------------------------------------------------- input

    /// A datagram for this flow arrived.
    pub fn on_packet(&mut self, pkt: &Packet, now: f64, tx: &mut dyn Tx) {
        match pkt.body {
            Body::SynAck { window } => self.on_synack(&pkt.rcp, &pkt.common, window, now),
            Body::Ack { cum_ack, sacks, .. } if self.phase == Phase::Established || self.phase == Phase::FinSent => {
                self.on_ack(&pkt.rcp, &pkt.common, cum_ack, sacks.as_slice(), now);
            }
            Body::FinAck { cum_ack, status } => self.on_finack(cum_ack, status),
            _ => {} // forward types are not for a sender
        }
        if self.phase == Phase::Established || self.phase == Phase::FinSent {
            self.on_timer(now, tx);
        }
    }

    fn on_ack(&mut self, rcp: &RcpHeader, common: &Common, cum: u64, sacks: &[(u64, u64)], now: f64) {
        let rtt = (ts_us(now).wrapping_sub(common.ts_us)) as f64 / 1e6;
        let seq = common.pkt_seq;
        if seq >= self.next_seq || seq == 0 {
            return; // acknowledges nothing we sent
        }
        let srtt = self.srtt;
        if rtt < 60.0 {
            self.rtt_sample(rtt.max(1e-6));
        }
        // the transmission this ACK echoes: an RTT sample, and delivered
        match self.sent_index(seq) {
            Some(idx) => {
                let pk = self.sent[idx];
                if rtt < 60.0 {
                    let s = Sample {
                        mi: pk.mi,
                        sent_at: pk.sent_at,
                        rtt: rtt.max(1e-6),
                    };
                    self.monitor.on_rtt_sample(s, now, srtt);
                }
                match pk.state {
                    PktState::Out => self.delivered(idx),
                    PktState::Lost => self.spurious_loss(),
                    PktState::Acked => {}
                }
            }
            None => {
                if self.recently_lost.remove(&seq) {
                    self.spurious_loss();
                }
            }
        }
        self.largest_acked = self.largest_acked.max(seq);
        // every transmission the cumulative ack or a SACK block now covers
        // was delivered, whether or not its own ACK arrives
        self.mark_received(0, cum);
        for &(s, e) in sacks {
            self.mark_received(s, e);
        }
        if self.phase == Phase::Established {
            let ctx = self.ctx();
            if let Some(r) = self.cc.on_feedback(rcp.feedback_kbps, &ctx) {
                self.set_rate(r, now);
            }
            self.detect_losses(now);
            self.deliver_reports(now);
            self.check_complete(now);
        }
    }

    fn sent_index(&self, seq: u32) -> Option<usize> {
        let base = self.sent.front()?.seq;
        let idx = seq.checked_sub(base)? as usize;
        (idx < self.sent.len()).then_some(idx)
    }

    /// Transmission `idx` (still `Out`) arrived.
    fn delivered(&mut self, idx: usize) {
        let pk = self.sent[idx];
        self.sent[idx].state = PktState::Acked;
        self.out_by_offset.remove(&(pk.offset, pk.seq));
        self.monitor.on_delivered(pk.mi, pk.frame);
        self.pkts_delivered += 1;
    }

    fn spurious_loss(&mut self) {
        self.spurious += 1;
        self.reo_mult = (self.reo_mult + 1.0).min(8.0);
    }

    /// The receiver has `[s, e)`: count new bytes, cancel their
    /// retransmission, deliver the transmissions they complete.
    fn mark_received(&mut self, s: u64, e: u64) {
        let new = self.sacked.missing(s, e);
        if new.is_empty() {
            return;
        }
        self.sacked.insert(s, e);
        for (ns, ne) in new {
            self.acked_bytes += ne - ns;
            self.retx.remove(ns, ne);
            // transmissions holding any of the new bytes start at most one
            // MSS before them
            let from = (ns.saturating_sub(self.p.mss as u64), 0);
            let done: Vec<u32> = self
                .out_by_offset
                .range(from..(ne, 0))
                .filter(|&&(off, seq)| {
                    let len = self.sent_index(seq).map_or(0, |i| self.sent[i].len as u64);
                    off + len > ns && self.sacked.contains(off, off + len)
                })
                .map(|&(_, seq)| seq)
                .collect();
            for seq in done {
                if let Some(idx) = self.sent_index(seq) {
                    self.delivered(idx);
                }
            }
        }
    }

    // ------------------------------------------------------- loss detection

    /// When `pk` (outstanding) counts as lost: one smoothed RTT plus the
    /// reordering window after it left if a later packet was acknowledged,
    /// else the retransmission timeout. Both grow with the send time, so the
    /// oldest outstanding packet is always the first due.
    fn loss_deadline(&self, pk: &SentPkt) -> f64 {
        if pk.seq < self.largest_acked {
            pk.sent_at + self.srtt + self.reo_wnd()
        } else {
            pk.sent_at + self.rto()
        }
    }

    fn detect_losses(&mut self, now: f64) {
        let mut i = 0;
        while i < self.sent.len() {
            let pk = self.sent[i];
            if pk.state == PktState::Out {
                if now < self.loss_deadline(&pk) {
                    break;
                }
                self.sent[i].state = PktState::Lost;
                self.out_by_offset.remove(&(pk.offset, pk.seq));
                self.monitor.on_lost(pk.mi);
                self.pkts_lost += 1;
                for (s, e) in self.sacked.missing(pk.offset, pk.offset + pk.len as u64) {
                    self.retx.insert(s, e);
                }
            }
            i += 1;
        }
        while let Some(front) = self.sent.front() {
            match front.state {
                PktState::Out => break,
                PktState::Acked => {}
                PktState::Lost => {
                    self.recently_lost.insert(front.seq);
                    self.recently_lost_order.push_back(front.seq);
                    if self.recently_lost_order.len() > 4096 {
                        if let Some(old) = self.recently_lost_order.pop_front() {
                            self.recently_lost.remove(&old);
                        }
                    }
                }
            }
            self.sent.pop_front();
        }
    }

    // ---------------------------------------------------- monitor intervals

    fn set_rate(&mut self, r: f64, now: f64) {
        let r = self.ctx().clamp(r);
        if r != self.pace_rate {
            self.pace_rate = r;
            if self.p.trace {
                let line = self.trace_line("rate", now);
                self.trace.push(line);
            }
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
                let mut line = self.trace_line("mi", now);
                line.mi_rate_kbps = Some(round(r.rate_kbps, 3));
                line.send_kbps = Some(round(r.send_kbps, 3));
                line.throughput_kbps = Some(round(r.throughput_kbps, 3));
                line.rtt_gradient = Some(round(r.rtt_gradient, 6));
                line.rtt_samples = Some(r.rtt_samples);
                if r.avg_rtt_s > 0.0 {
                    line.rtt_scatter = Some(round(r.rtt_residual / r.avg_rtt_s, 6));
                }
                self.trace.push(line);
            }
            if restart && self.phase == Phase::Established {
                self.start_mi(now);
            }
        }
    }

    // -------------------------------------------------------------- sending

    fn has_data(&self) -> bool {
        !self.retx.is_empty() || (self.next_new < self.end && self.next_new < self.cum().saturating_add(self.window))
    }

    /// Next bytes to send: retransmissions first, then new data.
    fn next_chunk(&self) -> Option<(u64, u32, bool)> {
        if let Some((s, e)) = self.retx.first() {
            let len = (e - s).min(self.p.mss as u64) as u32;
            return Some((s, len, true));
        }
        let limit = self.end.min(self.cum().saturating_add(self.window));
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
            let seq = self.next_seq;
            let mut rcp = RcpHeader::new(wire::PktType::Data);
            rcp.rate_kbps = self.cc.asked_kbps(self.pace_rate).round().clamp(1.0, u32::MAX as f64) as u32;
            rcp.rtt_us = ((self.srtt * 1e6) as u32).clamp(1, wire::RCP_MAX_RTT_US);
            let common = Common {
                flow_id: self.p.flow_id,
                pkt_seq: seq,
                ts_us: ts_us(now),
            };
            wire::encode_data_header(&rcp, &common, off, &mut self.buf);
            let payload = &mut self.payload[..len as usize];
            pattern::fill(self.p.flow_id, off, payload);
            self.buf.extend_from_slice(payload);
            if !tx.send(&self.buf, self.p.dst) {
                self.blocked_until = now + 0.0002;
                break;
            }
            let frame = wire::frame_bytes(self.buf.len()) as u32;
            if is_retx {
                self.retx.remove(off, off + len as u64);
                self.retransmissions += 1;
            } else {
                self.next_new = off + len as u64;
            }
            self.next_seq = self.next_seq.wrapping_add(1);
            let mi = self.monitor.on_send(frame, now);
            self.sent.push_back(SentPkt {
                seq,
                offset: off,
                len,
                frame,
                sent_at: now,
                mi,
                state: PktState::Out,
            });
            self.out_by_offset.insert((off, seq));
            if self.first_data_at.is_none() {
                self.first_data_at = Some(now);
                self.first_frame = frame as u64;
            }
            self.last_data_at = now;
            self.pkts_sent += 1;
            self.frame_bytes_sent += frame as u64;
            self.pacer.on_send(now, frame as usize, self.pace_rate);
            n += 1;
            if self.next_seq == u32::MAX {
                self.abort("ran out of packet sequence numbers");
            }
        }
    }

    // ---------------------------------------------------------------- trace

    fn sample(&mut self, now: f64) {
        if !self.p.trace || self.p.sample_interval_s <= 0.0 || now < self.next_sample {
            return;
        }
        let dt = self.p.sample_interval_s;
        let mut line = self.trace_line("sample", now);
        line.goodput_kbps = Some(round(
            (self.acked_bytes - self.sample_acked) as f64 * 8.0 / dt / 1000.0,
            3,
        ));
        line.send_kbps = Some(round(
            (self.frame_bytes_sent - self.sample_frames) as f64 * 8.0 / dt / 1000.0,
            3,
        ));
        let lost = self.pkts_lost - self.sample_lost;
        let resolved = lost + self.pkts_delivered - self.sample_delivered;
        line.loss = (resolved > 0).then(|| round(lost as f64 / resolved as f64, 5));
        self.trace.push(line);
        self.sample_acked = self.acked_bytes;
        self.sample_frames = self.frame_bytes_sent;
        self.sample_lost = self.pkts_lost;
        self.sample_delivered = self.pkts_delivered;
        self.next_sample += dt;
        if self.next_sample < now {
            self.next_sample = now + dt;
        }
    }

    /// A trace line of `event` with the flow's state at `now`.
    fn trace_line(&self, event: &'static str, now: f64) -> TraceLine {
        TraceLine {
            flow_id: self.p.flow_id,
            event,
            t_s: round(now - self.t_start, 6),
            rate_kbps: round(self.pace_rate, 3),
            srtt_ms: round(self.srtt * 1e3, 3),
            mi_loss: round(self.last_loss, 5),
            goodput_kbps: None,
            send_kbps: None,
            loss: None,
            mi_rate_kbps: None,
            throughput_kbps: None,
            rtt_gradient: None,
            rtt_samples: None,
            rtt_scatter: None,
            state: self.cc.state(),
        }
    }

    // --------------------------------------------------------------- record

    pub fn record(&self) -> FlowRecord {
        let size = if self.end == u64::MAX { self.next_new } else { self.end };
        let span = self.last_data_at - self.first_data_at.unwrap_or(self.last_data_at);
        let completed = self.fct.is_some();
        FlowRecord {
            flow_id: self.p.flow_id,
            index: self.p.index,
            scheme: self.p.scheme.clone(),
            dst: self.p.dst.to_string(),
            size_bytes: size,
            start_unix_s: round(self.t_start_unix, 6),
            fct_s: self.fct.map(|f| round(f, 6)),
            completed,
            verified: self.verified,
            retransmissions: self.retransmissions,
            packets_sent: self.pkts_sent,
            packets_lost: Some(self.pkts_lost),
            mean_rate_kbps: self.fct.map(|f| round(size as f64 * 8.0 / f.max(1e-9) / 1000.0, 3)),
            send_rate_kbps: if span > 0.0 {
                Some(round(
                    (self.frame_bytes_sent - self.first_frame) as f64 * 8.0 / span / 1000.0,
                    3,
                ))
            } else {
                None
            },
            synack_rate_kbps: self.synack_rate,
            min_rtt_ms: if self.min_rtt.is_finite() {
                Some(round(self.min_rtt * 1e3, 3))
            } else {
                None
            },
            srtt_ms: if self.srtt > 0.0 {
                Some(round(self.srtt * 1e3, 3))
            } else {
                None
            },
            error: self.error.clone(),
        }
    }

    /// Packets declared lost that were acknowledged later.
    pub fn spurious(&self) -> u64 {
        self.spurious
    }
}

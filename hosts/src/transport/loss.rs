//! Reliability (`docs/protocol.md`, "Reliability"): which bytes the
//! receiver has (the SACK scoreboard), which DATA transmissions are still
//! out, when one counts as lost, and the bytes to send again.
//!
//! A transmission is *delivered* as soon as an ACK covers its bytes, by the
//! cumulative ack or a SACK block, whether or not its own ACK arrives; it is
//! *lost* when it is still out `srtt + reo_wnd` after it left while a later
//! transmission was acknowledged, or one RTO after it left otherwise. The
//! bytes of a lost transmission that nothing covered are queued for
//! retransmission. Each fate is told to a [`Fates`] (the monitor
//! intervals).

use super::monitor::Monitor;
use super::rangeset::RangeSet;
use super::rtt::RttEstimator;
use std::collections::{BTreeSet, HashSet, VecDeque};

/// Transmissions declared lost are remembered this long (by count) to
/// recognise a late ACK as a spurious loss.
const RECENTLY_LOST_MAX: usize = 4096;

/// Who learns what became of each transmission: the monitor interval
/// (`mi`) it was sent in.
pub trait Fates {
    /// A transmission of `frame` bytes was delivered.
    fn delivered(&mut self, mi: u64, frame: u32);
    /// A transmission was lost.
    fn lost(&mut self, mi: u64);
}

impl Fates for Monitor {
    fn delivered(&mut self, mi: u64, frame: u32) {
        self.on_delivered(mi, frame);
    }
    fn lost(&mut self, mi: u64) {
        self.on_lost(mi);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PktState {
    Out,
    Acked,
    Lost,
}

/// One DATA transmission.
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

/// The sender's view of one flow's delivery.
#[derive(Clone, Debug)]
pub struct LossDetector {
    mss: u64,
    /// Bytes the receiver has: its cumulative ack and SACK blocks.
    sacked: RangeSet,
    /// Bytes of lost transmissions nothing has covered: sent again first.
    retx: RangeSet,
    /// Transmissions from the oldest one still out, in `seq` order.
    sent: VecDeque<SentPkt>,
    /// (offset, seq) of the transmissions still out, to find those a new
    /// cumulative ack or SACK block covers.
    out_by_offset: BTreeSet<(u64, u32)>,
    next_seq: u32,
    largest_acked: u32,
    recently_lost: HashSet<u32>,
    recently_lost_order: VecDeque<u32>,
    lost: u64,
    delivered: u64,
    acked_bytes: u64,
    spurious: u64,
}

impl LossDetector {
    /// No transmission made, nothing received; transmissions hold at most
    /// `mss` bytes.
    pub fn new(mss: usize) -> LossDetector {
        LossDetector {
            mss: mss as u64,
            sacked: RangeSet::new(),
            retx: RangeSet::new(),
            sent: VecDeque::new(),
            out_by_offset: BTreeSet::new(),
            next_seq: 1,
            largest_acked: 0,
            recently_lost: HashSet::new(),
            recently_lost_order: VecDeque::new(),
            lost: 0,
            delivered: 0,
            acked_bytes: 0,
            spurious: 0,
        }
    }

    /// Every byte below this has arrived.
    pub fn cum(&self) -> u64 {
        self.sacked.run_end(0)
    }

    /// Has the receiver every byte of `[s, e)`?
    pub fn received(&self, s: u64, e: u64) -> bool {
        self.sacked.contains(s, e)
    }

    /// `pkt_seq` of the next DATA transmission (they count from 1).
    pub fn next_seq(&self) -> u32 {
        self.next_seq
    }

    /// Was transmission `seq` made?
    pub fn was_sent(&self, seq: u32) -> bool {
        seq != 0 && seq < self.next_seq
    }

    /// The next bytes to send again (at most one MSS): (offset, length).
    pub fn next_retransmission(&self) -> Option<(u64, u32)> {
        let (s, e) = self.retx.first()?;
        Some((s, (e - s).min(self.mss) as u32))
    }

    pub fn has_retransmissions(&self) -> bool {
        !self.retx.is_empty()
    }

    /// Transmission `next_seq` of `[offset, offset + len)` (`frame` bytes
    /// on the wire) left at `now` in monitor interval `mi`.
    pub fn on_send(&mut self, offset: u64, len: u32, frame: u32, now: f64, mi: u64, is_retx: bool) {
        if is_retx {
            self.retx.remove(offset, offset + len as u64);
        }
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        self.sent.push_back(SentPkt {
            seq,
            offset,
            len,
            frame,
            sent_at: now,
            mi,
            state: PktState::Out,
        });
        self.out_by_offset.insert((offset, seq));
    }

    fn sent_index(&self, seq: u32) -> Option<usize> {
        let base = self.sent.front()?.seq;
        let idx = seq.checked_sub(base)? as usize;
        (idx < self.sent.len()).then_some(idx)
    }

    /// The monitor interval and send time of transmission `seq`, while it
    /// is tracked (an ACK echoing it is an RTT sample of that interval).
    pub fn echoed(&self, seq: u32) -> Option<(u64, f64)> {
        self.sent_index(seq).map(|i| (self.sent[i].mi, self.sent[i].sent_at))
    }

    /// When `pk` (outstanding) counts as lost: one smoothed RTT plus the
    /// reordering window after it left if a later packet was acknowledged,
    /// else the retransmission timeout. Both grow with the send time, so the
    /// oldest outstanding packet is always the first due.
    fn loss_deadline(&self, pk: &SentPkt, rtt: &RttEstimator) -> f64 {
        if pk.seq < self.largest_acked {
            pk.sent_at + rtt.srtt() + rtt.reo_wnd()
        } else {
            pk.sent_at + rtt.rto()
        }
    }

    /// When the oldest tracked transmission counts as lost.
    pub fn next_deadline(&self, rtt: &RttEstimator) -> Option<f64> {
        self.sent.front().map(|pk| self.loss_deadline(pk, rtt))
    }

    /// Declare lost what is due at `now`; queue its uncovered bytes.
    pub fn detect(&mut self, now: f64, rtt: &RttEstimator, fates: &mut impl Fates) {
        let mut i = 0;
        while i < self.sent.len() {
            let pk = self.sent[i];
            if pk.state == PktState::Out {
                if now < self.loss_deadline(&pk, rtt) {
                    break;
                }
                self.sent[i].state = PktState::Lost;
                self.out_by_offset.remove(&(pk.offset, pk.seq));
                fates.lost(pk.mi);
                self.lost += 1;
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
                    if self.recently_lost_order.len() > RECENTLY_LOST_MAX {
                        if let Some(old) = self.recently_lost_order.pop_front() {
                            self.recently_lost.remove(&old);
                        }
                    }
                }
            }
            self.sent.pop_front();
        }
    }

    /// An ACK of transmission `seq` (made) with cumulative ack `cum` and
    /// SACK blocks `sacks`: the transmissions it covers are delivered.
    /// Returns true if it acknowledges a transmission declared lost (a
    /// spurious loss: reordering).
    pub fn on_ack(&mut self, seq: u32, cum: u64, sacks: &[(u64, u64)], fates: &mut impl Fates) -> bool {
        let spurious = match self.sent_index(seq) {
            Some(idx) => match self.sent[idx].state {
                PktState::Out => {
                    self.deliver(idx, fates);
                    false
                }
                PktState::Lost => true,
                PktState::Acked => false,
            },
            None => self.recently_lost.remove(&seq),
        };
        self.spurious += spurious as u64;
        self.largest_acked = self.largest_acked.max(seq);
        // every transmission the cumulative ack or a SACK block now covers
        // was delivered, whether or not its own ACK arrives
        self.mark_received(0, cum, fates);
        for &(s, e) in sacks {
            self.mark_received(s, e, fates);
        }
        spurious
    }

    /// Transmission `idx` (still out) arrived.
    fn deliver(&mut self, idx: usize, fates: &mut impl Fates) {
        let pk = self.sent[idx];
        self.sent[idx].state = PktState::Acked;
        self.out_by_offset.remove(&(pk.offset, pk.seq));
        fates.delivered(pk.mi, pk.frame);
        self.delivered += 1;
    }

    /// The receiver has `[s, e)`: count new bytes, cancel their
    /// retransmission, deliver the transmissions they complete.
    fn mark_received(&mut self, s: u64, e: u64, fates: &mut impl Fates) {
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
            let from = (ns.saturating_sub(self.mss), 0);
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
                    self.deliver(idx, fates);
                }
            }
        }
    }

    /// Transmissions declared lost (nothing had covered them).
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Transmissions an ACK covered while they were out.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Application bytes the receiver has acknowledged.
    pub fn acked_bytes(&self) -> u64 {
        self.acked_bytes
    }

    /// Transmissions declared lost that were acknowledged later.
    pub fn spurious(&self) -> u64 {
        self.spurious
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fates told, in order: (mi, Some(frame)) delivered, (mi, None) lost.
    #[derive(Default)]
    struct Told(Vec<(u64, Option<u32>)>);

    impl Fates for Told {
        fn delivered(&mut self, mi: u64, frame: u32) {
            self.0.push((mi, Some(frame)));
        }
        fn lost(&mut self, mi: u64) {
            self.0.push((mi, None));
        }
    }

    /// A 30 ms path (srtt 30 ms, rttvar 15 ms, min 30 ms: reo_wnd 7.5 ms,
    /// RTO 30 + 60 + 7.5 ms).
    fn rtt() -> RttEstimator {
        let mut r = RttEstimator::default();
        r.on_sample(0.030);
        r
    }

    /// Five 1000-byte transmissions 1 ms apart, transmission k in MI k.
    fn five() -> LossDetector {
        let mut d = LossDetector::new(1000);
        for k in 0..5u32 {
            d.on_send(k as u64 * 1000, 1000, 1078, k as f64 * 0.001, k as u64, false);
        }
        d
    }

    #[test]
    fn cumulative_and_selective_acks_deliver_what_they_cover() {
        let mut d = five();
        let mut t = Told::default();
        assert_eq!(
            (d.next_seq(), d.was_sent(5), d.was_sent(6), d.was_sent(0)),
            (6, true, false, false)
        );
        // the ACK of transmission 3 (bytes 2000-3000): cum 1000, SACK 2000-3000
        assert!(!d.on_ack(3, 1000, &[(2000, 3000)], &mut t));
        assert_eq!(t.0, [(2, Some(1078)), (0, Some(1078))]);
        assert_eq!((d.cum(), d.acked_bytes(), d.delivered()), (1000, 2000, 2));
        assert!(d.received(2000, 3000) && !d.received(1000, 2000));
        // a lost ACK is no lost packet: the next one's cumulative ack covers 1000-2000
        assert!(!d.on_ack(5, 3000, &[(4000, 5000)], &mut t));
        assert_eq!(&t.0[2..], [(4, Some(1078)), (1, Some(1078))]);
        assert_eq!((d.cum(), d.delivered(), d.lost()), (3000, 4, 0));
        assert_eq!(d.echoed(4), Some((3, 3.0 * 0.001)));
        assert_eq!(d.echoed(9), None);
    }

    /// `five` whose last transmission was acknowledged (SACK 4000-5000).
    fn five_with_the_last_acked() -> (LossDetector, Told) {
        let (mut d, mut t) = (five(), Told::default());
        d.on_ack(5, 0, &[(4000, 5000)], &mut t);
        (d, t)
    }

    #[test]
    fn losses_by_time_and_by_a_later_ack() {
        let r = rtt();
        // transmission 5 acknowledged: 1-4 are lost srtt + reo_wnd = 37.5 ms after they left
        let (mut d, mut t) = five_with_the_last_acked();
        assert_eq!(t.0, [(4, Some(1078))]);
        assert!(d.next_deadline(&r).is_some_and(|t| (t - 0.0375).abs() < 1e-12));
        d.detect(0.039, &r, &mut t);
        assert_eq!(&t.0[1..], [(0, None), (1, None)], "transmissions 1 and 2 are due");
        assert_eq!(d.lost(), 2);
        // their bytes are queued, retransmissions first
        assert_eq!(d.next_retransmission(), Some((0, 1000)));
        // without a later ACK: one RTO (97.5 ms)
        let mut e = LossDetector::new(1000);
        e.on_send(0, 1000, 1078, 0.0, 0, false);
        assert_eq!(e.next_deadline(&r), Some(r.rto()));
        e.detect(r.rto() - 1e-6, &r, &mut t);
        assert_eq!(e.lost(), 0);
        e.detect(r.rto(), &r, &mut t);
        assert_eq!(e.lost(), 1);
    }

    #[test]
    fn retransmissions_are_cancelled_by_what_arrives() {
        let r = rtt();
        let mut d = five();
        let mut t = Told::default();
        d.detect(1.0, &r, &mut t);
        assert_eq!(d.lost(), 5);
        assert!(d.has_retransmissions());
        // the retransmission of 0-1000 leaves; an ACK then covers 1000-4000
        d.on_send(0, 1000, 1078, 1.0, 9, true);
        assert_eq!(d.next_retransmission(), Some((1000, 1000)));
        d.on_ack(6, 0, &[(1000, 4000)], &mut t);
        assert_eq!(d.next_retransmission(), Some((4000, 1000)));
        d.on_ack(6, 5000, &[], &mut t);
        assert!(!d.has_retransmissions());
        assert_eq!(d.next_retransmission(), None);
    }

    #[test]
    fn an_ack_of_a_transmission_declared_lost_is_a_spurious_loss() {
        let r = rtt();
        let (mut d, mut t) = five_with_the_last_acked();
        d.detect(0.039, &r, &mut t); // 1 and 2 lost (and out of the list)
        assert!(d.on_ack(2, 0, &[(1000, 2000), (4000, 5000)], &mut t));
        assert!(!d.on_ack(2, 0, &[], &mut t), "counted once");
        assert_eq!(d.spurious(), 1);
        d.detect(1.0, &r, &mut t); // 3 and 4 lost too
        assert_eq!(d.lost(), 4);
        assert!(d.on_ack(1, 0, &[(0, 1000)], &mut t));
        assert!(d.on_ack(4, 0, &[], &mut t));
        assert_eq!(d.spurious(), 3);
    }
}

//! Monitor intervals (MIs): which DATA packets each interval sent, what
//! became of them, and the interval's report once the fate of every one is
//! known (PCC Allegro §3.1: the Monitor Module).
//!
//! The sender's loss detector (`loss.rs`) decides what became of a packet;
//! the monitor only counts. A packet is *delivered* as soon as an ACK
//! covers its bytes (cumulative ack or SACK block), whether or not its own
//! ACK arrived, and *lost* when loss detection gives up on it while nothing
//! covers it. A lost ACK is therefore not a lost packet: the next ACK's
//! cumulative ack or SACK blocks deliver it.
//!
//! RTT samples come only from ACKs that echo the packet they acknowledge.
//! Each is judged reliable or not from the spacing of the ACKs around it
//! (the reference's rule, [`SampleFilter`]); the RTT gradient is fitted to
//! the reliable ones.

use crate::cc::{MiPlan, MiReport};
use std::collections::VecDeque;

/// Least-squares fit of y over x from running sums.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Regression {
    n: f64,
    sx: f64,
    sy: f64,
    sxx: f64,
    sxy: f64,
    syy: f64,
}

impl Regression {
    pub fn add(&mut self, x: f64, y: f64) {
        self.n += 1.0;
        self.sx += x;
        self.sy += y;
        self.sxx += x * x;
        self.sxy += x * y;
        self.syy += y * y;
    }

    pub fn count(&self) -> u32 {
        self.n as u32
    }

    pub fn mean_y(&self) -> f64 {
        if self.n > 0.0 {
            self.sy / self.n
        } else {
            0.0
        }
    }

    /// Centred sums (Sxx, Sxy, Syy); None with fewer than 2 points or all
    /// x equal.
    fn centred(&self) -> Option<(f64, f64, f64)> {
        if self.n < 2.0 {
            return None;
        }
        let cxx = self.sxx - self.sx * self.sx / self.n;
        if cxx <= 1e-18 {
            return None;
        }
        let cxy = self.sxy - self.sx * self.sy / self.n;
        let cyy = (self.syy - self.sy * self.sy / self.n).max(0.0);
        Some((cxx, cxy, cyy))
    }

    /// Slope of the fitted line (0 when there is none).
    pub fn slope(&self) -> f64 {
        self.centred().map_or(0.0, |(cxx, cxy, _)| cxy / cxx)
    }

    /// Standard error of the slope: the residuals' standard deviation
    /// (n - 2 degrees of freedom) over the root of the centred sum of
    /// squares of x (0 with fewer than 3 points).
    pub fn slope_se(&self) -> f64 {
        match self.centred() {
            Some((cxx, cxy, cyy)) if self.n > 2.0 => ((cyy - cxy * cxy / cxx).max(0.0) / (self.n - 2.0) / cxx).sqrt(),
            _ => 0.0,
        }
    }

    /// Root mean square of the residuals around the fitted line.
    pub fn residual_rms(&self) -> f64 {
        self.centred().map_or(0.0, |(cxx, cxy, cyy)| {
            ((cyy - cxy * cxy / cxx).max(0.0) / self.n).sqrt()
        })
    }
}

/// Judges RTT samples by the spacing of the ACKs around them
/// (PCC-Uspace `src/pcc/pcc_monitor_interval_queue.cpp`,
/// `OnCongestionEvent`): a sample is unreliable when the interval before
/// its ACK and the one after differ by more than 50 times their usual
/// ratio (ACKs held back, then released as a burst: their RTTs measure the
/// stall, not the path), and so are the samples after it until the RTT,
/// having fallen below the smoothed RTT, rises again.
#[derive(Clone, Debug)]
pub struct SampleFilter {
    /// The latest sample, judged when the next ACK arrives:
    /// (its sample, the ACK interval before it, smoothed RTT then).
    pending: Option<(Sample, Option<f64>, f64)>,
    last_ack_at: Option<f64>,
    /// Moving average of the interval ratio (None: no ratio yet).
    avg_ratio: Option<f64>,
    burst: bool,
}

/// One RTT sample: the MI of the packet, its send time, its RTT.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    pub mi: u64,
    pub sent_at: f64,
    pub rtt: f64,
}

/// pcc_monitor_interval_queue.cpp: an interval ratio this many times the
/// average starts a burst; the average's gain.
const BURST_RATIO: f64 = 50.0;
const RATIO_GAIN: f64 = 0.1;

impl SampleFilter {
    pub fn new() -> SampleFilter {
        SampleFilter {
            pending: None,
            last_ack_at: None,
            avg_ratio: None,
            burst: false,
        }
    }

    /// An ACK carrying `sample` arrived at `now` (`srtt`: the smoothed RTT
    /// before it). Returns the previous sample with its verdict (reliable?).
    pub fn on_ack(&mut self, now: f64, sample: Sample, srtt: f64) -> Option<(Sample, bool)> {
        // a floor of 1 µs keeps the ratios of ACKs read in one batch finite
        let interval = self.last_ack_at.map(|t| (now - t).max(1e-6));
        self.last_ack_at = Some(now);
        let judged = self.pending.take().map(|(prev, before, prev_srtt)| {
            let (Some(before), Some(after)) = (before, interval) else {
                return (prev, false); // the flow's first ACK: no interval before it
            };
            let ratio = if before > after { before / after } else { after / before };
            let avg = *self.avg_ratio.get_or_insert(ratio);
            let reliable = if ratio > BURST_RATIO * avg {
                self.burst = true;
                false
            } else if self.burst {
                if sample.rtt > prev.rtt && prev.rtt < prev_srtt {
                    self.burst = false;
                }
                false
            } else {
                true
            };
            self.avg_ratio = Some(avg * (1.0 - RATIO_GAIN) + ratio * RATIO_GAIN);
            (prev, reliable)
        });
        self.pending = Some((sample, interval, srtt));
        judged
    }
}

impl Default for SampleFilter {
    fn default() -> SampleFilter {
        SampleFilter::new()
    }
}

/// One monitor interval's bookkeeping.
#[derive(Clone, Debug)]
struct Mi {
    id: u64,
    plan: MiPlan,
    start: f64,
    end: Option<f64>,
    sent: u32,
    sent_frame: u64,
    delivered: u32,
    delivered_frame: u64,
    lost: u32,
    /// Send times of the interval's first and last packet.
    first_sent: f64,
    last_sent: f64,
    /// Every RTT sample (for the mean RTT).
    rtt: Regression,
    /// The reliable ones: RTT over send time since the interval's start.
    gradient: Regression,
    app_limited: bool,
}

impl Mi {
    fn new(id: u64, plan: MiPlan, start: f64) -> Mi {
        Mi {
            id,
            plan,
            start,
            end: None,
            sent: 0,
            sent_frame: 0,
            delivered: 0,
            delivered_frame: 0,
            lost: 0,
            first_sent: 0.0,
            last_sent: 0.0,
            rtt: Regression::default(),
            gradient: Regression::default(),
            app_limited: false,
        }
    }

    fn outstanding(&self) -> u32 {
        self.sent - self.delivered - self.lost
    }

    fn on_send(&mut self, frame: u32, now: f64) {
        if self.sent == 0 {
            self.first_sent = now;
        }
        self.last_sent = now;
        self.sent += 1;
        self.sent_frame += frame as u64;
    }

    /// The sending rate x is measured over the span of the interval's own
    /// packets: N packets sent between t1 and tN took (tN - t1) N / (N - 1),
    /// which is exact for paced packets. Dividing by the interval's length
    /// instead would count 10 or 11 packets in the same 10.5-packet interval
    /// (a 10% error at low rates, far above the 1-5% rate steps of PCC).
    /// Throughput T = x * (delivered frame bits / sent frame bits) = x (1 - L).
    fn report(&self) -> MiReport {
        let dur = (self.end.unwrap_or(self.start) - self.start).max(1e-6);
        let span = self.last_sent - self.first_sent;
        let send_dur = if self.sent >= 2 && span > 0.0 {
            span * self.sent as f64 / (self.sent - 1) as f64
        } else {
            dur
        };
        let send_kbps = self.sent_frame as f64 * 8.0 / send_dur / 1000.0;
        let delivered = if self.sent_frame > 0 {
            self.delivered_frame as f64 / self.sent_frame as f64
        } else {
            0.0
        };
        MiReport {
            id: self.id,
            rate_kbps: self.plan.rate_kbps,
            duration_s: dur,
            sent_pkts: self.sent,
            delivered_pkts: self.delivered,
            lost_pkts: self.lost,
            send_kbps,
            throughput_kbps: send_kbps * delivered,
            loss: if self.sent > 0 {
                self.lost as f64 / self.sent as f64
            } else {
                0.0
            },
            avg_rtt_s: self.rtt.mean_y(),
            rtt_samples: self.gradient.count(),
            rtt_gradient: self.gradient.slope(),
            rtt_gradient_se: self.gradient.slope_se(),
            rtt_residual: self.gradient.residual_rms(),
            app_limited: self.app_limited,
        }
    }
}

/// The monitor intervals of one flow: the current one (the last) and those
/// whose packets are still outstanding.
#[derive(Clone, Debug, Default)]
pub struct Monitor {
    mis: VecDeque<Mi>,
    next_id: u64,
    filter: SampleFilter,
}

impl Monitor {
    /// Id the next interval will get (ids count up from 0 with no gaps).
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// End the current interval (if any) and start one with `plan`.
    pub fn open(&mut self, plan: MiPlan, now: f64) {
        self.close(now);
        self.mis.push_back(Mi::new(self.next_id, plan, now));
        self.next_id += 1;
    }

    /// End the current interval now (the flow is done sending).
    pub fn close(&mut self, now: f64) {
        if let Some(cur) = self.mis.back_mut() {
            cur.end.get_or_insert(now);
        }
    }

    /// When the current interval is planned to end.
    pub fn current_end(&self) -> Option<f64> {
        self.mis
            .back()
            .filter(|m| m.end.is_none())
            .map(|m| m.start + m.plan.duration_s)
    }

    /// A DATA packet of `frame` bytes left now: the current interval's id.
    pub fn on_send(&mut self, frame: u32, now: f64) -> u64 {
        match self.mis.back_mut() {
            Some(cur) => {
                cur.on_send(frame, now);
                cur.id
            }
            None => u64::MAX,
        }
    }

    /// The current interval ran out of data to send.
    pub fn on_app_limited(&mut self) {
        if let Some(cur) = self.mis.back_mut() {
            cur.app_limited = true;
        }
    }

    fn get_mut(&mut self, id: u64) -> Option<&mut Mi> {
        let first = self.mis.front()?.id;
        self.mis.get_mut(id.checked_sub(first)? as usize)
    }

    /// A packet of interval `mi` with `frame` bytes was delivered.
    pub fn on_delivered(&mut self, mi: u64, frame: u32) {
        if let Some(m) = self.get_mut(mi) {
            m.delivered += 1;
            m.delivered_frame += frame as u64;
        }
    }

    /// A packet of interval `mi` was lost.
    pub fn on_lost(&mut self, mi: u64) {
        if let Some(m) = self.get_mut(mi) {
            m.lost += 1;
        }
    }

    /// An ACK echoed a packet of interval `s.mi` at `now`: an RTT sample.
    pub fn on_rtt_sample(&mut self, s: Sample, now: f64, srtt: f64) {
        if let Some(m) = self.get_mut(s.mi) {
            m.rtt.add(s.sent_at - m.start, s.rtt);
        }
        if let Some((prev, true)) = self.filter.on_ack(now, s, srtt) {
            if let Some(m) = self.get_mut(prev.mi) {
                m.gradient.add(prev.sent_at - m.start, prev.rtt);
            }
        }
    }

    /// The report of the oldest interval, if it has ended and every packet
    /// it sent was delivered or lost.
    pub fn pop_ready(&mut self) -> Option<MiReport> {
        let front = self.mis.front()?;
        if front.end.is_none() || front.outstanding() > 0 {
            return None;
        }
        self.mis.pop_front().map(|m| m.report())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> MiPlan {
        MiPlan {
            rate_kbps: 1232.0,
            duration_s: 0.075,
            useful: true,
        }
    }

    /// 1078-byte frames every 7 ms (1232 kb/s) in a 75 ms interval: 11
    /// packets (t = 3, 10, ..., 73 ms). Frame bits / interval length would
    /// say 11 * 8624 / 0.075 = 1264.9 kb/s (+2.7%); over the packets' span
    /// (70 ms * 11 / 10 = 77 ms) it is 94864 / 0.077 = 1232 kb/s exactly.
    #[test]
    fn mi_rate_is_measured_over_its_packets() {
        let mut m = Monitor::default();
        m.open(plan(), 0.0);
        for k in 0..11 {
            assert_eq!(m.on_send(1078, 0.003 + 0.007 * k as f64), 0);
        }
        for _ in 0..10 {
            m.on_delivered(0, 1078);
        }
        assert_eq!(m.pop_ready(), None, "one packet outstanding, interval not ended");
        m.on_lost(0);
        assert_eq!(m.pop_ready(), None, "interval not ended");
        m.open(plan(), 0.075);
        let r = m.pop_ready().unwrap_or_default();
        assert!((r.send_kbps - 1232.0).abs() < 1e-6, "{}", r.send_kbps);
        // T = x (1 - L) = 1232 * 10 / 11 = 1120
        assert!((r.throughput_kbps - 1120.0).abs() < 1e-6);
        assert!((r.loss - 1.0 / 11.0).abs() < 1e-12);
        assert!((r.duration_s - 0.075).abs() < 1e-12);
        assert_eq!((r.id, r.sent_pkts, r.delivered_pkts, r.lost_pkts), (0, 11, 10, 1));
        assert_eq!(m.pop_ready(), None, "the current interval is never ready");
    }

    #[test]
    fn mi_with_one_packet_uses_its_length() {
        let mut m = Monitor::default();
        m.open(plan(), 1.0);
        m.on_send(1078, 1.01);
        m.close(1.1);
        assert_eq!(m.current_end(), None);
        m.on_delivered(0, 0); // delivered, but no frame bits counted: T = 0
                              // 8624 bits / 0.1 s = 86.24 kb/s
        let r = m.pop_ready().unwrap_or_default();
        assert!((r.send_kbps - 86.24).abs() < 1e-9);
        assert_eq!(r.throughput_kbps, 0.0);
        assert_eq!(r.rtt_gradient, 0.0);
    }

    #[test]
    fn regression_slope_and_residuals() {
        let mut r = Regression::default();
        assert_eq!((r.slope(), r.residual_rms(), r.mean_y()), (0.0, 0.0, 0.0));
        // (0, 1), (1, 3), (2, 5): slope 2, on the line
        for (x, y) in [(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)] {
            r.add(x, y);
        }
        assert!((r.slope() - 2.0).abs() < 1e-12);
        assert!(r.residual_rms() < 1e-9);
        assert_eq!(r.mean_y(), 3.0);
        // (0, 0), (1, 2), (2, 0), (3, 2): slope 0.4, intercept 0.4,
        // residuals -0.4, 1.2, -1.2, 0.4: rms = sqrt(3.2 / 4) = 0.894427
        let mut r = Regression::default();
        for (x, y) in [(0.0, 0.0), (1.0, 2.0), (2.0, 0.0), (3.0, 2.0)] {
            r.add(x, y);
        }
        assert!((r.slope() - 0.4).abs() < 1e-12);
        assert!((r.residual_rms() - 0.8f64.sqrt()).abs() < 1e-12);
        // standard error: sqrt(3.2 / (4 - 2) / Sxx), Sxx = 5: sqrt(0.32)
        assert!((r.slope_se() - 0.32f64.sqrt()).abs() < 1e-12);
        let mut same_x = Regression::default();
        same_x.add(1.0, 1.0);
        same_x.add(1.0, 2.0);
        assert_eq!(same_x.slope(), 0.0);
    }

    fn sample(mi: u64, rtt: f64) -> Sample {
        Sample { mi, sent_at: 0.0, rtt }
    }

    /// ACKs every ms are reliable; one that comes 60 ms after the previous
    /// one, followed by a burst 1 µs apart, starts a burst: unreliable
    /// until the RTT, below the smoothed RTT, rises again.
    #[test]
    fn samples_of_an_ack_burst_are_unreliable() {
        let mut f = SampleFilter::new();
        let srtt = 0.030;
        let mut t = 0.0;
        let mut verdicts = Vec::new();
        for _ in 0..10 {
            t += 0.001;
            verdicts.extend(f.on_ack(t, sample(0, 0.030), srtt));
        }
        // the first sample has no interval before it
        assert!(!verdicts[0].1);
        assert!(verdicts[1..].iter().all(|v| v.1), "{verdicts:?}");
        // a stall of 60 ms, then 5 ACKs at once with falling RTTs, then
        // normal spacing with the RTT back up
        t += 0.060;
        let burst = [0.090, 0.089, 0.088, 0.087, 0.086];
        let mut v2 = Vec::new();
        for (k, rtt) in burst.iter().enumerate() {
            v2.extend(f.on_ack(t + k as f64 * 1e-6, sample(1, *rtt), srtt));
        }
        t += 0.001;
        for rtt in [0.025, 0.026, 0.030, 0.030] {
            t += 0.001;
            v2.extend(f.on_ack(t, sample(2, rtt), srtt));
        }
        let ok: Vec<bool> = v2.iter().map(|v| v.1).collect();
        // judged: the last sample before the stall (its next interval is
        // 60 times its previous one: a burst starts), the five of the burst,
        // 0.025 (below the smoothed RTT; the next one is higher: the burst
        // ends, but this sample is still part of it), then reliable again
        assert_eq!(ok, [false, false, false, false, false, false, false, true, true]);
    }
}

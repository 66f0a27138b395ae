//! PCC Vivace (Dong et al., NSDI'18, §3, §4, Table 1), with the rules of the
//! code of that paper (PCCproject/PCC-Uspace, branch `NSDI-2018`,
//! `pcc-gradient/sender/app/pcc.h`, class `PCC`; "pcc.h" below) and of the
//! later reference (PCC-Uspace `src/pcc/`) where the paper leaves them open
//! or the code differs from it.
//!
//! Which scheme is which:
//!
//! - `vivace-loss` reproduces the NSDI'18 code's Vivace-Loss, the client
//!   `gradient_descent_pcc_client SERVER PORT 0` (pcc.h with a latency
//!   coefficient of 0): the rules below, with pcc.h's where p4rcp's
//!   differ (`Params::of(Variant::Loss)`): one probe pair after a move that
//!   kept its direction, probes at least 0.5 Mb/s from r, a loss
//!   coefficient of 1 for MIs that lost at most 3%, the emergency stop,
//!   a slow start from 1.6 Mb/s that ignores up to 50 lost packets in
//!   every MI, and pcc.h's loss rate of a move (below).
//! - `vivace-loss-p4rcp` is p4rcp's Vivace-Loss: `vivace`'s rules with
//!   b = 0.
//! - `vivace` (= `vivace-latency`, the paper's "Vivace-Latency") and
//!   `vivace-stop` are p4rcp's: the paper's utility, the reference's rules
//!   with the deviations marked below. pcc.h's client runs a different
//!   latency term (11330 x g per packet), which they do not follow.
//!
//! - Utility: `u = x^t - b * x * g - c * x * L`, t = 0.9, b = 900,
//!   c = 11.35, x the MI's sending rate in Mb/s (`utility::vivace`); b = 0
//!   for `vivace-loss` and `vivace-loss-p4rcp`. `vivace-loss` pays c = 1
//!   instead of 11.35 in an MI that lost at most 3% (pcc.h `utility`,
//!   `loss_rate <= 0.03`); pcc.h's x is in 2^20 bit/s of its packets, 6%
//!   below ours for the same rate, which we do not follow (a 0.6% change
//!   of the weight of the loss term).
//! - Latency gradient g: the least-squares slope of RTT over send time of
//!   the MI's reliable RTT samples (`monitor.rs`). It counts only with at
//!   least 4 samples and when it exceeds the scatter of the samples around
//!   the fitted line relative to their mean (PCC-Uspace
//!   `pcc_utility_manager.cpp`, `DetermineToleranceGeneral`); a negative
//!   gradient counts as 0 (same file); what is left is truncated to a
//!   multiple of 0.02 (pcc.h `utility`: the paper's low-pass filter).
//!   **Addition**: g must also exceed twice its standard error. The
//!   reference's scatter does not shrink with the number of samples, and
//!   with the 9-20 samples of a 1-RTT MI at 1.5-3 Mb/s the RTT noise of
//!   our Mininet hosts (residuals of 5-12% of the RTT for a flow alone on
//!   an idle link) passed it in a quarter of the MIs: gradients of 0.2-0.5
//!   from noise ended a slow start at 3.4 Mb/s and held the flow near
//!   1.7 Mb/s for 2 s (hosts/README.md, "PCC's rules and where they come
//!   from").
//! - Monitor interval: 1 RTT, at least 10 packets (pcc.h via core.cpp).
//! - Slow start: 10 packets per RTT (PCC-Uspace `pcc_sender.cpp`: the
//!   initial window over the first RTT), doubling while the utility does
//!   not fall; one start MI at a time (pcc.h: MIs that start while it is
//!   out keep its rate). The flow's first 50 lost packets count as not lost
//!   and gradients below 0.2 as 0 while that budget lasts (pcc.h "initial
//!   ignorance", paper §5.2.1). On a drop, back to half (the last rate that
//!   did not drop). `vivace-loss` starts at 1.6 Mb/s (pcc.h: `rate_` 0.8,
//!   doubled at the first MI) and, as pcc.h, ignores up to 50 lost packets
//!   in *every* start MI until one loses more, which spends the budget
//!   (pcc.h sets `loss = 0` before subtracting it from the budget).
//! - Probing: 2 pairs of MIs at r(1 +- e), each pair in random order,
//!   e = 5% (the paper; PCC-Uspace `pcc_sender.cpp` `kProbingStepSize`),
//!   then one MI at r (the reference of a later move), then MIs at r until
//!   the results are in. **Deviation**: pcc.h probes at least 0.5 Mb/s
//!   away from r (`getkDelta`); at our rates (3 Mb/s fair shares) that is
//!   +-17% and four flows on the test bed reached Jain 0.51-0.83 with it,
//!   0.89-0.98 without (hosts/README.md, the same section). At
//!   most 1% loss over the four probes, each probe's utility uses that
//!   overall loss rate (pcc.h). The pairs must agree on the direction; the
//!   gradient is (mean u+ - mean u-) / (r+ - r-).
//!   **Deviation**: the paper describes one pair; pcc.h runs one pair after
//!   a move in the same direction and two otherwise; we always run two (at
//!   ~70 packets per MI one pair's loss noise is about 3x the signal:
//!   hosts/README.md, the same section). `Params::pairs = 1` gives the
//!   paper's. `vivace-loss` follows pcc.h on both counts (`search`,
//!   `getkDelta`): one pair while `trend_count_ >= 1` (after a step in the
//!   direction of the one before, a round without a move, a second guess
//!   or a small move that kept its direction), two pairs at first and
//!   after a reversal; probes at least 0.5 Mb/s from r. At 5% random loss
//!   the single pair is what keeps pcc.h near 64% of the link: with two
//!   pairs always, `vivace-loss-p4rcp` keeps about 10 points more
//!   (hosts/README.md, "PCC's rules and where they come from").
//! - Double check (pcc.h): when the faster probes lost more than 2 packets
//!   fewer than the slower ones, lost some, and the probes lost at least 5%
//!   overall, the first such verdict for "faster" is thrown away and the
//!   probes are run again; a second one in a row is accepted.
//! - Step (pcc.h `decide`): `dr = m(a) * theta0 * g` Mb/s, theta0 = 1, with
//!   the confidence amplifier m(a) = a+1, 2a-2, 4a-14, 8a-50 (a < 3, < 6,
//!   < 9, after); a grows by 1 (by 0.5 above 3) after each step in the same
//!   direction, except for the first two after a reversal, and is 0 after
//!   a reversal. The dynamic change boundary caps |dr| at (0.05 + 0.06 k) r;
//!   k grows by 1 when the cap applies and shrinks by 1 (down to 0) when it
//!   does not, and is 0 after a reversal (pcc.h and
//!   `gradient_descent_pcc_client.cpp`; the paper recalibrates k to the
//!   smallest that holds dr). |dr| is at least 0.5 Mb/s.
//! - Moving (pcc.h): a step up of more than 10% of r is tried with one MI at
//!   r + dr and judged against the reference MI at r; the gradient between
//!   the two gives the next step, and the sender keeps moving while steps
//!   stay in the same direction and above 10%; otherwise it takes the step
//!   and probes again. A move whose faster MI lost fewer packets (by more
//!   than 2, or at 5% loss overall) probes again instead. `vivace-loss`
//!   computes that overall loss as pcc.h does: both MIs' lost packets over
//!   the reference MI's packets plus the target's *lost* ones
//!   (`overall_total = reference_total_pkt + target_loss_pkt`), about twice
//!   the loss rate, so at 2.5% random loss and above every move whose
//!   faster MI lost a smaller share is second-guessed.
//! - The rate never goes below 1.3 Mb/s outside slow start (pcc.h
//!   `kMinRateMbps`). There is no MI timeout: pcc.h's is disabled (core.cpp
//!   `timeout_monitors` returns at once), although the paper describes one.
//! - **Deviation**: no emergency stop, as in the paper and PCC-Uspace
//!   (`pcc_vivace_sender.cpp`). pcc.h halves the rate and probes again when
//!   an MI loses more than half its packets (and again if the MI in flight
//!   at that moment does too; here: the first MI of the new phase). When a
//!   link halves under two flows, the drop-tail queue sheds the excess
//!   unevenly, the stop halves only the flow that lost more, and the two
//!   then draw together at about 0.1 Mb/s per second: with the stop 4 of
//!   10 Mininet seeds never reached the new share within 10 s, without it
//!   none (hosts/README.md, "PCC's rules and where they come from").
//!   `vivace-stop` (`Params::stop_loss`) and `vivace-loss` keep pcc.h's
//!   rule; as in pcc.h the stop leaves the previous step, the amplifier
//!   and the trend as they were.

mod params;

pub use params::{amplifier, Params, Variant};

use super::pcc::{random_pairs, trial_rate, Phase};
use super::{utility, Ctx, MiPlan, MiReport, RateController};
use rand::rngs::SmallRng;

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    SlowStart,
    Probing,
    Moving,
}

/// A probe: is it the higher rate, its MI, its report.
#[derive(Clone, Copy, Debug)]
struct Probe {
    hi: bool,
    id: u64,
    report: Option<MiReport>,
}

/// A rate tried in an MI and what came back.
#[derive(Clone, Copy, Debug)]
struct Trial {
    rate: f64,
    id: Option<u64>,
    report: Option<MiReport>,
}

impl Trial {
    fn at(rate: f64) -> Trial {
        Trial {
            rate,
            id: None,
            report: None,
        }
    }
}

pub struct Vivace {
    p: Params,
    rng: SmallRng,
    state: State,
    /// Central rate r (kb/s); in slow start the rate being tried.
    rate: f64,
    /// The MIs of the current state.
    phase: Phase,
    /// Slow start: the start MI out, the utility of the last one.
    start_mi: Option<u64>,
    start_u: f64,
    /// Lost packets slow start may still ignore.
    loss_budget: u32,
    /// Probing: the probes; the MI at r after them.
    probes: Vec<Probe>,
    reference: Trial,
    /// A double check may throw the next abnormal verdict away.
    recheck_armed: bool,
    rechecking: bool,
    /// Moving: the MI at the new rate.
    target: Trial,
    /// pcc.h decide: the previous step (Mb/s; 0: none), amplifier,
    /// boundary index, swing buffer.
    prev_step: f64,
    amp: f64,
    bound: f64,
    swing: u32,
    /// pcc.h `trend_count_`: steps in the same direction since the last
    /// reversal (2 after a probe round without a move).
    trend: u32,
}

impl Vivace {
    pub fn new(p: Params, rng: SmallRng) -> Vivace {
        Vivace {
            p,
            rng,
            state: State::SlowStart,
            rate: 0.0,
            phase: Phase::default(),
            start_mi: None,
            start_u: f64::NEG_INFINITY,
            loss_budget: p.start_loss_ignore_pkts,
            probes: Vec::new(),
            reference: Trial::at(0.0),
            recheck_armed: true,
            rechecking: false,
            target: Trial::at(0.0),
            prev_step: 0.0,
            amp: 0.0,
            bound: 0.0,
            swing: 0,
            trend: 0,
        }
    }

    /// The latency gradient that counts (see the module documentation).
    pub fn gradient(&self, r: &MiReport) -> f64 {
        if r.rtt_samples < self.p.min_rtt_samples || r.avg_rtt_s <= 0.0 {
            return 0.0;
        }
        let g = r.rtt_gradient;
        let scatter = r.rtt_residual / r.avg_rtt_s;
        if g <= scatter.max(self.p.gradient_se * r.rtt_gradient_se) {
            return 0.0; // within the noise, or falling
        }
        let g = (g / self.p.flt).floor() * self.p.flt;
        if self.state == State::SlowStart && self.loss_budget > 0 && g < self.p.start_flt {
            return 0.0;
        }
        g
    }

    /// The utility of `r` with loss rate `loss`.
    pub fn utility(&self, r: &MiReport, loss: f64) -> f64 {
        let c = match self.p.low_loss_c {
            Some((at_most, c_low)) if loss <= at_most => c_low,
            _ => self.p.c,
        };
        utility::vivace(r.send_kbps / 1000.0, self.gradient(r), loss, self.p.t, self.p.b, c)
    }

    fn floor(&self, ctx: &Ctx) -> f64 {
        ctx.clamp(self.p.rate_min_kbps)
    }

    fn enter(&mut self, s: State) {
        self.state = s;
        self.phase = Phase::default();
        match s {
            State::SlowStart => self.start_mi = None,
            State::Probing => {
                let hi = random_pairs(&mut self.rng);
                let pairs = if self.p.one_pair_on_trend && self.trend >= 1 {
                    1
                } else {
                    self.p.pairs
                };
                self.probes = (0..2 * pairs)
                    .map(|i| Probe {
                        hi: hi[i],
                        id: u64::MAX,
                        report: None,
                    })
                    .collect();
                self.reference = Trial::at(self.rate);
            }
            State::Moving => {}
        }
    }

    /// Probe again around r, without a step (pcc.h: prev_change_ = 0).
    fn probe_again(&mut self) {
        self.prev_step = 0.0;
        self.trend = 2;
        self.enter(State::Probing);
    }

    /// The rate of probe `hi` around r.
    fn probe_rate(&self, hi: bool) -> f64 {
        let eps = self.p.eps.max(self.p.probe_min_kbps / self.rate.max(1.0));
        trial_rate(self.rate, hi, eps)
    }

    /// pcc.h `decide`: the step (kb/s) for gradient `g` (utility per Mb/s).
    fn step(&mut self, g: f64) -> f64 {
        let r = self.rate / 1000.0;
        let mut dr = g * self.p.theta0;
        let turn = dr * self.prev_step < 0.0;
        if turn {
            self.amp = 0.0;
            self.bound = 0.0;
            self.swing = (self.swing + 1).min(2);
            self.trend = 0;
        }
        dr *= amplifier(self.amp);
        if dr * self.prev_step > 0.0 {
            self.trend += 1;
            if self.swing == 0 {
                self.amp += if self.amp > 3.0 { 0.5 } else { 1.0 };
            } else {
                self.swing -= 1;
            }
        }
        let omega = self.p.omega0 + self.p.delta * self.bound;
        if dr.abs() > omega * r {
            dr = dr.signum() * omega * r;
            self.bound += 1.0;
        } else if self.bound >= 1.0 {
            self.bound -= 1.0;
        }
        if turn {
            self.amp = 0.0;
            self.bound = 0.0;
        }
        let min = self.p.step_min_kbps / 1000.0;
        if dr != 0.0 && dr.abs() < min {
            dr = dr.signum() * min;
        }
        self.prev_step = dr;
        dr * 1000.0
    }

    /// All probes are in: move, try a move, or probe again.
    fn decide(&mut self, ctx: &Ctx) {
        let reports: Vec<MiReport> = self.probes.iter().filter_map(|p| p.report).collect();
        let sent: u32 = reports.iter().map(|r| r.sent_pkts).sum();
        let lost: u32 = reports.iter().map(|r| r.lost_pkts).sum();
        let overall = if sent > 0 { lost as f64 / sent as f64 } else { 0.0 };
        // one loss rate for all probes when they barely lost anything
        let u = |s: &Vivace, r: &MiReport| s.utility(r, if overall <= s.p.low_loss { overall } else { r.loss });
        let (mut u_hi, mut u_lo, mut lost_hi, mut lost_lo) = (0.0, 0.0, 0u32, 0u32);
        let mut votes = 0i32;
        for pair in self.probes.chunks(2) {
            let (Some(a), Some(b)) = (pair[0].report, pair[1].report) else {
                return;
            };
            let (hi, lo) = if pair[0].hi { (a, b) } else { (b, a) };
            let (uh, ul) = (u(self, &hi), u(self, &lo));
            votes += (uh > ul) as i32 - (uh < ul) as i32;
            u_hi += uh;
            u_lo += ul;
            lost_hi += hi.lost_pkts;
            lost_lo += lo.lost_pkts;
        }
        let n = (self.probes.len() / 2) as i32;
        if votes.abs() != n {
            return self.probe_again(); // the pairs disagree (or tie)
        }
        // faster sending lost fewer packets: once, do not believe it
        let abnormal =
            votes > 0 && lost_lo > lost_hi + self.p.recheck_pkts && lost_hi > 0 && overall >= self.p.recheck_loss;
        if abnormal && self.recheck_armed {
            self.recheck_armed = false;
            self.rechecking = true;
            return self.probe_again();
        }
        if abnormal {
            self.trend = 2; // pcc.h: the second verdict in a row is taken
        }
        self.recheck_armed = true;
        self.rechecking = false;
        let dr_rate = (self.probe_rate(true) - self.probe_rate(false)) / 1000.0;
        let g = (u_hi - u_lo) / n as f64 / dr_rate;
        let step = self.step(g);
        if step > self.p.move_ratio * self.rate {
            self.target = Trial::at(ctx.clamp(self.rate + step));
            self.enter(State::Moving);
        } else {
            self.rate = (self.rate + step).max(self.floor(ctx));
            self.enter(State::Probing);
        }
    }

    /// Moving: once the reference and the target are in, move on (true).
    fn judge_move(&mut self, ctx: &Ctx) -> bool {
        let (Some(rf), Some(tg)) = (self.reference.report, self.target.report) else {
            return false;
        };
        let (r0, r1) = (self.reference.rate, self.target.rate);
        let prev = self.prev_step;
        self.rate = r1;
        let g = (self.utility(&tg, tg.loss) - self.utility(&rf, rf.loss)) / ((r1 - r0) / 1000.0);
        let step = self.step(g);
        let lost_gap = rf.lost_pkts.abs_diff(tg.lost_pkts);
        let sent = if self.p.move_loss_over_reference {
            rf.sent_pkts + tg.lost_pkts
        } else {
            rf.sent_pkts + tg.sent_pkts
        }
        .max(1);
        let overall = (rf.lost_pkts + tg.lost_pkts) as f64 / sent as f64;
        if (r0 - r1) * (rf.loss - tg.loss) < 0.0 && (lost_gap > self.p.recheck_pkts || overall >= self.p.recheck_loss) {
            self.probe_again(); // faster lost less: probe instead
        } else if step * prev <= 0.0 || step <= self.p.move_ratio * self.rate {
            if step * prev > 0.0 {
                self.trend = 2; // pcc.h MOVING: same direction, small step
            }
            self.rate = (self.rate + step).max(self.floor(ctx));
            self.enter(State::Probing);
        } else {
            self.reference = self.target;
            self.target = Trial::at(ctx.clamp(self.rate + step));
            self.enter(State::Moving);
        }
        true
    }

    fn plan(&self, rate: f64, useful: bool, ctx: &Ctx) -> MiPlan {
        MiPlan::new(ctx, rate, self.p.mi_rtts, self.p.mi_min_pkts, useful)
    }
}

impl RateController for Vivace {
    fn start(&mut self, _feedback_kbps: u32, ctx: &Ctx) -> f64 {
        let first = self
            .p
            .start_kbps
            .unwrap_or(ctx.packets_per_rtt(self.p.start_pkts_per_rtt));
        self.rate = ctx.clamp(first);
        self.enter(State::SlowStart);
        self.rate
    }

    fn next_mi(&mut self, id: u64, ctx: &Ctx) -> MiPlan {
        let n = self.phase.plan(id) as usize;
        match self.state {
            State::SlowStart => {
                let first = self.start_mi.is_none();
                self.start_mi.get_or_insert(id);
                self.plan(self.rate, first, ctx)
            }
            State::Probing => {
                if let Some(hi) = self.probes.get(n).map(|p| p.hi) {
                    self.probes[n].id = id;
                    self.plan(self.probe_rate(hi), true, ctx)
                } else if n == self.probes.len() {
                    self.reference.id = Some(id);
                    self.plan(self.rate, true, ctx)
                } else {
                    self.plan(self.rate, false, ctx)
                }
            }
            State::Moving => {
                let first = self.target.id.is_none();
                self.target.id.get_or_insert(id);
                self.plan(self.target.rate, first, ctx)
            }
        }
    }

    fn on_mi(&mut self, r: &MiReport, ctx: &Ctx) -> bool {
        if self.state == State::Moving && self.reference.id == Some(r.id) {
            self.reference.report = Some(*r);
            return self.judge_move(ctx);
        }
        if !self.phase.owns(r.id) {
            return false; // planned before this phase
        }
        let mut r = *r;
        if self.state == State::SlowStart {
            let ignored = r.lost_pkts.min(self.loss_budget);
            if !self.p.start_ignore_per_mi || r.lost_pkts > self.loss_budget {
                self.loss_budget -= ignored;
            }
            r.lost_pkts -= ignored;
            r.loss = r.lost_pkts as f64 / r.sent_pkts.max(1) as f64;
        }
        if self.p.stop_loss.is_some_and(|stop| r.loss > stop) {
            // pcc.h: SEARCH at half the rate; the previous step, the
            // amplifier and the trend stay
            self.rate = (self.rate / 2.0).max(self.floor(ctx));
            self.enter(State::Probing);
            return true;
        }
        match self.state {
            State::SlowStart => {
                if self.start_mi != Some(r.id) {
                    return false; // an MI sent while the start MI was out
                }
                let u = self.utility(&r, r.loss);
                if u < self.start_u {
                    self.rate = (self.rate / 2.0).max(self.floor(ctx));
                    self.enter(State::Probing);
                } else {
                    self.start_u = u;
                    self.rate = ctx.clamp(self.rate * 2.0);
                    self.start_mi = None;
                }
                true
            }
            State::Probing => {
                if let Some(p) = self.probes.iter_mut().find(|p| p.id == r.id) {
                    p.report = Some(r);
                } else if self.reference.id == Some(r.id) {
                    self.reference.report = Some(r);
                    return false;
                }
                if self.probes.iter().any(|p| p.report.is_none()) {
                    return false;
                }
                self.decide(ctx);
                true
            }
            State::Moving => {
                if self.target.id != Some(r.id) {
                    return false;
                }
                self.target.report = Some(r);
                self.judge_move(ctx)
            }
        }
    }

    fn state(&self) -> &'static str {
        match (self.state, self.rechecking) {
            (State::SlowStart, _) => "slow_start",
            (State::Probing, false) => "probing",
            (State::Probing, true) => "double_check",
            (State::Moving, _) => "moving",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{report, test_ctx};
    use rand::SeedableRng;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-6 * b.abs().max(1.0), "{a} != {b}");
    }

    /// A controller probing around `rate`.
    fn probing(v: Variant, rate: f64) -> (Vivace, Ctx) {
        let ctx = test_ctx();
        let mut s = Vivace::new(Params::of(v), SmallRng::seed_from_u64(11));
        s.start(0, &ctx);
        s.rate = rate;
        s.loss_budget = 0;
        s.enter(State::Probing);
        (s, ctx)
    }

    /// Plan a probe round from MI `id` (probes, the reference MI, a
    /// filler) and report the probes with `loss(is_higher, pair)`; returns
    /// whether the last report ended the round, and the next free id.
    fn probe_round(s: &mut Vivace, ctx: &Ctx, id: u64, loss: impl Fn(bool, usize) -> f64) -> (bool, u64) {
        let n = s.probes.len() as u64;
        let plans: Vec<MiPlan> = (0..n).map(|i| s.next_mi(id + i, ctx)).collect();
        assert!(plans.iter().all(|p| p.useful));
        let reference = s.next_mi(id + n, ctx);
        assert!(
            reference.useful,
            "the MI at r after the probes is the reference of a move"
        );
        close(reference.rate_kbps, s.rate);
        assert!(!s.next_mi(id + n + 1, ctx).useful);
        let center = s.rate;
        let mut done = false;
        for (i, p) in plans.iter().enumerate() {
            let hi = p.rate_kbps > center;
            done = s.on_mi(&report(id + i as u64, p.rate_kbps, loss(hi, i / 2)), ctx);
        }
        (done, id + n + 2)
    }

    #[test]
    fn amplifier_table() {
        let want = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 14.0, 18.0, 22.0, 30.0];
        for (a, w) in want.iter().enumerate() {
            assert_eq!(amplifier(a as f64), *w, "m({a})");
        }
        assert_eq!(amplifier(3.5), 5.0);
    }

    #[test]
    fn variants() {
        assert_eq!(Params::of(Variant::Loss).b, 0.0);
        assert_eq!(Params::of(Variant::Default).b, 900.0);
        assert_eq!(Params::of(Variant::Latency).b, 900.0);
        let (s, _) = probing(Variant::Default, 10_000.0);
        let (l, _) = probing(Variant::Loss, 10_000.0);
        let mut r = report(0, 10_000.0, 0.0);
        r.rtt_gradient = 0.05;
        // 10^0.9 - 900 * 10 * 0.04 (0.05 truncated to a multiple of 0.02)
        close(s.utility(&r, 0.0), 7.9432823 - 360.0);
        close(l.utility(&r, 0.0), 7.9432823);
    }

    #[test]
    fn the_latency_gradient_is_filtered_as_in_the_references() {
        let (s, _) = probing(Variant::Default, 10_000.0);
        let g = |samples: u32, gradient: f64, residual: f64| {
            let mut r = report(0, 10_000.0, 0.0);
            (r.rtt_samples, r.rtt_gradient, r.rtt_residual, r.avg_rtt_s) = (samples, gradient, residual, 0.030);
            s.gradient(&r)
        };
        let g_se = |gradient: f64, se: f64| {
            let mut r = report(0, 10_000.0, 0.0);
            (r.rtt_samples, r.rtt_gradient, r.rtt_gradient_se, r.avg_rtt_s) = (20, gradient, se, 0.030);
            s.gradient(&r)
        };
        // within two standard errors: 0
        assert_eq!(g_se(0.15, 0.08), 0.0);
        close(g_se(0.17, 0.08), 0.16);
        // above the samples' relative scatter (0.9 ms / 30 ms = 0.03): counts,
        // truncated to a multiple of 0.02
        close(g(20, 0.05, 0.0009), 0.04);
        close(g(20, 0.061, 0.0), 0.06);
        // within the scatter, below 0.02, falling, or too few samples: 0
        assert_eq!(g(20, 0.025, 0.0009), 0.0);
        assert_eq!(g(20, 0.019, 0.0), 0.0);
        assert_eq!(g(20, -0.1, 0.0), 0.0);
        assert_eq!(g(3, 0.5, 0.0), 0.0);
    }

    /// pcc.h `decide`, step by step at 10 Mb/s (see the module
    /// documentation); returns kb/s.
    #[test]
    fn steps_follow_the_amplifier_and_the_boundary() {
        let (mut s, _) = probing(Variant::LossP4rcp, 10_000.0);
        let mut expect = |g: f64, step: f64, amp: f64, bound: f64| {
            close(s.step(g), step);
            assert_eq!((s.amp, s.bound), (amp, bound), "after g = {g}");
        };
        // first: dr = 0.2 * m(0) = 0.2 -> at least 0.5 Mb/s
        expect(0.2, 500.0, 0.0, 0.0);
        // same direction: m(0), then a = 1; m(1) = 2 -> 0.4, a = 2
        expect(0.2, 500.0, 1.0, 0.0);
        expect(0.2, 500.0, 2.0, 0.0);
        // m(2) = 3: 0.6 > 0.05 * 10: capped at 0.5, k = 1
        expect(0.2, 500.0, 3.0, 1.0);
        // m(3) = 4: 0.8 <= (0.05 + 0.06) * 10 = 1.1: k back to 0; a = 4
        expect(0.2, 800.0, 4.0, 0.0);
        // m(4) = 6: 1.2 capped at 0.5, k = 1; above 3, a grows by 0.5
        expect(0.2, 500.0, 4.5, 1.0);
        // reversal: a = k = 0, m(0): -0.3 -> -0.5; the two steps after a
        // reversal leave a alone
        expect(-0.3, -500.0, 0.0, 0.0);
        expect(-0.3, -500.0, 0.0, 0.0);
        expect(-0.3, -500.0, 1.0, 0.0);
        // m(1) = 2: -0.6 capped at -0.5, k = 1
        expect(-0.3, -500.0, 2.0, 1.0);
        // m(2) = 3: -300 capped at -(0.05 + 0.06) * 10 = -1.1, k = 2
        expect(-100.0, -1100.0, 3.0, 2.0);
        // no gradient: no step
        expect(0.0, 0.0, 3.0, 1.0);
    }

    #[test]
    fn both_pairs_agreeing_move_the_rate() {
        let (mut s, ctx) = probing(Variant::LossP4rcp, 10_000.0);
        // no loss: u+ = 10.5^0.9 = 8.2998524, u- = 9.5^0.9 = 7.5849242;
        // g = 0.7149282 / 1.0: capped at 0.05 * 10 = 0.5 Mb/s (5% <= 10%:
        // taken at once)
        let (done, next) = probe_round(&mut s, &ctx, 0, |_, _| 0.0);
        assert!(done);
        close(s.rate, 10_500.0);
        assert_eq!(s.state(), "probing");
        // the next round probes around 10.5 Mb/s
        let p: Vec<f64> = (next..next + 4).map(|i| s.next_mi(i, &ctx).rate_kbps).collect();
        assert!(p
            .iter()
            .all(|r| (r - 11_025.0).abs() < 1e-6 || (r - 9_975.0).abs() < 1e-6));
    }

    #[test]
    fn pairs_that_disagree_do_not_move() {
        let (mut s, ctx) = probing(Variant::LossP4rcp, 10_000.0);
        // pair 0: no loss (higher wins); pair 1: 10% loss at the higher rate
        let (done, _) = probe_round(&mut s, &ctx, 0, |hi, pair| if hi && pair == 1 { 0.1 } else { 0.0 });
        assert!(done);
        close(s.rate, 10_000.0);
        assert_eq!(s.prev_step, 0.0);
    }

    /// With at most 1% loss over the probes every probe counts the overall
    /// loss rate: one lost packet per higher probe (1%) would otherwise
    /// make the lower rate win (7.1081 < 7.5849).
    #[test]
    fn light_loss_is_shared_by_the_probes() {
        let (mut s, ctx) = probing(Variant::LossP4rcp, 10_000.0);
        probe_round(&mut s, &ctx, 0, |hi, _| if hi { 0.01 } else { 0.0 });
        close(s.rate, 10_500.0);
    }

    #[test]
    fn a_move_down_beyond_the_loss_tolerance() {
        let (mut s, ctx) = probing(Variant::LossP4rcp, 10_000.0);
        // 10% loss at the higher rate, 5% at the lower:
        // u+ = 8.2999 - 11.35 * 10.5 * 0.10 < u- = 7.5849 - 11.35 * 9.5 * 0.05
        probe_round(&mut s, &ctx, 0, |hi, _| if hi { 0.10 } else { 0.05 });
        close(s.rate, 9_500.0);
    }

    /// Faster probes that lost fewer packets (by more than 2, with some
    /// loss, at >= 5% overall): the first verdict is thrown away, a second
    /// one in a row is taken.
    #[test]
    fn double_check_when_faster_sees_less_loss() {
        let (mut s, ctx) = probing(Variant::LossP4rcp, 10_000.0);
        let loss = |hi: bool, _| if hi { 0.03 } else { 0.09 };
        let (done, next) = probe_round(&mut s, &ctx, 0, loss);
        assert!(done);
        assert_eq!(s.state(), "double_check");
        close(s.rate, 10_000.0);
        probe_round(&mut s, &ctx, next, loss);
        assert_eq!(s.state(), "probing");
        close(s.rate, 10_500.0);
    }

    /// Steps up above 10% are tried first: one MI at r + dr against the
    /// reference MI at r; moving goes on while the steps stay above 10% in
    /// the same direction.
    #[test]
    fn large_steps_up_are_tried_before_they_are_taken() {
        let (mut s, ctx) = probing(Variant::LossP4rcp, 2_000.0);
        // probes at 2.1 / 1.9 Mb/s: g = (1.9498328 - 1.7818791) / 0.2 =
        // 0.8398, capped at 0.05 * 2 = 0.1, raised to 0.5 Mb/s: 25%: moving
        let (done, next) = probe_round(&mut s, &ctx, 0, |_, _| 0.0);
        assert!(done);
        assert_eq!(s.state(), "moving");
        close(s.target.rate, 2_500.0);
        let reference = s.reference.id.unwrap_or(u64::MAX);
        assert_eq!(reference, 4);
        let target = s.next_mi(next, &ctx);
        assert!(target.useful && !s.next_mi(next + 1, &ctx).useful);
        close(target.rate_kbps, 2_500.0);
        // the target's result alone decides nothing
        assert!(!s.on_mi(&report(next, 2_500.0, 0.0), &ctx));
        // with the reference: g = (2.2811088 - 1.8660660) / 0.5 = 0.8300857;
        // a = 1, capped at 0.11 * 2.5, raised to 0.5 (20%): keep moving
        assert!(s.on_mi(&report(reference, 2_000.0, 0.0), &ctx));
        assert_eq!(s.state(), "moving");
        close(s.target.rate, 3_000.0);
        let next = next + 2;
        s.next_mi(next, &ctx);
        // g = (3^0.9 - 2.5^0.9) / 0.5 = 0.8135331, m(1) = 2: 1.6271 capped
        // at 0.17 * 3 = 0.51: 17%: keep moving, to 3.51
        assert!(s.on_mi(&report(next, 3_000.0, 0.0), &ctx));
        close(s.target.rate, 3_510.0);
        let next = next + 1;
        s.next_mi(next, &ctx);
        // 10% loss at 3.51: g = (-0.8880250 - 2.6878753) / 0.51 < 0: a
        // reversal, capped at 0.05 * 3.51, raised to -0.5: 3.01, probing
        assert!(s.on_mi(&report(next, 3_510.0, 0.10), &ctx));
        assert_eq!(s.state(), "probing");
        close(s.rate, 3_010.0);
    }

    #[test]
    fn slow_start_keeps_one_mi_out_and_ignores_the_first_losses() {
        let ctx = test_ctx();
        let mut s = Vivace::new(Params::of(Variant::Default), SmallRng::seed_from_u64(1));
        // 10 packets per 30 ms: 10 * 1078 * 8 / 0.03 = 2874.67 kb/s
        let r0 = s.start(0, &ctx);
        close(r0, 2874.6667);
        let p0 = s.next_mi(0, &ctx);
        let p1 = s.next_mi(1, &ctx);
        assert!(p0.useful && !p1.useful, "one start MI at a time");
        close(p1.rate_kbps, r0);
        close(p0.duration_s, 0.03); // 1 RTT (10 packets take 30 ms)
        assert!(!s.on_mi(&report(1, r0, 0.0), &ctx));
        assert!(
            s.on_mi(&report(0, r0, 0.0), &ctx),
            "the result starts the next rate at once"
        );
        let p2 = s.next_mi(2, &ctx);
        close(p2.rate_kbps, 2.0 * r0);
        // 40 of 100 lost, but within the first 50: no loss; a gradient of
        // 0.15 counts as 0 meanwhile
        let mut r2 = report(2, p2.rate_kbps, 0.4);
        r2.rtt_gradient = 0.15;
        assert!(s.on_mi(&r2, &ctx));
        assert_eq!(s.loss_budget, 10);
        let p3 = s.next_mi(3, &ctx);
        close(p3.rate_kbps, 4.0 * r0);
        // 30 lost: 10 ignored, 20% loss: the utility falls: back to 2 r0
        assert!(s.on_mi(&report(3, p3.rate_kbps, 0.3), &ctx));
        assert_eq!(s.state(), "probing");
        close(s.rate, 2.0 * r0);
    }

    #[test]
    fn heavy_loss_halves_the_rate_down_to_the_floor_with_the_emergency_stop() {
        let (mut s, ctx) = probing(Variant::Stop, 10_000.0);
        s.next_mi(0, &ctx);
        assert!(s.on_mi(&report(0, 10_500.0, 0.6), &ctx));
        close(s.rate, 5_000.0);
        assert_eq!(s.state(), "probing");
        // MI 0's phase is over: its late siblings are ignored
        assert!(!s.on_mi(&report(1, 10_500.0, 0.6), &ctx));
        let (mut s, ctx) = probing(Variant::Stop, 2_000.0);
        s.next_mi(0, &ctx);
        s.on_mi(&report(0, 2_500.0, 0.6), &ctx);
        close(s.rate, 1_300.0);
    }

    /// pcc.h's stop leaves the previous step, the amplifier and the trend
    /// as they were (SEARCH at half the rate).
    #[test]
    fn the_emergency_stop_keeps_the_previous_step() {
        for v in [Variant::Stop, Variant::Loss] {
            let (mut s, ctx) = probing(v, 10_000.0);
            (s.prev_step, s.amp, s.trend) = (0.5, 2.0, 3);
            s.next_mi(0, &ctx);
            assert!(s.on_mi(&report(0, 10_500.0, 0.6), &ctx));
            close(s.rate, 5_000.0);
            assert_eq!((s.prev_step, s.amp, s.trend), (0.5, 2.0, 3), "{}", v.name());
        }
    }

    /// `vivace-loss` is pcc.h's client with a latency coefficient of 0:
    /// its rules against `vivace-loss-p4rcp`'s.
    #[test]
    fn vivace_loss_takes_the_rules_of_the_nsdi18_code() {
        let ctx = test_ctx();
        let f = Params::of(Variant::Loss);
        let v = Params::of(Variant::LossP4rcp);
        assert_eq!((f.b, v.b), (0.0, 0.0));
        assert_eq!((f.stop_loss, v.stop_loss), (Some(0.5), None));
        assert!(f.one_pair_on_trend && !v.one_pair_on_trend);
        // slow start from 1.6 Mb/s (pcc.h), not 10 packets per RTT
        let mut s = Vivace::new(f, SmallRng::seed_from_u64(1));
        close(s.start(0, &ctx), 1_600.0);
        let mut s = Vivace::new(v, SmallRng::seed_from_u64(1));
        close(s.start(0, &ctx), 2874.6667);
        // loss coefficient 1 up to 3% loss, 11.35 above:
        // 10^0.9 - 10 * 0.03 = 7.6432823; 10^0.9 - 11.35 * 10 * 0.04 = 3.4032823
        let (l, _) = probing(Variant::Loss, 10_000.0);
        let (p, _) = probing(Variant::LossP4rcp, 10_000.0);
        close(l.utility(&report(0, 10_000.0, 0.03), 0.03), 7.6432823);
        close(l.utility(&report(0, 10_000.0, 0.04), 0.04), 3.4032823);
        close(p.utility(&report(0, 10_000.0, 0.03), 0.03), 7.9432823 - 3.405);
        // probes at least 0.5 Mb/s from r: +-25% at 2 Mb/s, +-5% at 10 Mb/s
        let (l2, _) = probing(Variant::Loss, 2_000.0);
        close(l2.probe_rate(true), 2_500.0);
        close(l2.probe_rate(false), 1_500.0);
        close(l.probe_rate(true), 10_500.0);
        close(probing(Variant::LossP4rcp, 2_000.0).0.probe_rate(true), 2_100.0);
    }

    /// pcc.h `search`: two pairs after a reversal (and at first), one pair
    /// while the moves keep their direction, two again after a reversal.
    #[test]
    fn vivace_loss_probes_one_pair_while_the_moves_keep_their_direction() {
        let (mut s, ctx) = probing(Variant::Loss, 10_000.0);
        assert_eq!(s.probes.len(), 4);
        // no loss: up 0.5 Mb/s; no previous step, so no trend yet
        let (done, next) = probe_round(&mut s, &ctx, 0, |_, _| 0.0);
        assert!(done);
        close(s.rate, 10_500.0);
        assert_eq!((s.trend, s.probes.len()), (0, 4));
        // up again (g = 0.71 under the boundary, now 11%): the same
        // direction: one pair
        let (_, next) = probe_round(&mut s, &ctx, next, |_, _| 0.0);
        assert!(s.rate > 11_000.0);
        assert_eq!((s.trend, s.probes.len()), (1, 2));
        // one pair moves alone: up once more, trend 2
        let (_, next) = probe_round(&mut s, &ctx, next, |_, _| 0.0);
        assert_eq!((s.trend, s.probes.len()), (2, 2));
        let up = s.rate;
        // 10% loss at the higher rate: down, a reversal: two pairs again
        probe_round(&mut s, &ctx, next, |hi, _| if hi { 0.1 } else { 0.0 });
        assert!(s.rate < up);
        assert_eq!((s.trend, s.probes.len()), (0, 4));
        // vivace-loss-p4rcp always runs two pairs
        let (mut p, ctx) = probing(Variant::LossP4rcp, 10_000.0);
        let mut next = 0;
        for _ in 0..3 {
            next = probe_round(&mut p, &ctx, next, |_, _| 0.0).1;
            assert_eq!(p.probes.len(), 4);
        }
    }

    /// pcc.h's slow start ignores up to 50 lost packets in every MI until
    /// one loses more (its budget is then spent); `vivace-loss-p4rcp`
    /// ignores the flow's first 50.
    #[test]
    fn vivace_loss_ignores_up_to_50_losses_in_every_start_mi() {
        let ctx = test_ctx();
        let mut s = Vivace::new(Params::of(Variant::Loss), SmallRng::seed_from_u64(1));
        s.start(0, &ctx);
        let mut id = 0;
        let mut mi = |s: &mut Vivace, loss: f64| {
            let p = s.next_mi(id, &ctx);
            let done = s.on_mi(&report(id, p.rate_kbps, loss), &ctx);
            id += 1;
            done
        };
        // 40 and 45 of 100 lost: no loss, the budget stays 50
        mi(&mut s, 0.40);
        mi(&mut s, 0.45);
        assert_eq!((s.state(), s.loss_budget), ("slow_start", 50));
        close(s.rate, 4.0 * 1_600.0);
        // 60 lost: 10 count (a falling utility: out at half the rate)
        mi(&mut s, 0.60);
        assert_eq!((s.state(), s.loss_budget), ("probing", 0));
        close(s.rate, 2.0 * 1_600.0);
    }

    /// pcc.h MOVING divides a move's lost packets by the reference MI's
    /// packets plus the target's lost ones: 7 lost of 100 + 100 count as
    /// 7 / 103 >= 5%, and a target that lost a smaller share is second-
    /// guessed (probe again at the target's rate, no step).
    #[test]
    fn vivace_loss_second_guesses_moves_with_pcc_h_loss_rate() {
        for (v, second_guess) in [(Variant::Loss, true), (Variant::LossP4rcp, false)] {
            let (mut s, ctx) = probing(v, 2_000.0);
            let (done, next) = probe_round(&mut s, &ctx, 0, |_, _| 0.0);
            assert!(done);
            assert_eq!(s.state(), "moving", "{}", v.name());
            close(s.target.rate, 2_500.0);
            let reference = s.reference.id.unwrap_or(u64::MAX);
            s.next_mi(next, &ctx);
            assert!(!s.on_mi(&report(next, 2_500.0, 0.03), &ctx));
            assert!(s.on_mi(&report(reference, 2_000.0, 0.04), &ctx));
            close(s.rate.min(2_500.0), 2_500.0);
            assert_eq!(s.prev_step == 0.0, second_guess, "{}", v.name());
        }
    }

    #[test]
    fn heavy_loss_is_a_probe_like_any_other_without_the_emergency_stop() {
        let (mut s, ctx) = probing(Variant::Default, 10_000.0);
        s.next_mi(0, &ctx);
        assert!(!s.on_mi(&report(0, 10_500.0, 0.6), &ctx), "one probe of four");
        close(s.rate, 10_000.0);
        assert_eq!(s.state(), "probing");
    }
}

//! PCC Allegro (Dong et al., NSDI'15, §2.2 and §3.2) with the rate control of
//! its reference implementation where the two differ: modong/pcc,
//! `sender/app/cc.h` (class `BBCC`) and `sender/src/core.cpp`
//! (`start_monitor`), the code the CS244 reproduction ran.
//!
//! - Monitor interval: 1.5, 1.6 or 1.7 RTT (uniform), or, when 1.1 RTT
//!   holds no more than 10 packets, 10 packets and at least 5 ms
//!   (core.cpp; the paper says max(10 packets, uniform [1.7, 2.2] RTT)).
//! - Utility: `allegro` uses the paper's, `T * Sigmoid(L - 0.05) - x * L`
//!   (§2.2); `allegro-ref` the reference code's (cc.h, the default since
//!   2015), `(T * Sigmoid(L - 0.05) * Sigmoid10(1 - RTT_prev / RTT) - x * L)
//!   / RTT` (`utility.rs`).
//! - Starting state: 2 Mb/s (cc.h; the paper: 2 MSS/RTT), doubling every
//!   MI without waiting for results; the first MI's utility counts half
//!   (cc.h). The first MI whose utility is not above the best so far ends
//!   it: back to the rate of that best MI.
//! - Decision making: 4 MIs = 2 pairs at r(1+e), r(1-e), each pair in
//!   random order, then MIs at r until the results are in. A pair votes for
//!   the higher rate if its utility was higher, else for the lower one; a
//!   move needs both votes. e = k * 1% in the k-th round since the last
//!   move, k = 1..5 and round again (cc.h; the paper: e grows by 1% up to
//!   5% and stays).
//! - Rate adjusting: the first step is (k/2 + 1)% of r in the chosen
//!   direction (integer k/2), then 2%, 3%, ... of the current rate; each step
//!   waits for the result of one MI at the previous rate (cc.h: one MI in
//!   flight whose result counts; the paper moves every MI). The first
//!   result is taken as it is; after that, a result whose utility is not
//!   above the previous step's reverts to the previous step's rate and
//!   decides again with e = 1%.

use super::pcc::{random_pairs, trial_rate, Phase};
use super::{utility, Ctx, MiPlan, MiReport, RateController};
use rand::rngs::SmallRng;
use rand::Rng;

/// Which utility function the controller maximises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Utility {
    /// NSDI'15 §2.2.
    Paper,
    /// modong/pcc `sender/app/cc.h`.
    Reference,
}

#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub utility: Utility,
    /// cc.h `GRANULARITY`: the unit of e and of the steps.
    pub granularity: f64,
    /// cc.h `MAX_COUNTINOUS_GUESS`: rounds of decision making before e
    /// starts again from one unit.
    pub max_rounds: u32,
    /// core.cpp `start_monitor`: the MI is 1.5 + {0, 0.1, 0.2} RTT ...
    pub mi_rtts: f64,
    pub mi_rtts_extra: [f64; 3],
    /// ... unless 1.1 RTT holds no more than 10 packets: then 10 packets,
    /// and at least 5 ms.
    pub mi_min_pkts: f64,
    pub mi_min_s: f64,
    /// cc.h: the starting state's first rate (`previous_rate = 1` Mb/s,
    /// doubled at the first MI).
    pub start_kbps: f64,
}

impl Params {
    pub fn of(utility: Utility) -> Params {
        Params {
            utility,
            granularity: 0.01,
            max_rounds: 5,
            mi_rtts: 1.5,
            mi_rtts_extra: [0.0, 0.1, 0.2],
            mi_min_pkts: 10.0,
            mi_min_s: 0.005,
            start_kbps: 2_000.0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    Starting,
    Deciding,
    Adjusting,
}

pub struct Allegro {
    p: Params,
    rng: SmallRng,
    state: State,
    /// Base rate r (kb/s).
    rate: f64,
    /// The MIs of the current state.
    phase: Phase,
    /// Average RTT of the latest MI reported (the reference utility's
    /// RTT_prev; 0: none yet).
    prev_rtt: f64,
    /// Starting and adjusting: (rate, utility) of the best MI so far.
    best: Option<(f64, f64)>,
    /// Deciding: the round since the last move (1..=max_rounds); is trial i
    /// the higher rate; its MI id; its utility.
    round: u32,
    trial_hi: [bool; 4],
    trial_id: [u64; 4],
    trial_u: [Option<f64>; 4],
    /// Adjusting: +1 or -1, the step count, the MI whose result is awaited.
    dir: f64,
    step: u32,
    target: Option<u64>,
}

impl Allegro {
    pub fn new(p: Params, rng: SmallRng) -> Allegro {
        Allegro {
            p,
            rng,
            state: State::Starting,
            rate: 0.0,
            phase: Phase::default(),
            prev_rtt: 0.0,
            best: None,
            round: 0,
            trial_hi: [false; 4],
            trial_id: [u64::MAX; 4],
            trial_u: [None; 4],
            dir: 1.0,
            step: 0,
            target: None,
        }
    }

    fn enter(&mut self, s: State) {
        self.state = s;
        self.phase = Phase::default();
        match s {
            State::Starting => self.best = None,
            State::Deciding => {
                if self.round == self.p.max_rounds {
                    self.round = 0;
                }
                self.round += 1;
                self.trial_hi = random_pairs(&mut self.rng);
                self.trial_id = [u64::MAX; 4];
                self.trial_u = [None; 4];
            }
            State::Adjusting => {
                self.best = None;
                self.target = None;
            }
        }
    }

    fn eps(&self) -> f64 {
        self.round as f64 * self.p.granularity
    }

    /// The utility of `r`; updates RTT_prev.
    fn utility(&mut self, r: &MiReport) -> f64 {
        let (t, x) = (r.throughput_kbps / 1000.0, r.send_kbps / 1000.0);
        match self.p.utility {
            Utility::Paper => utility::allegro(t, x, r.loss),
            Utility::Reference => {
                let rtt = if r.avg_rtt_s > 0.0 { r.avg_rtt_s } else { self.prev_rtt };
                let prev = if self.prev_rtt > 0.0 { self.prev_rtt } else { rtt };
                self.prev_rtt = rtt;
                utility::allegro_ref(t, x, r.loss, prev, rtt)
            }
        }
    }

    /// +1 (the higher rate won both pairs), -1 (the lower did), 0 (no move).
    /// A pair whose utilities tie votes for the lower rate (cc.h).
    fn verdict(&self, u: [f64; 4]) -> f64 {
        let mut sum = 0.0;
        for pair in 0..2 {
            let (i, j) = (2 * pair, 2 * pair + 1);
            let (u_hi, u_lo) = if self.trial_hi[i] { (u[i], u[j]) } else { (u[j], u[i]) };
            sum += if u_hi > u_lo { 1.0 } else { -1.0 };
        }
        sum / 2.0
    }

    /// core.cpp `start_monitor`: the MI's length at `rate`.
    fn plan(&mut self, rate: f64, useful: bool, ctx: &Ctx) -> MiPlan {
        let rate = ctx.clamp(rate);
        let pkt_s = ctx.time_for_packets(1.0, rate);
        let duration_s = if 1.1 * ctx.srtt_s > self.p.mi_min_pkts * pkt_s {
            let extra = self.p.mi_rtts_extra[self.rng.gen_range(0..self.p.mi_rtts_extra.len())];
            (self.p.mi_rtts + extra) * ctx.srtt_s
        } else {
            (self.p.mi_min_pkts * pkt_s).max(self.p.mi_min_s)
        };
        MiPlan {
            rate_kbps: rate,
            duration_s,
            useful,
        }
    }

    /// Move by `units` granularities of the current rate in `self.dir`.
    fn move_rate(&mut self, units: u32, ctx: &Ctx) {
        self.rate = ctx.clamp(self.rate * (1.0 + units as f64 * self.p.granularity * self.dir));
    }
}

impl RateController for Allegro {
    fn start(&mut self, _feedback_kbps: u32, ctx: &Ctx) -> f64 {
        self.rate = ctx.clamp(self.p.start_kbps);
        self.enter(State::Starting);
        self.rate
    }

    fn next_mi(&mut self, id: u64, ctx: &Ctx) -> MiPlan {
        let n = self.phase.plan(id);
        match self.state {
            State::Starting => {
                if n > 0 {
                    self.rate = ctx.clamp(self.rate * 2.0);
                }
                self.plan(self.rate, true, ctx)
            }
            State::Deciding => match self.trial_id.get_mut(n as usize) {
                Some(slot) => {
                    *slot = id;
                    let r = trial_rate(self.rate, self.trial_hi[n as usize], self.eps());
                    self.plan(r, true, ctx)
                }
                None => self.plan(self.rate, false, ctx),
            },
            State::Adjusting => {
                let first = self.target.is_none();
                self.target.get_or_insert(id);
                self.plan(self.rate, first, ctx)
            }
        }
    }

    fn on_mi(&mut self, r: &MiReport, ctx: &Ctx) -> bool {
        let mut u = self.utility(r);
        if !self.phase.owns(r.id) {
            return false; // planned before this phase
        }
        match self.state {
            State::Starting => {
                if r.id == 0 {
                    u /= 2.0; // cc.h: the connection's first MI counts half
                }
                match self.best {
                    Some((rate, best_u)) if u <= best_u => {
                        self.rate = rate;
                        self.enter(State::Deciding);
                        true
                    }
                    _ => {
                        self.best = Some((r.rate_kbps, u));
                        false
                    }
                }
            }
            State::Deciding => {
                if let Some(i) = self.trial_id.iter().position(|&t| t == r.id) {
                    self.trial_u[i] = Some(u);
                }
                let [Some(a), Some(b), Some(c), Some(d)] = self.trial_u else {
                    return false;
                };
                let dir = self.verdict([a, b, c, d]);
                if dir == 0.0 {
                    self.enter(State::Deciding);
                } else {
                    self.dir = dir;
                    let first = self.round / 2 + 1;
                    self.round = 0;
                    self.enter(State::Adjusting);
                    self.step = 1;
                    self.move_rate(first, ctx);
                }
                true
            }
            State::Adjusting => {
                if self.target != Some(r.id) {
                    return false; // filler while the step's result was out
                }
                match self.best {
                    Some((rate, best_u)) if u <= best_u => {
                        self.rate = rate;
                        self.enter(State::Deciding);
                    }
                    _ => {
                        self.best = Some((r.rate_kbps, u));
                        self.step += 1;
                        self.move_rate(self.step, ctx);
                        self.phase = Phase::default();
                        self.target = None;
                    }
                }
                true
            }
        }
    }

    fn state(&self) -> &'static str {
        match self.state {
            State::Starting => "starting",
            State::Deciding => "deciding",
            State::Adjusting => "adjusting",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{report, test_ctx};
    use rand::SeedableRng;

    fn allegro(seed: u64) -> (Allegro, Ctx) {
        let ctx = test_ctx();
        let mut a = Allegro::new(Params::of(Utility::Paper), SmallRng::seed_from_u64(seed));
        a.start(0, &ctx);
        (a, ctx)
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-6 * b.abs().max(1.0), "{a} != {b}");
    }

    /// Plan MIs from `next` on until the 4 trials are planned; return them.
    fn plan_trials(a: &mut Allegro, ctx: &Ctx, next: &mut u64) -> Vec<MiPlan> {
        let mut v = Vec::new();
        for _ in 0..4 {
            v.push(a.next_mi(*next, ctx));
            *next += 1;
        }
        v
    }

    #[test]
    fn starting_doubles_from_2_mbps_then_returns_to_the_best_rate() {
        let (mut a, ctx) = allegro(1);
        let plans: Vec<MiPlan> = (0..4).map(|i| a.next_mi(i, &ctx)).collect();
        for (i, p) in plans.iter().enumerate() {
            close(p.rate_kbps, 2_000.0 * 2f64.powi(i as i32));
            assert!(p.useful);
        }
        // utility rises for MIs 0, 1 (no loss), falls in MI 2 (30% loss)
        assert!(!a.on_mi(&report(0, plans[0].rate_kbps, 0.0), &ctx));
        assert!(!a.on_mi(&report(1, plans[1].rate_kbps, 0.0), &ctx));
        assert!(a.on_mi(&report(2, plans[2].rate_kbps, 0.3), &ctx));
        assert_eq!(a.state(), "deciding");
        close(a.rate, plans[1].rate_kbps);
    }

    #[test]
    fn the_first_mi_counts_half_in_the_starting_state() {
        let (mut a, ctx) = allegro(1);
        let p0 = a.next_mi(0, &ctx);
        let p1 = a.next_mi(1, &ctx);
        // MI 0, 2 Mb/s, no loss: u = 2 * 0.9933071 / 2 = 0.9933071
        assert!(!a.on_mi(&report(0, p0.rate_kbps, 0.0), &ctx));
        close(a.best.map_or(0.0, |b| b.1), 0.9933071);
        // MI 1, 4 Mb/s, 5% loss: u = 3.8 * 0.5 - 4 * 0.05 = 1.7: above the
        // halved 0.993 (below the whole 1.987): the start goes on
        assert!(!a.on_mi(&report(1, p1.rate_kbps, 0.05), &ctx));
        assert_eq!(a.state(), "starting");
        close(a.best.map_or(0.0, |b| b.1), 1.7);
    }

    #[test]
    fn mi_length_follows_the_reference() {
        let (mut a, ctx) = allegro(2);
        // 100 Mb/s: 1.1 RTT holds 382 packets: 1.5, 1.6 or 1.7 RTT
        let mut seen = [false; 3];
        for i in 0..100 {
            let d = a.plan(100_000.0, true, &ctx).duration_s / ctx.srtt_s;
            let k = ((d - 1.5) * 10.0).round() as usize;
            assert!(k < 3 && (d - 1.5 - k as f64 / 10.0).abs() < 1e-9, "MI {i}: {d} RTT");
            seen[k] = true;
        }
        assert_eq!(seen, [true; 3]);
        // 2 Mb/s: 1.1 * 30 ms holds 7.65 packets: 10 packets = 43.12 ms
        close(a.plan(2_000.0, true, &ctx).duration_s, 10.0 * 8624.0 / 2e6);
        // 20 Mb/s and a 1 ms RTT: 10 packets take 4.3 ms: 5 ms
        let fast = Ctx { srtt_s: 0.001, ..ctx };
        close(a.plan(20_000.0, true, &fast).duration_s, 0.005);
    }

    fn to_deciding(seed: u64, rate: f64) -> (Allegro, Ctx, u64) {
        let (mut a, ctx) = allegro(seed);
        a.next_mi(0, &ctx);
        a.next_mi(1, &ctx);
        a.rate = rate;
        a.enter(State::Deciding);
        (a, ctx, 2)
    }

    /// Report the trials, with `loss_of(k, plan)` as the loss of trial k.
    fn report_trials(
        a: &mut Allegro,
        ctx: &Ctx,
        first: u64,
        trials: &[MiPlan],
        loss_of: impl Fn(usize, &MiPlan) -> f64,
    ) -> bool {
        let mut done = false;
        for (k, p) in trials.iter().enumerate() {
            done = a.on_mi(&report(first + k as u64, p.rate_kbps, loss_of(k, p)), ctx);
            assert_eq!(done, k == 3);
        }
        done
    }

    #[test]
    fn moves_up_when_both_pairs_say_higher_is_better() {
        let (mut a, ctx, mut next) = to_deciding(4, 10_000.0);
        let trials = plan_trials(&mut a, &ctx, &mut next);
        let mut rates: Vec<f64> = trials.iter().map(|p| p.rate_kbps).collect();
        rates.sort_by(f64::total_cmp);
        // two at 9900 (r(1-0.01)), two at 10100 (r(1+0.01))
        close(rates[0], 9_900.0);
        close(rates[1], 9_900.0);
        close(rates[2], 10_100.0);
        close(rates[3], 10_100.0);
        // while results are out: filler MIs at r
        let filler = a.next_mi(next, &ctx);
        assert!(!filler.useful);
        close(filler.rate_kbps, 10_000.0);
        // no loss: u = 0.9933 x, the higher rate wins both pairs; round 1:
        // the first step is 1/2 + 1 = 1 unit: 10100
        assert!(report_trials(&mut a, &ctx, 2, &trials, |_, _| 0.0));
        assert_eq!(a.state(), "adjusting");
        close(a.rate, 10_100.0);
    }

    #[test]
    fn moves_down_when_both_pairs_say_lower_is_better() {
        let (mut a, ctx, mut next) = to_deciding(5, 10_000.0);
        let trials = plan_trials(&mut a, &ctx, &mut next);
        report_trials(
            &mut a,
            &ctx,
            2,
            &trials,
            |_, p| if p.rate_kbps > 10_000.0 { 0.1 } else { 0.0 },
        );
        assert_eq!(a.state(), "adjusting");
        close(a.rate, 9_900.0);
    }

    #[test]
    fn widens_epsilon_up_to_5_percent_then_starts_again() {
        let (mut a, ctx, mut next) = to_deciding(6, 10_000.0);
        for round in 1..=7u32 {
            let want = ((round - 1) % 5 + 1) as f64 / 100.0;
            close(a.eps(), want);
            let first = next;
            let trials = plan_trials(&mut a, &ctx, &mut next);
            for p in &trials {
                close((p.rate_kbps / 10_000.0 - 1.0).abs(), want);
            }
            // pair 1 (trials 0, 1): the higher rate wins; pair 2: the higher
            // rate loses 10%: no move
            report_trials(&mut a, &ctx, first, &trials, |k, p| {
                if k >= 2 && p.rate_kbps > 10_000.0 {
                    0.1
                } else {
                    0.0
                }
            });
            assert_eq!(a.state(), "deciding");
            close(a.rate, 10_000.0);
        }
    }

    #[test]
    fn tied_pairs_vote_for_the_lower_rate() {
        let (a, _, _) = to_deciding(7, 10_000.0);
        assert_eq!(a.verdict([1.0; 4]), -1.0);
    }

    /// After a decision in round k the first step is (k/2 + 1)%; each later
    /// step waits for the result of the MI at the previous rate and grows
    /// by 1%; the first result is taken as it is; a drop in utility goes
    /// back to the previous step's rate.
    #[test]
    fn adjusting_accelerates_one_result_at_a_time_and_reverts_on_a_drop() {
        let (mut a, ctx, mut next) = to_deciding(8, 10_000.0);
        // round 1 inconclusive, round 2 says up: first step 2/2 + 1 = 2%
        let first = next;
        let t1 = plan_trials(&mut a, &ctx, &mut next);
        report_trials(&mut a, &ctx, first, &t1, |k, p| {
            if k >= 2 && p.rate_kbps > 1e4 {
                0.1
            } else {
                0.0
            }
        });
        let first = next;
        let t2 = plan_trials(&mut a, &ctx, &mut next);
        report_trials(&mut a, &ctx, first, &t2, |_, _| 0.0);
        assert_eq!(a.state(), "adjusting");
        close(a.rate, 10_200.0);
        // the target MI, then fillers at the same rate
        let target = a.next_mi(next, &ctx);
        let filler = a.next_mi(next + 1, &ctx);
        assert!(target.useful && !filler.useful);
        close(filler.rate_kbps, 10_200.0);
        assert!(!a.on_mi(&report(next + 1, 10_200.0, 0.0), &ctx), "a filler's result");
        // the first result (even a lossy one) is taken: step 2 = 2% -> 10404
        assert!(a.on_mi(&report(next, 10_200.0, 0.03), &ctx));
        close(a.rate, 10_404.0);
        next += 2;
        // better: step 3 = 3% -> 10716.12
        a.next_mi(next, &ctx);
        assert!(a.on_mi(&report(next, 10_404.0, 0.0), &ctx));
        close(a.rate, 10_716.12);
        next += 1;
        // worse: back to 10404, deciding again with e = 1%
        a.next_mi(next, &ctx);
        assert!(a.on_mi(&report(next, 10_716.12, 0.2), &ctx));
        assert_eq!(a.state(), "deciding");
        close(a.rate, 10_404.0);
        close(a.eps(), 0.01);
    }

    #[test]
    fn ignores_results_of_intervals_from_an_earlier_phase() {
        let (mut a, ctx, mut next) = to_deciding(9, 10_000.0);
        plan_trials(&mut a, &ctx, &mut next);
        // MI 1 was planned in the starting state
        assert!(!a.on_mi(&report(1, 5_000.0, 0.9), &ctx));
        assert_eq!(a.state(), "deciding");
        assert!(a.trial_u.iter().all(|u| u.is_none()));
    }

    /// The reference utility divides by the RTT and penalises a rising RTT.
    #[test]
    fn the_reference_utility_tracks_the_rtt() {
        let ctx = test_ctx();
        let mut a = Allegro::new(Params::of(Utility::Reference), SmallRng::seed_from_u64(1));
        a.start(0, &ctx);
        let mut r = report(0, 10_000.0, 0.0);
        r.avg_rtt_s = 0.030;
        // first MI: RTT_prev = RTT: (10 * 0.9933071 * 0.5) / 0.03 = 165.551192
        close(a.utility(&r), 165.551_192);
        // RTT up from 30 to 40 ms: Sigmoid10(0.25) = 1 / (1 + e^2.5) = 0.0758582
        r.avg_rtt_s = 0.040;
        close(a.utility(&r), 10.0 * 0.9933071 * 0.075_858_2 / 0.04);
    }
}

//! PCC Allegro (Dong et al., NSDI'15, §2.2 and §3), as in the paper:
//!
//! - Monitor interval: max(time of 10 packets, uniform [1.7, 2.2] RTT).
//! - Utility: `u = T * Sigmoid(L - 0.05) - x * L`, alpha = 100 (`utility::allegro`).
//! - Starting state: 2 MSS/RTT, doubling every MI; the first MI whose utility
//!   is below its predecessor's ends it, and the rate goes back to that
//!   predecessor's rate.
//! - Decision making: 4 MIs = 2 pairs at r(1+e), r(1-e), each pair in random
//!   order; then MIs at r until the 4 results are in. Move to r(1+e*dir) only
//!   if both pairs agree, otherwise e += e_min (up to e_max) and try again.
//!   e starts at e_min and returns to e_min after a conclusive decision.
//! - Rate adjusting: r_n = r_{n-1} * (1 + n * e_min * dir), one step per MI,
//!   while utility rises; on a drop, back to r_{n-1} and decide again (the
//!   factor is kept >= 0.5 so that long decreases stay positive).
//!
//! MIs are pipelined: the sender never pauses for results, so results of
//! intervals planned before a state change are ignored.

use super::pcc::{random_pairs, trial_rate, Phase};
use super::{utility, Ctx, MiPlan, MiReport, RateController};
use rand::rngs::SmallRng;
use rand::Rng;

#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub eps_min: f64,
    pub eps_max: f64,
    pub mi_rtts_lo: f64,
    pub mi_rtts_hi: f64,
    pub mi_min_pkts: f64,
    pub start_pkts_per_rtt: f64,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            eps_min: 0.01,
            eps_max: 0.05,
            mi_rtts_lo: 1.7,
            mi_rtts_hi: 2.2,
            mi_min_pkts: 10.0,
            start_pkts_per_rtt: 2.0,
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
    eps: f64,
    /// The MIs of the current state; Starting and Adjusting climb in it.
    phase: Phase,
    /// Deciding: is trial i the higher rate; its MI id; its utility.
    trial_hi: [bool; 4],
    trial_id: [u64; 4],
    trial_u: [Option<f64>; 4],
    /// Adjusting: +1 or -1.
    dir: f64,
}

impl Allegro {
    pub fn new(p: Params, rng: SmallRng) -> Allegro {
        Allegro {
            p,
            rng,
            state: State::Starting,
            rate: 0.0,
            eps: p.eps_min,
            phase: Phase::default(),
            trial_hi: [false; 4],
            trial_id: [u64::MAX; 4],
            trial_u: [None; 4],
            dir: 1.0,
        }
    }

    fn enter(&mut self, s: State) {
        self.state = s;
        self.phase = Phase::default();
        if s == State::Deciding {
            self.trial_hi = random_pairs(&mut self.rng);
            self.trial_id = [u64::MAX; 4];
            self.trial_u = [None; 4];
        }
    }

    fn utility(r: &MiReport) -> f64 {
        utility::allegro(r.throughput_kbps / 1000.0, r.send_kbps / 1000.0, r.loss)
    }

    /// Both pairs agree: +1 (higher rate better), -1 (lower better), 0 (no).
    fn verdict(&self, u: [f64; 4]) -> f64 {
        let mut votes = [0.0; 2];
        for (pair, vote) in votes.iter_mut().enumerate() {
            let (i, j) = (2 * pair, 2 * pair + 1);
            let (u_hi, u_lo) = if self.trial_hi[i] { (u[i], u[j]) } else { (u[j], u[i]) };
            *vote = if u_hi > u_lo {
                1.0
            } else if u_hi < u_lo {
                -1.0
            } else {
                0.0
            };
        }
        if votes[0] == votes[1] {
            votes[0]
        } else {
            0.0
        }
    }

    fn plan(&mut self, rate: f64, useful: bool, ctx: &Ctx) -> MiPlan {
        let rtts = self.rng.gen_range(self.p.mi_rtts_lo..=self.p.mi_rtts_hi);
        MiPlan::new(ctx, rate, rtts, self.p.mi_min_pkts, useful)
    }
}

impl RateController for Allegro {
    fn start(&mut self, _feedback_kbps: u32, ctx: &Ctx) -> f64 {
        self.rate = ctx.clamp(ctx.packets_per_rtt(self.p.start_pkts_per_rtt));
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
            State::Deciding => {
                if (n as usize) < 4 {
                    let i = n as usize;
                    self.trial_id[i] = id;
                    self.plan(trial_rate(self.rate, self.trial_hi[i], self.eps), true, ctx)
                } else {
                    self.plan(self.rate, false, ctx)
                }
            }
            State::Adjusting => {
                if n > 0 {
                    let f = (1.0 + n as f64 * self.p.eps_min * self.dir).max(0.5);
                    self.rate = ctx.clamp(self.rate * f);
                }
                self.plan(self.rate, true, ctx)
            }
        }
    }

    fn on_mi(&mut self, r: &MiReport, _ctx: &Ctx) -> bool {
        if !self.phase.owns(r.id) {
            return false; // planned before this phase
        }
        let u = Allegro::utility(r);
        match self.state {
            State::Starting | State::Adjusting => match self.phase.climb(r.rate_kbps, u) {
                Some(back_to) => {
                    self.rate = back_to;
                    self.enter(State::Deciding);
                    true
                }
                None => false,
            },
            State::Deciding => {
                if let Some(i) = self.trial_id.iter().position(|&t| t == r.id) {
                    self.trial_u[i] = Some(u);
                }
                if self.trial_u.iter().any(|x| x.is_none()) {
                    return false;
                }
                let u4 = [0, 1, 2, 3].map(|i| self.trial_u[i].unwrap_or(0.0));
                let dir = self.verdict(u4);
                if dir == 0.0 {
                    self.eps = (self.eps + self.p.eps_min).min(self.p.eps_max);
                    self.enter(State::Deciding);
                } else {
                    self.rate *= 1.0 + dir * self.eps;
                    self.eps = self.p.eps_min;
                    self.dir = dir;
                    self.enter(State::Adjusting);
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
        let mut a = Allegro::new(Params::default(), SmallRng::seed_from_u64(seed));
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
    fn starting_doubles_then_returns_to_previous_rate() {
        let (mut a, ctx) = allegro(1);
        // 2 MSS/RTT = 2 * 1078 * 8 / 0.03 = 574.933 kb/s
        let r0 = 2.0 * 1078.0 * 8.0 / 0.03 / 1000.0;
        let plans: Vec<MiPlan> = (0..4).map(|i| a.next_mi(i, &ctx)).collect();
        for (i, p) in plans.iter().enumerate() {
            close(p.rate_kbps, r0 * 2f64.powi(i as i32));
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
    fn mi_length_is_1_7_to_2_2_rtt_and_at_least_10_packets() {
        let (mut a, ctx) = allegro(2);
        a.rate = 100_000.0; // 10 packets take 0.86 ms: the RTT term wins
        for i in 0..100 {
            let p = a.next_mi(i, &ctx);
            assert!(p.duration_s >= 1.7 * 0.03 - 1e-12 && p.duration_s <= 2.2 * 0.03 + 1e-12);
        }
        let (mut b, _) = allegro(3);
        b.rate = 200.0; // 10 packets at 200 kb/s: 10 * 8624 / 200000 = 0.4312 s
        close(b.next_mi(0, &ctx).duration_s, 0.4312);
    }

    fn to_deciding(seed: u64, rate: f64) -> (Allegro, Ctx, u64) {
        let (mut a, ctx) = allegro(seed);
        a.next_mi(0, &ctx);
        a.next_mi(1, &ctx);
        a.rate = rate;
        a.enter(State::Deciding);
        (a, ctx, 2)
    }

    #[test]
    fn moves_up_when_both_pairs_say_higher_is_better() {
        let (mut a, ctx, mut next) = to_deciding(4, 10_000.0);
        let trials = plan_trials(&mut a, &ctx, &mut next);
        let mut rates: Vec<f64> = trials.iter().map(|p| p.rate_kbps).collect();
        rates.sort_by(|x, y| x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal));
        // two at 9900 (r(1-0.01)), two at 10100 (r(1+0.01))
        close(rates[0], 9_900.0);
        close(rates[1], 9_900.0);
        close(rates[2], 10_100.0);
        close(rates[3], 10_100.0);
        // while results are out: filler MIs at r
        let filler = a.next_mi(next, &ctx);
        assert!(!filler.useful);
        close(filler.rate_kbps, 10_000.0);
        // no loss: u = 0.9933 * x, the higher rate wins both pairs
        for (k, p) in trials.iter().enumerate() {
            let done = a.on_mi(&report(2 + k as u64, p.rate_kbps, 0.0), &ctx);
            assert_eq!(done, k == 3);
        }
        assert_eq!(a.state(), "adjusting");
        close(a.rate, 10_100.0);
    }

    #[test]
    fn moves_down_when_both_pairs_say_lower_is_better() {
        let (mut a, ctx, mut next) = to_deciding(5, 10_000.0);
        let trials = plan_trials(&mut a, &ctx, &mut next);
        for (k, p) in trials.iter().enumerate() {
            let loss = if p.rate_kbps > 10_000.0 { 0.1 } else { 0.0 };
            a.on_mi(&report(2 + k as u64, p.rate_kbps, loss), &ctx);
        }
        assert_eq!(a.state(), "adjusting");
        close(a.rate, 9_900.0);
    }

    #[test]
    fn stays_and_widens_epsilon_when_pairs_disagree() {
        let (mut a, ctx, mut next) = to_deciding(6, 10_000.0);
        let trials = plan_trials(&mut a, &ctx, &mut next);
        for (k, p) in trials.iter().enumerate() {
            // pair 1 (trials 0, 1): higher wins; pair 2: the higher rate loses 10%
            let loss = if k >= 2 && p.rate_kbps > 10_000.0 { 0.1 } else { 0.0 };
            a.on_mi(&report(2 + k as u64, p.rate_kbps, loss), &ctx);
        }
        assert_eq!(a.state(), "deciding");
        close(a.rate, 10_000.0);
        close(a.eps, 0.02);
        // the next trials probe at r(1 +- 0.02)
        let t2 = plan_trials(&mut a, &ctx, &mut next);
        for p in &t2 {
            assert!((p.rate_kbps - 10_200.0).abs() < 1e-6 || (p.rate_kbps - 9_800.0).abs() < 1e-6);
        }
        // e never exceeds e_max = 0.05
        for _ in 0..10 {
            a.eps = (a.eps + a.p.eps_min).min(a.p.eps_max);
        }
        close(a.eps, 0.05);
    }

    #[test]
    fn adjusting_accelerates_and_reverts_on_a_drop() {
        let (mut a, ctx, mut next) = to_deciding(7, 10_000.0);
        let trials = plan_trials(&mut a, &ctx, &mut next);
        for (k, p) in trials.iter().enumerate() {
            a.on_mi(&report(2 + k as u64, p.rate_kbps, 0.0), &ctx);
        }
        // r0 = 10100; r1 = r0 * 1.01 = 10201; r2 = r1 * 1.02 = 10405.02;
        // r3 = r2 * 1.03 = 10717.1706
        let first = next;
        let want = [10_100.0, 10_201.0, 10_405.02, 10_717.170_6];
        let mut plans = Vec::new();
        for w in want {
            let p = a.next_mi(next, &ctx);
            close(p.rate_kbps, w);
            plans.push(p);
            next += 1;
        }
        assert!(!a.on_mi(&report(first, plans[0].rate_kbps, 0.0), &ctx));
        assert!(!a.on_mi(&report(first + 1, plans[1].rate_kbps, 0.0), &ctx));
        // MI at 10405.02 loses 20%: utility falls -> back to 10201, decide again
        assert!(a.on_mi(&report(first + 2, plans[2].rate_kbps, 0.2), &ctx));
        assert_eq!(a.state(), "deciding");
        close(a.rate, 10_201.0);
        close(a.eps, 0.01);
    }

    #[test]
    fn ignores_results_of_intervals_from_an_earlier_phase() {
        let (mut a, ctx, mut next) = to_deciding(8, 10_000.0);
        plan_trials(&mut a, &ctx, &mut next);
        // MI 1 was planned in the starting state
        assert!(!a.on_mi(&report(1, 5_000.0, 0.9), &ctx));
        assert_eq!(a.state(), "deciding");
        assert!(a.trial_u.iter().all(|u| u.is_none()));
    }
}

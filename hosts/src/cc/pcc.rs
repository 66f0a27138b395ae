//! What PCC Allegro and PCC Vivace share: the bookkeeping of a phase (the
//! monitor intervals planned since the controller last changed state) and
//! the randomised pairs of trial intervals.

use rand::rngs::SmallRng;
use rand::Rng;

/// One phase of a PCC controller. Intervals planned before the phase began
/// report results of a state the controller has left: they are ignored.
#[derive(Clone, Copy, Debug, Default)]
pub struct Phase {
    /// First MI id of the phase (None: the next planned MI opens it).
    first_mi: Option<u64>,
    /// MIs planned in the phase.
    planned: u32,
}

impl Phase {
    /// MI `id` is planned: its index within the phase (0, 1, ...).
    pub fn plan(&mut self, id: u64) -> u32 {
        self.first_mi.get_or_insert(id);
        self.planned += 1;
        self.planned - 1
    }

    /// Was MI `id` planned in this phase?
    pub fn owns(&self, id: u64) -> bool {
        self.first_mi.is_some_and(|first| id >= first)
    }
}

/// Two pairs of trials, each pair one higher and one lower rate in random
/// order: is trial i the higher one?
pub fn random_pairs(rng: &mut SmallRng) -> [bool; 4] {
    let a = rng.gen_bool(0.5);
    let b = rng.gen_bool(0.5);
    [a, !a, b, !b]
}

/// The rate of a trial around `rate`: (1 + eps) or (1 - eps) times it.
pub fn trial_rate(rate: f64, higher: bool, eps: f64) -> f64 {
    rate * if higher { 1.0 + eps } else { 1.0 - eps }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn a_phase_owns_the_intervals_planned_in_it() {
        let mut p = Phase::default();
        assert!(!p.owns(7), "nothing planned yet");
        assert_eq!(p.plan(7), 0);
        assert_eq!(p.plan(8), 1);
        assert!(p.owns(7) && p.owns(9) && !p.owns(6));
    }

    #[test]
    fn pairs_hold_one_higher_and_one_lower_trial() {
        let mut rng = SmallRng::seed_from_u64(3);
        for _ in 0..20 {
            let h = random_pairs(&mut rng);
            assert!(h[0] != h[1] && h[2] != h[3]);
        }
        assert_eq!(trial_rate(1000.0, true, 0.05), 1050.0);
        assert_eq!(trial_rate(1000.0, false, 0.05), 950.0);
    }
}

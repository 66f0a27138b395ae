//! `fixed:RATE`: a constant rate (tests, pacing benchmarks).

use super::{Ctx, MiPlan, MiReport, RateController};

pub struct Fixed {
    rate_kbps: f64,
}

impl Fixed {
    pub fn new(rate_kbps: f64) -> Fixed {
        Fixed { rate_kbps }
    }
}

impl RateController for Fixed {
    fn start(&mut self, _feedback_kbps: u32, ctx: &Ctx) -> f64 {
        self.rate_kbps = self.rate_kbps.min(ctx.max_rate_kbps);
        self.rate_kbps
    }
    fn next_mi(&mut self, _id: u64, ctx: &Ctx) -> MiPlan {
        MiPlan::trace_only(ctx, self.rate_kbps)
    }
    fn on_mi(&mut self, _r: &MiReport, _ctx: &Ctx) -> bool {
        false
    }
    fn state(&self) -> &'static str {
        "fixed"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::test_ctx;

    #[test]
    fn constant() {
        let ctx = test_ctx();
        let mut f = Fixed::new(10_000.0);
        assert_eq!(f.start(3, &ctx), 10_000.0);
        assert!(!f.on_mi(&crate::cc::report(0, 10_000.0, 0.3), &ctx));
        assert_eq!(f.next_mi(1, &ctx).rate_kbps, 10_000.0);
        assert_eq!(f.on_feedback(5, &ctx), None);
    }
}

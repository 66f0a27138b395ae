//! RCP end host: send at the latest rate the routers stamped.
//!
//! Every DATA packet asks for `max_rate`; each router on the path lowers the
//! request to its own R; the receiver echoes what arrived; the sender paces
//! at the echo. The first rate is the SYNACK's echo. An echo of 0 (no router
//! wrote one, or a malformed one) keeps the current rate.

use super::{Ctx, MiPlan, MiReport, RateController};

pub struct Rcp {
    max_rate_kbps: f64,
    rate_kbps: f64,
}

impl Rcp {
    pub fn new(max_rate_kbps: f64) -> Rcp {
        Rcp {
            max_rate_kbps,
            rate_kbps: max_rate_kbps,
        }
    }
}

impl RateController for Rcp {
    fn start(&mut self, feedback_kbps: u32, ctx: &Ctx) -> f64 {
        if feedback_kbps > 0 {
            self.rate_kbps = ctx.clamp(feedback_kbps as f64);
        } else {
            self.rate_kbps = ctx.clamp(self.max_rate_kbps);
        }
        self.rate_kbps
    }

    fn next_mi(&mut self, _id: u64, ctx: &Ctx) -> MiPlan {
        // Intervals only serve the trace (loss per RTT); RCP ignores them.
        MiPlan::trace_only(ctx, self.rate_kbps)
    }

    fn on_mi(&mut self, _r: &MiReport, _ctx: &Ctx) -> bool {
        false
    }

    fn follows_routers(&self) -> bool {
        true
    }

    fn on_feedback(&mut self, feedback_kbps: u32, ctx: &Ctx) -> Option<f64> {
        if feedback_kbps == 0 {
            return None;
        }
        let r = ctx.clamp(feedback_kbps as f64);
        if r != self.rate_kbps {
            self.rate_kbps = r;
            Some(r)
        } else {
            None
        }
    }

    fn asked_kbps(&self, _pacing_kbps: f64) -> f64 {
        self.max_rate_kbps
    }

    fn state(&self) -> &'static str {
        "follow"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::test_ctx;

    #[test]
    fn follows_feedback() {
        let ctx = test_ctx();
        let mut c = Rcp::new(50_000.0);
        assert_eq!(c.start(12_000, &ctx), 12_000.0);
        assert_eq!(c.asked_kbps(12_000.0), 50_000.0);
        assert_eq!(c.on_feedback(12_000, &ctx), None);
        assert_eq!(c.on_feedback(8_000, &ctx), Some(8_000.0));
        assert_eq!(c.on_feedback(0, &ctx), None); // 0 = no information
        assert_eq!(c.on_feedback(10, &ctx), Some(100.0)); // clamped to min rate
        assert_eq!(c.next_mi(0, &ctx).rate_kbps, 100.0);
        assert!(!c.on_mi(&crate::cc::report(0, 100.0, 0.5), &ctx));
    }

    #[test]
    fn synack_without_stamp_uses_max_rate() {
        let ctx = test_ctx();
        let mut c = Rcp::new(20_000.0);
        assert_eq!(c.start(0, &ctx), 20_000.0);
    }
}

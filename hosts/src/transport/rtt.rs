//! RTT estimation (`docs/protocol.md`, "Reliability"): RFC 6298's smoothed
//! RTT and its variation (gains 1/8 and 1/4), the minimum RTT, and the two
//! timeouts of loss detection built on them: the reordering window and the
//! retransmission timeout.

/// The reordering window's base: a quarter of the minimum RTT, at least this.
const REO_WND_MIN: f64 = 0.001;
/// The reordering window grows to at most this many times its base.
const REO_MULT_MAX: f64 = 8.0;
/// The retransmission timeout's margin over the smoothed RTT is at least this.
const RTO_MARGIN_MIN: f64 = 0.005;

/// One flow's RTT estimates (seconds).
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: f64,
    rttvar: f64,
    min_rtt: f64,
    /// Multiplier of the reordering window (1 ..= `REO_MULT_MAX`).
    reo_mult: f64,
}

impl Default for RttEstimator {
    fn default() -> RttEstimator {
        RttEstimator {
            srtt: 0.0,
            rttvar: 0.0,
            min_rtt: f64::INFINITY,
            reo_mult: 1.0,
        }
    }
}

impl RttEstimator {
    /// One RTT sample `r` (RFC 6298 §2: the first sets srtt = r and
    /// rttvar = r / 2).
    pub fn on_sample(&mut self, r: f64) {
        if self.srtt == 0.0 {
            self.srtt = r;
            self.rttvar = r / 2.0;
        } else {
            self.rttvar = 0.75 * self.rttvar + 0.25 * (self.srtt - r).abs();
            self.srtt = 0.875 * self.srtt + 0.125 * r;
        }
        self.min_rtt = self.min_rtt.min(r);
    }

    /// Smoothed RTT; 0 before the first sample.
    pub fn srtt(&self) -> f64 {
        self.srtt
    }

    /// Smallest sample; infinity before the first.
    pub fn min_rtt(&self) -> f64 {
        self.min_rtt
    }

    /// Reordering window: `max(min_rtt / 4, 1 ms) * m`.
    pub fn reo_wnd(&self) -> f64 {
        (self.min_rtt / 4.0).max(REO_WND_MIN) * self.reo_mult
    }

    /// Retransmission timeout of a packet with no later packet
    /// acknowledged: `srtt + max(4 rttvar, srtt / 4, 5 ms) + reo_wnd`.
    pub fn rto(&self) -> f64 {
        self.srtt + (4.0 * self.rttvar).max(0.25 * self.srtt).max(RTO_MARGIN_MIN) + self.reo_wnd()
    }

    /// A packet declared lost was acknowledged after all (reordering):
    /// widen the reordering window by one base, up to 8.
    pub fn on_spurious_loss(&mut self) {
        self.reo_mult = (self.reo_mult + 1.0).min(REO_MULT_MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn smoothing_follows_rfc_6298() {
        let mut r = RttEstimator::default();
        assert_eq!((r.srtt(), r.min_rtt()), (0.0, f64::INFINITY));
        r.on_sample(0.100);
        // the first sample: srtt = 100 ms, rttvar = 50 ms
        assert!(close(r.srtt(), 0.100) && close(r.rttvar, 0.050));
        r.on_sample(0.200);
        // rttvar = 3/4 50 + 1/4 |100 - 200| = 62.5 ms; srtt = 7/8 100 + 1/8 200 = 112.5 ms
        assert!(close(r.rttvar, 0.0625) && close(r.srtt(), 0.1125));
        r.on_sample(0.080);
        assert!(close(r.min_rtt(), 0.080));
    }

    #[test]
    fn timeouts() {
        let mut r = RttEstimator::default();
        r.on_sample(0.100);
        r.on_sample(0.200);
        // reo_wnd = 100 ms / 4; RTO = 112.5 + max(250, 28.1, 5) + 25 ms
        assert!(close(r.reo_wnd(), 0.025));
        assert!(close(r.rto(), 0.3875));
        // a steady 4 ms path: rttvar decays below the 5 ms margin's quarter,
        // the window to its 1 ms floor: RTO = 4 + 5 + 1 ms
        let mut s = RttEstimator::default();
        for _ in 0..3 {
            s.on_sample(0.004);
        }
        assert!(close(s.reo_wnd(), 0.001));
        assert!(close(s.rto(), 0.010), "{}", s.rto());
    }

    #[test]
    fn spurious_losses_widen_the_reordering_window_up_to_8_times() {
        let mut r = RttEstimator::default();
        r.on_sample(0.040);
        assert!(close(r.reo_wnd(), 0.010));
        r.on_spurious_loss();
        assert!(close(r.reo_wnd(), 0.020));
        for _ in 0..20 {
            r.on_spurious_loss();
        }
        assert!(close(r.reo_wnd(), 0.080));
    }
}

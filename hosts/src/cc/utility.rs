//! The PCC utility functions. Rates in Mb/s (10^6 bit/s), loss a fraction.

/// Allegro (NSDI'15 §2.2): `u = T * Sigmoid(L - 0.05) - x * L` with
/// `Sigmoid(y) = 1 / (1 + e^(alpha*y))`, alpha = 100.
/// `t`: throughput, `x`: sending rate, `l`: loss rate of the MI.
pub fn allegro(t_mbps: f64, x_mbps: f64, l: f64) -> f64 {
    t_mbps * sigmoid(l - 0.05, 100.0) - x_mbps * l
}

/// `1 / (1 + e^(alpha*y))`: ~1 well below 0, 0.5 at 0, ~0 well above.
pub fn sigmoid(y: f64, alpha: f64) -> f64 {
    1.0 / (1.0 + (alpha * y).exp())
}

/// Vivace (NSDI'18 eq. 1): `u = x^t - b * x * dRTT/dT - c * x * L`.
/// `gradient` is the RTT gradient (s/s) *after* filtering.
pub fn vivace(x_mbps: f64, gradient: f64, l: f64, t: f64, b: f64, c: f64) -> f64 {
    x_mbps.max(0.0).powf(t) - b * x_mbps * gradient - c * x_mbps * l
}

/// Vivace's low-pass filter: an RTT gradient whose magnitude is below `flt`
/// counts as 0 (jitter, not a queue building or draining).
pub fn filter_gradient(g: f64, flt: f64) -> f64 {
    if g.abs() < flt {
        0.0
    } else {
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-4, "{a} != {b}");
    }

    #[test]
    fn allegro_hand_computed() {
        // L = 0: Sigmoid(-0.05) = 1/(1+e^-5) = 1/1.0067379 = 0.9933071
        // u = 10 * 0.9933071 = 9.933071
        close(allegro(10.0, 10.0, 0.0), 9.933071);
        // L = 0.05: Sigmoid(0) = 0.5, T = 9.5: u = 4.75 - 0.5 = 4.25
        close(allegro(9.5, 10.0, 0.05), 4.25);
        // L = 0.1: Sigmoid(0.05) = 1/(1+e^5) = 1/149.41316 = 0.00669285
        // T = 9: u = 0.0602357 - 1.0 = -0.9397643
        close(allegro(9.0, 10.0, 0.1), -0.9397643);
        // 1% random loss at 20 Mb/s: Sigmoid(-0.04) = 1/(1+e^-4) = 0.9820138
        // u = 19.8 * 0.9820138 - 0.2 = 19.2438732
        close(allegro(19.8, 20.0, 0.01), 19.2438732);
    }

    #[test]
    fn vivace_hand_computed() {
        let (t, b, c) = (0.9, 900.0, 11.35);
        // 10^0.9 = 7.9432823
        close(vivace(10.0, 0.0, 0.0, t, b, c), 7.9432823);
        // 1% loss: 7.9432823 - 11.35 * 10 * 0.01 = 6.8082823
        close(vivace(10.0, 0.0, 0.01, t, b, c), 6.8082823);
        // gradient 0.02: 7.9432823 - 900 * 10 * 0.02 = -172.0567177
        close(vivace(10.0, 0.02, 0.0, t, b, c), -172.0567177);
        // vivace-loss (b = 0) ignores the gradient
        close(vivace(10.0, 0.02, 0.0, t, 0.0, c), 7.9432823);
        // 20^0.9 = 14.8226890; - 11.35 * 20 * 0.01 = 2.27 -> 12.5526890
        close(vivace(20.0, 0.0, 0.01, t, b, c), 12.5526890);
    }

    #[test]
    fn filter() {
        assert_eq!(filter_gradient(0.005, 0.01), 0.0);
        assert_eq!(filter_gradient(-0.005, 0.01), 0.0);
        assert_eq!(filter_gradient(0.02, 0.01), 0.02);
        assert_eq!(filter_gradient(-0.02, 0.01), -0.02);
    }
}

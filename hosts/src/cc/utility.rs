//! The PCC utility functions. Rates in Mb/s (10^6 bit/s), loss a fraction.

/// Allegro (NSDI'15 §2.2): `u = T * Sigmoid(L - 0.05) - x * L` with
/// `Sigmoid(y) = 1 / (1 + e^(alpha*y))`, alpha = 100.
/// `t`: throughput, `x`: sending rate, `l`: loss rate of the MI.
pub fn allegro(t_mbps: f64, x_mbps: f64, l: f64) -> f64 {
    t_mbps * sigmoid(l - 0.05, 100.0) - x_mbps * l
}

/// Allegro's reference implementation (modong/pcc `sender/app/cc.h`, the
/// default since 2015): `(T * Sigmoid(L - 0.05) * Sigmoid10(1 - RTT_prev /
/// RTT) - x * L) / RTT`, alpha = 100 and 10: the paper's utility with a
/// latency factor (0.5 at a steady RTT, towards 0 as it rises, towards 1 as
/// it falls) per second of RTT. `rtt_prev`: the previous MI's mean RTT,
/// `rtt` this one's (s).
pub fn allegro_ref(t_mbps: f64, x_mbps: f64, l: f64, rtt_prev: f64, rtt: f64) -> f64 {
    let rtt = rtt.max(1e-6);
    (t_mbps * sigmoid(l - 0.05, 100.0) * sigmoid(1.0 - rtt_prev / rtt, 10.0) - x_mbps * l) / rtt
}

/// `1 / (1 + e^(alpha*y))`: ~1 well below 0, 0.5 at 0, ~0 well above.
pub fn sigmoid(y: f64, alpha: f64) -> f64 {
    1.0 / (1.0 + (alpha * y).exp())
}

/// Vivace (NSDI'18 eq. 1): `u = x^t - b * x * dRTT/dT - c * x * L`.
/// `gradient` is the RTT gradient (s/s) *after* filtering (`vivace/mod.rs`).
pub fn vivace(x_mbps: f64, gradient: f64, l: f64, t: f64, b: f64, c: f64) -> f64 {
    x_mbps.max(0.0).powf(t) - b * x_mbps * gradient - c * x_mbps * l
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
    fn allegro_ref_hand_computed() {
        // steady RTT (30 ms), no loss: 10 * 0.9933071 * 0.5 / 0.03 = 165.551192
        close(allegro_ref(10.0, 10.0, 0.0, 0.03, 0.03), 165.551192);
        // 1% loss: (9.9 * 0.9820138 * 0.5 - 0.1) / 0.03 = 158.698942
        close(allegro_ref(9.9, 10.0, 0.01, 0.03, 0.03), 158.698942);
        // RTT falling from 40 to 30 ms: Sigmoid10(-1/3) = 1 / (1 + e^-3.3333)
        // = 0.9655548; 10 * 0.9933071 * 0.9655548 / 0.03 = 319.6975
        close(allegro_ref(10.0, 10.0, 0.0, 0.04, 0.03), 319.697_5);
        // the same rates over a 100 ms RTT count a third of a 30 ms one's
        close(allegro_ref(10.0, 10.0, 0.0, 0.1, 0.1), 165.551192 * 0.3);
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
}

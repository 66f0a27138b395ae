//! Workloads: Poisson flow arrivals for a target load, flow sizes from a
//! distribution. The arrival times and sizes depend only on the seed, the
//! load, the capacity, the distribution and the MSS, never on the scheme, so
//! every scheme sees the same flows.

use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp};

use super::sizes::SizeDist;

/// Bytes one DATA packet adds to its payload on the wire: Ethernet + IPv4 +
/// UDP (42) and the RCP and host headers (36).
pub const PER_PACKET_OVERHEAD: f64 = 78.0;
/// Frames a flow sends besides its DATA packets: the SYN and the FIN.
pub const CONTROL_FRAMES_PER_FLOW: f64 = 2.0;

/// A Poisson stream of (arrival time, size) pairs.
pub struct Workload {
    rng: StdRng,
    exp: Exp<f64>,
    sizes: SizeDist,
    duration: f64,
    max_flows: Option<u64>,
    next_t: f64,
    pub count: u64,
    /// Arrivals per second.
    pub lambda: f64,
}

impl Workload {
    /// Arrival rate `lambda = load * capacity / (mean size on the wire)`,
    /// where a flow of S bytes costs S * (mss + 78) / mss bytes of frames.
    pub fn new(
        load: f64,
        capacity_kbps: f64,
        sizes: SizeDist,
        mss: usize,
        duration: f64,
        seed: u64,
        max_flows: Option<u64>,
    ) -> Result<Workload, String> {
        if !(load > 0.0 && load.is_finite()) {
            return Err(format!("--load must be > 0, got {load}"));
        }
        // The load counts link slots: bmv2 shapes the bottleneck in packets per
        // second, so every frame of a flow (DATA, SYN, FIN) takes a full data
        // frame's time whatever its length (docs/experiments.md, "Load").
        let frame_bits = (mss as f64 + PER_PACKET_OVERHEAD) * 8.0;
        let slots = sizes.mean_packets(mss) + CONTROL_FRAMES_PER_FLOW;
        let lambda = load * capacity_kbps * 1000.0 / (slots * frame_bits);
        let exp = Exp::new(lambda).map_err(|e| format!("bad arrival rate {lambda}: {e}"))?;
        let mut rng = StdRng::seed_from_u64(seed);
        let first = exp.sample(&mut rng);
        Ok(Workload {
            rng,
            exp,
            sizes,
            duration,
            max_flows,
            next_t: first,
            count: 0,
            lambda,
        })
    }

    /// Time of the next arrival (seconds from the start), if any.
    pub fn peek(&self) -> Option<f64> {
        if self.next_t >= self.duration || self.max_flows.is_some_and(|m| self.count >= m) {
            None
        } else {
            Some(self.next_t)
        }
    }

    /// Take the next arrival: (time, size).
    pub fn pop(&mut self) -> Option<(f64, u64)> {
        let t = self.peek()?;
        let size = self.sizes.sample(&mut self.rng);
        self.next_t += self.exp.sample(&mut self.rng);
        self.count += 1;
        Some((t, size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_rate_matches_the_load() {
        // 100 kB flows, mss 1000: 100 DATA + SYN + FIN = 102 slots of 1078 * 8
        // bits = 879648 bits; load 0.5 of 10 Mb/s: lambda = 5e6 / 879648 = 5.6841 flows/s
        let w = Workload::new(0.5, 10_000.0, SizeDist::Fixed(100_000), 1000, 1e9, 7, Some(50_000));
        let mut w = w.unwrap_or_else(|e| panic!("{e}"));
        assert!((w.lambda - 5.684092).abs() < 1e-5, "{}", w.lambda);
        let mut last = 0.0;
        while let Some((t, s)) = w.pop() {
            assert!(t >= last);
            assert_eq!(s, 100_000);
            last = t;
        }
        assert_eq!(w.count, 50_000);
        let rate = 50_000.0 / last;
        assert!((rate / 5.684092 - 1.0).abs() < 0.02, "{rate}");
    }

    #[test]
    fn same_seed_same_flows() {
        let mk = || {
            Workload::new(
                0.7,
                15_000.0,
                SizeDist::Pareto {
                    shape: 1.2,
                    mean: 25_000.0,
                },
                1000,
                10.0,
                42,
                None,
            )
        };
        let (mut a, mut b) = match (mk(), mk()) {
            (Ok(a), Ok(b)) => (a, b),
            _ => panic!("workload"),
        };
        let va: Vec<(f64, u64)> = std::iter::from_fn(|| a.pop()).collect();
        let vb: Vec<(f64, u64)> = std::iter::from_fn(|| b.pop()).collect();
        assert_eq!(va, vb);
        assert!(va.iter().all(|(t, _)| *t < 10.0));
        assert!(!va.is_empty());
    }
}

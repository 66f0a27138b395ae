//! Workloads: Poisson flow arrivals for a target load, flow sizes from a
//! distribution. The arrival times and sizes depend only on the seed, the
//! load, the capacity, the distribution and the MSS, never on the scheme, so
//! every scheme sees the same flows.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp};

/// Bytes one DATA packet adds to its payload on the wire: Ethernet + IPv4 +
/// UDP (42) and the RCP and host headers (36).
pub const PER_PACKET_OVERHEAD: f64 = 78.0;
/// Frames a flow sends besides its DATA packets: the SYN and the FIN.
pub const CONTROL_FRAMES_PER_FLOW: f64 = 2.0;

#[derive(Clone, Debug, PartialEq)]
pub enum SizeDist {
    Fixed(u64),
    Exp {
        mean: f64,
    },
    /// Pareto with shape `shape` (> 1) and mean `mean`: scale
    /// x_m = mean (shape - 1) / shape.
    Pareto {
        shape: f64,
        mean: f64,
    },
    /// Piecewise-linear CDF: (size bytes, cumulative probability) points.
    Cdf(Vec<(f64, f64)>),
}

impl SizeDist {
    /// `fixed:BYTES`, `exp:MEAN`, `pareto:SHAPE:MEAN`, `cdf:FILE`.
    pub fn parse(s: &str) -> Result<SizeDist, String> {
        let parts: Vec<&str> = s.splitn(3, ':').collect();
        let bytes = |x: &str| crate::units::parse_bytes(x);
        match parts.as_slice() {
            ["fixed", b] => {
                let b = bytes(b)?;
                if b == 0 {
                    return Err("fixed size must be > 0".into());
                }
                Ok(SizeDist::Fixed(b))
            }
            ["exp", m] => {
                let m = bytes(m)? as f64;
                if m < 1.0 {
                    return Err("exp mean must be >= 1 byte".into());
                }
                Ok(SizeDist::Exp { mean: m })
            }
            ["pareto", shape, m] => {
                let shape: f64 = shape.parse().map_err(|_| format!("bad Pareto shape '{shape}'"))?;
                if !(shape > 1.0 && shape.is_finite()) {
                    return Err(format!("Pareto shape must be > 1 (a finite mean), got {shape}"));
                }
                let m = bytes(m)? as f64;
                if m < 1.0 {
                    return Err("Pareto mean must be >= 1 byte".into());
                }
                Ok(SizeDist::Pareto { shape, mean: m })
            }
            ["cdf", path] => {
                let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read CDF file {path}: {e}"))?;
                SizeDist::parse_cdf(&text).map_err(|e| format!("{path}: {e}"))
            }
            ["cdf", a, b] => {
                // a path with a colon in it
                let path = format!("{a}:{b}");
                let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read CDF file {path}: {e}"))?;
                SizeDist::parse_cdf(&text).map_err(|e| format!("{path}: {e}"))
            }
            _ => Err(format!(
                "bad --sizes '{s}' (use fixed:BYTES, exp:MEAN, pareto:SHAPE:MEAN or cdf:FILE)"
            )),
        }
    }

    /// Lines "SIZE [ignored] CDF": the first column is bytes, the last the
    /// cumulative probability; `#` comments and blank lines are skipped.
    /// Sizes and probabilities must not decrease; the last probability is 1.
    pub fn parse_cdf(text: &str) -> Result<SizeDist, String> {
        let mut pts: Vec<(f64, f64)> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() < 2 {
                return Err(format!("line {}: expected 'SIZE CDF'", i + 1));
            }
            let size: f64 = cols[0]
                .parse()
                .map_err(|_| format!("line {}: bad size '{}'", i + 1, cols[0]))?;
            let last = cols[cols.len() - 1];
            let p: f64 = last
                .parse()
                .map_err(|_| format!("line {}: bad probability '{last}'", i + 1))?;
            if !(size >= 0.0 && size.is_finite() && (0.0..=1.0).contains(&p)) {
                return Err(format!("line {}: size must be >= 0 and probability in [0, 1]", i + 1));
            }
            if let Some(&(ps, pp)) = pts.last() {
                if size < ps || p < pp {
                    return Err(format!("line {}: sizes and probabilities must not decrease", i + 1));
                }
            }
            pts.push((size, p));
        }
        match pts.last() {
            None => Err("empty CDF".into()),
            Some(&(_, p)) if (p - 1.0).abs() > 1e-9 => Err("the last probability must be 1".into()),
            _ => Ok(SizeDist::Cdf(pts)),
        }
    }

    /// Mean flow size (bytes).
    pub fn mean(&self) -> f64 {
        match self {
            SizeDist::Fixed(b) => *b as f64,
            SizeDist::Exp { mean } | SizeDist::Pareto { mean, .. } => *mean,
            SizeDist::Cdf(pts) => {
                // the first point carries its own probability mass; between
                // points the size is uniform (linear interpolation)
                let mut m = pts[0].0 * pts[0].1;
                for w in pts.windows(2) {
                    let ((s0, p0), (s1, p1)) = (w[0], w[1]);
                    m += (p1 - p0) * (s0 + s1) / 2.0;
                }
                m
            }
        }
    }

    /// Draw one size (>= 1 byte).
    /// Mean DATA packets per flow, E[ceil(L / mss)]: mean / mss plus the mean
    /// share of a packet the last one leaves empty. That share is in [0, 1),
    /// so a fixed set of draws estimates it within a few thousandths, the same
    /// for every run.
    pub fn mean_packets(&self, mss: usize) -> f64 {
        const DRAWS: u32 = 100_000;
        let m = mss as f64;
        let mut rng = StdRng::seed_from_u64(0x5EED);
        let empty: f64 = (0..DRAWS)
            .map(|_| {
                let l = self.sample(&mut rng) as f64;
                (l / m).ceil() - l / m
            })
            .sum();
        self.mean() / m + empty / DRAWS as f64
    }

    pub fn sample(&self, rng: &mut StdRng) -> u64 {
        let x = match self {
            SizeDist::Fixed(b) => *b as f64,
            SizeDist::Exp { mean } => match Exp::new(1.0 / mean) {
                Ok(e) => e.sample(rng),
                Err(_) => *mean,
            },
            SizeDist::Pareto { shape, mean } => {
                let scale = mean * (shape - 1.0) / shape;
                let u: f64 = 1.0 - rng.gen::<f64>(); // (0, 1]
                scale / u.powf(1.0 / shape)
            }
            SizeDist::Cdf(pts) => {
                let u: f64 = rng.gen();
                let mut x = pts[pts.len() - 1].0;
                if u <= pts[0].1 {
                    x = pts[0].0;
                } else {
                    for w in pts.windows(2) {
                        let ((s0, p0), (s1, p1)) = (w[0], w[1]);
                        if u <= p1 {
                            x = if p1 > p0 {
                                s0 + (s1 - s0) * (u - p0) / (p1 - p0)
                            } else {
                                s1
                            };
                            break;
                        }
                    }
                }
                x
            }
        };
        x.round().clamp(1.0, 1e15) as u64
    }
}

/// A Poisson stream of (arrival time, size) pairs.
#[derive(Clone)]
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

    /// Every arrival still to come, in order: what `pop` would return until the end.
    pub fn planned(mut self) -> Vec<(f64, u64)> {
        std::iter::from_fn(|| self.pop()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_specs() {
        assert_eq!(SizeDist::parse("fixed:200k"), Ok(SizeDist::Fixed(200_000)));
        assert_eq!(SizeDist::parse("exp:25000"), Ok(SizeDist::Exp { mean: 25_000.0 }));
        assert_eq!(
            SizeDist::parse("pareto:1.2:25k"),
            Ok(SizeDist::Pareto {
                shape: 1.2,
                mean: 25_000.0
            })
        );
        assert!(SizeDist::parse("pareto:1.0:25k").is_err());
        assert!(SizeDist::parse("pareto:x:25k").is_err());
        assert!(SizeDist::parse("fixed:0").is_err());
        assert!(SizeDist::parse("uniform:5").is_err());
        assert!(SizeDist::parse("cdf:/nonexistent/file").is_err());
    }

    #[test]
    fn cdf_parse_mean_and_sample() {
        let d = SizeDist::parse_cdf("# size cdf\n1000 0.5\n3000 1 # comment\n").unwrap_or(SizeDist::Fixed(1));
        // half the mass at 1000, half uniform on [1000, 3000]: 500 + 0.5*2000 = 1500
        assert!((d.mean() - 1500.0).abs() < 1e-9);
        let mut rng = StdRng::seed_from_u64(3);
        let n = 100_000;
        let mean = (0..n).map(|_| d.sample(&mut rng) as f64).sum::<f64>() / n as f64;
        assert!((mean - 1500.0).abs() < 15.0, "{mean}");
        // three columns (pFabric style) are accepted
        assert!(SizeDist::parse_cdf("1 1 0.2\n10 1 1.0\n").is_ok());
        assert!(SizeDist::parse_cdf("10 0.5\n5 1\n").is_err());
        assert!(SizeDist::parse_cdf("10 0.5\n").is_err());
        assert!(SizeDist::parse_cdf("").is_err());
    }

    #[test]
    fn sample_means() {
        let mut rng = StdRng::seed_from_u64(1);
        let n = 200_000;
        for (d, tol) in [
            (SizeDist::Exp { mean: 10_000.0 }, 0.02),
            (
                SizeDist::Pareto {
                    shape: 2.5,
                    mean: 10_000.0,
                },
                0.03,
            ),
        ] {
            let m = (0..n).map(|_| d.sample(&mut rng) as f64).sum::<f64>() / n as f64;
            assert!((m / 10_000.0 - 1.0).abs() < tol, "{d:?}: {m}");
        }
        // Pareto never below its scale x_m = 25000 * 0.2 / 1.2 = 4166.67
        let p = SizeDist::Pareto {
            shape: 1.2,
            mean: 25_000.0,
        };
        assert!((0..10_000).all(|_| p.sample(&mut rng) >= 4166));
    }

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
    fn mean_packets_counts_the_last_partial_packet() {
        assert!((SizeDist::Fixed(100_000).mean_packets(1000) - 100.0).abs() < 1e-6);
        assert!((SizeDist::Fixed(100_001).mean_packets(1000) - 101.0).abs() < 1e-6);
        // sizes uniform over 1..=2000 bytes (CDF through (0.5, 0) and (2000.5, 1), rounded):
        // 1000 sizes take one packet, 1000 take two: 1.5 packets, against 1000.5 / 1000 by the mean alone
        let u = SizeDist::Cdf(vec![(0.5, 0.0), (2000.5, 1.0)]);
        assert!((u.mean_packets(1000) - 1.5).abs() < 0.01, "{}", u.mean_packets(1000));
        // the Pareto workload of the fct experiments: 25 packets by the mean, 25.5 with the last partial one
        let p = SizeDist::Pareto {
            shape: 1.2,
            mean: 25_000.0,
        };
        assert!((p.mean_packets(1000) - 25.5).abs() < 0.01, "{}", p.mean_packets(1000));
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
        let planned = a.clone().planned();
        let va: Vec<(f64, u64)> = std::iter::from_fn(|| a.pop()).collect();
        let vb: Vec<(f64, u64)> = std::iter::from_fn(|| b.pop()).collect();
        assert_eq!(va, vb);
        assert_eq!(planned, va);
        assert!(va.iter().all(|(t, _)| *t < 10.0));
        assert!(!va.is_empty());
    }
}

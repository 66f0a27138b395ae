//! Flow sizes: the distributions of `--sizes`.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp};

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
    /// Bounded Pareto on `[scale, max]` with shape `shape` (> 0): density
    /// a L^a x^(-a-1) / (1 - (L/H)^a), the scale L chosen so that the mean
    /// of the bounded distribution is `mean` ([`bounded_pareto_scale`]).
    BoundedPareto {
        shape: f64,
        mean: f64,
        max: f64,
        scale: f64,
    },
    /// Piecewise-linear CDF: (size bytes, cumulative probability) points.
    Cdf(Vec<(f64, f64)>),
}

impl SizeDist {
    /// `fixed:BYTES`, `exp:MEAN`, `pareto:SHAPE:MEAN`,
    /// `pareto:SHAPE:MEAN:MAX`, `cdf:FILE` (the path may hold colons).
    pub fn parse(s: &str) -> Result<SizeDist, String> {
        let bad = || {
            format!(
                "bad --sizes '{s}' (use fixed:BYTES, exp:MEAN, pareto:SHAPE:MEAN, pareto:SHAPE:MEAN:MAX or cdf:FILE)"
            )
        };
        let (kind, rest) = s.split_once(':').ok_or_else(bad)?;
        let bytes = |x: &str| crate::units::parse_bytes(x);
        match (kind, rest.split(':').collect::<Vec<_>>().as_slice()) {
            ("fixed", [b]) => {
                let b = bytes(b)?;
                if b == 0 {
                    return Err("fixed size must be > 0".into());
                }
                Ok(SizeDist::Fixed(b))
            }
            ("exp", [m]) => {
                let m = bytes(m)? as f64;
                if m < 1.0 {
                    return Err("exp mean must be >= 1 byte".into());
                }
                Ok(SizeDist::Exp { mean: m })
            }
            ("pareto", [shape, m]) => {
                let shape: f64 = shape.parse().map_err(|_| format!("bad Pareto shape '{shape}'"))?;
                if !(shape > 1.0 && shape.is_finite()) {
                    return Err(format!(
                        "Pareto shape must be > 1 (a finite mean), got {shape} (a bounded Pareto, \
                         pareto:SHAPE:MEAN:MAX, takes any shape > 0)"
                    ));
                }
                let m = bytes(m)? as f64;
                if m < 1.0 {
                    return Err("Pareto mean must be >= 1 byte".into());
                }
                Ok(SizeDist::Pareto { shape, mean: m })
            }
            ("pareto", [shape, m, max]) => {
                let shape: f64 = shape.parse().map_err(|_| format!("bad Pareto shape '{shape}'"))?;
                if !(shape > 0.0 && shape.is_finite()) {
                    return Err(format!(
                        "bounded Pareto shape must be > 0 (any shape has a finite mean below a bound), got {shape}"
                    ));
                }
                let (m, max) = (bytes(m)? as f64, bytes(max)? as f64);
                if m < 1.0 {
                    return Err("Pareto mean must be >= 1 byte".into());
                }
                if max <= m {
                    return Err(format!("bounded Pareto needs MEAN < MAX, got mean {m} and MAX {max}"));
                }
                let scale = bounded_pareto_scale(shape, m, max);
                Ok(SizeDist::BoundedPareto {
                    shape,
                    mean: m,
                    max,
                    scale,
                })
            }
            ("cdf", _) => {
                let text = std::fs::read_to_string(rest).map_err(|e| format!("cannot read CDF file {rest}: {e}"))?;
                SizeDist::parse_cdf(&text).map_err(|e| format!("{rest}: {e}"))
            }
            _ => Err(bad()),
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
            SizeDist::Exp { mean } | SizeDist::Pareto { mean, .. } | SizeDist::BoundedPareto { mean, .. } => *mean,
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
            SizeDist::BoundedPareto { shape, max, scale, .. } => {
                // inverse CDF: x = L / (1 - u (1 - (L/H)^a))^(1/a), u in [0, 1)
                let u: f64 = rng.gen();
                let x = scale / (1.0 - u * (1.0 - (scale / max).powf(*shape))).powf(1.0 / shape);
                x.min(*max)
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

/// Mean of a bounded Pareto with shape `a`, scale `l` and bound `h`:
/// a L^a (L^(1-a) - H^(1-a)) / ((a - 1)(1 - (L/H)^a)) for a != 1, and
/// L ln(H/L) / (1 - L/H) for a = 1; written with r = L/H and expm1 so that
/// it stays accurate for any shape and ratio.
pub fn bounded_pareto_mean(a: f64, l: f64, h: f64) -> f64 {
    let ln_r = (l / h).ln();
    let tail = if a == 1.0 {
        ln_r
    } else {
        ((a - 1.0) * ln_r).exp_m1() / (a - 1.0)
    };
    a * l * tail / (a * ln_r).exp_m1()
}

/// The scale L in (0, mean) of the bounded Pareto with shape `a` and bound
/// `h` whose mean is `mean` (0 < mean < h), by bisection: the mean grows
/// with L from 0 (L -> 0) to h (L -> h) and exceeds L, so L < mean.
pub fn bounded_pareto_scale(a: f64, mean: f64, h: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, mean);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if bounded_pareto_mean(a, mid, h) < mean {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
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
    fn bounded_pareto_specs() {
        match SizeDist::parse("pareto:1.2:25k:1M") {
            Ok(SizeDist::BoundedPareto {
                shape,
                mean,
                max,
                scale,
            }) => {
                assert_eq!((shape, mean, max), (1.2, 25_000.0, 1e6));
                assert!((bounded_pareto_mean(shape, scale, max) / mean - 1.0).abs() < 1e-12);
                assert!((6554.0..6555.0).contains(&scale), "{scale}");
            }
            d => panic!("{d:?}"),
        }
        // below a bound every shape has a finite mean
        assert!(SizeDist::parse("pareto:0.5:25000:1000000").is_ok());
        assert!(SizeDist::parse("pareto:1:25000:1000000").is_ok());
        for (spec, needle) in [
            ("pareto:0:25k:1M", "shape must be > 0"),
            ("pareto:-1:25k:1M", "shape must be > 0"),
            ("pareto:x:25k:1M", "bad Pareto shape"),
            ("pareto:1.2:25k:25k", "MEAN < MAX"),
            ("pareto:1.2:25k:10k", "MEAN < MAX"),
            ("pareto:1.2:0:1M", ">= 1 byte"),
            ("pareto:1.2:25k:1x", "unknown size unit"),
            ("pareto:1.2:25k:1M:2", "bad --sizes"),
            ("pareto:0.5:25000", "shape must be > 1"),
        ] {
            let e = SizeDist::parse(spec).err().unwrap_or_default();
            assert!(e.contains(needle), "{spec}: {e:?}");
        }
    }

    /// The mean against hand-computed cases: a = 2 on [1, 2]: 2 (1 - 1/2) /
    /// (1 - 1/4) = 4/3; a = 1 on [1, e]: 1 / (1 - 1/e); a = 1/2 on [1, 4]:
    /// (1/2) (1 - 2) / ((-1/2) (1 - 1/2)) = 2.
    #[test]
    fn bounded_pareto_mean_and_scale() {
        let e = std::f64::consts::E;
        assert!((bounded_pareto_mean(2.0, 1.0, 2.0) - 4.0 / 3.0).abs() < 1e-12);
        assert!((bounded_pareto_mean(1.0, 1.0, e) - 1.0 / (1.0 - 1.0 / e)).abs() < 1e-12);
        assert!((bounded_pareto_mean(0.5, 1.0, 4.0) - 2.0).abs() < 1e-12);
        assert!((bounded_pareto_scale(0.5, 2.0, 4.0) - 1.0).abs() < 1e-9);
        assert!((bounded_pareto_scale(2.0, 4.0 / 3.0, 2.0) - 1.0).abs() < 1e-9);
    }

    /// pareto:1.2:25000:1000000: the mean of 200 000 draws is within 1% of
    /// 25000 (the offered load stays right); no draw exceeds MAX or falls
    /// below the scale; the same seed gives the same sizes.
    #[test]
    fn bounded_pareto_samples() {
        let d = SizeDist::parse("pareto:1.2:25000:1000000").unwrap_or(SizeDist::Fixed(1));
        let draw = |seed: u64| -> Vec<u64> {
            let mut rng = StdRng::seed_from_u64(seed);
            (0..200_000).map(|_| d.sample(&mut rng)).collect()
        };
        let v = draw(1);
        let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
        assert!((mean / 25_000.0 - 1.0).abs() < 0.01, "{mean}");
        assert!(v.iter().all(|&x| (6555..=1_000_000).contains(&x)));
        assert!(v.iter().any(|&x| x > 900_000), "the tail reaches near the bound");
        assert_eq!(v, draw(1));
        assert_ne!(v, draw(2));
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
}

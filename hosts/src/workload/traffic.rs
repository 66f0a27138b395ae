//! Workloads: flow arrivals for a target load (Poisson, or a renewal process
//! with heavy-tailed gaps), flow sizes from a distribution. The arrival times
//! and sizes depend only on the seed, the load, the capacity, the arrival
//! process, the distribution, the MSS and the load's unit, never on the
//! scheme, so every scheme sees the same flows.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp, Pareto};

use super::sizes::SizeDist;
use crate::transport::wire::{DATA_HEADER_LEN, FIN_FRAME_LEN, FRAME_OVERHEAD, SYN_FRAME_LEN};

/// Bytes one DATA packet adds to its payload on the wire: Ethernet + IPv4 +
/// UDP (42) and the RCP and host headers (36).
pub const PER_PACKET_OVERHEAD: f64 = (FRAME_OVERHEAD + DATA_HEADER_LEN) as f64;
/// Frames a flow sends besides its DATA packets: the SYN and the FIN.
pub const CONTROL_FRAMES_PER_FLOW: f64 = 2.0;
/// Their bytes on the wire (82 + 78).
pub const CONTROL_BYTES_PER_FLOW: f64 = (SYN_FRAME_LEN + FIN_FRAME_LEN) as f64;

/// What a flow costs the bottleneck, so what the load counts
/// (docs/experiments.md, "Load").
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LoadUnit {
    /// A link shaped in packets per second (bmv2): every frame of the flow
    /// (DATA, the last partial one included, SYN, FIN) takes a full data
    /// frame's time whatever its length.
    Slots,
    /// A link shaped in bits (ns-3, Tofino, SUME): every frame takes its own
    /// length.
    Bytes,
}

impl LoadUnit {
    /// The link time a flow of `size` bytes takes, in bits of the link.
    pub fn flow_bits(self, size: u64, mss: usize) -> f64 {
        let packets = size.div_ceil(mss as u64).max(1) as f64;
        self.bits(size as f64, packets, mss)
    }

    /// The same for the mean flow of `sizes`.
    fn mean_flow_bits(self, sizes: &SizeDist, mss: usize) -> f64 {
        self.bits(sizes.mean(), sizes.mean_packets(mss), mss)
    }

    fn bits(self, bytes: f64, packets: f64, mss: usize) -> f64 {
        match self {
            LoadUnit::Slots => (packets + CONTROL_FRAMES_PER_FLOW) * (mss as f64 + PER_PACKET_OVERHEAD) * 8.0,
            LoadUnit::Bytes => (bytes + packets * PER_PACKET_OVERHEAD + CONTROL_BYTES_PER_FLOW) * 8.0,
        }
    }
}

/// How flows arrive, at `lambda` flows per second on average.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ArrivalProcess {
    /// Exponential gaps: a Poisson process.
    Poisson,
    /// Pareto gaps of the same mean (`pareto:SHAPE`, SHAPE > 1): below 2 the
    /// gaps' variance is infinite, so flows come in bursts between long lulls
    /// (the RCP talk's "non-Poisson arrivals").
    Pareto { shape: f64 },
}

impl ArrivalProcess {
    /// `poisson` or `pareto:SHAPE`.
    pub fn parse(s: &str) -> Result<ArrivalProcess, String> {
        match s.split_once(':') {
            None if s == "poisson" => Ok(ArrivalProcess::Poisson),
            Some(("pareto", shape)) => match shape.parse::<f64>() {
                Ok(shape) if shape > 1.0 && shape.is_finite() => Ok(ArrivalProcess::Pareto { shape }),
                _ => Err(format!("pareto:SHAPE needs a SHAPE above 1 (only then is the gaps' mean finite), got {shape:?}")),
            },
            _ => Err(format!("arrivals are poisson or pareto:SHAPE, got {s:?}")),
        }
    }

    /// The gaps between arrivals, of mean 1 / lambda.
    fn gaps(self, lambda: f64) -> Result<Gaps, String> {
        let bad = |e: &dyn std::fmt::Display| format!("bad arrival rate {lambda}: {e}");
        match self {
            ArrivalProcess::Poisson => Exp::new(lambda).map(Gaps::Exp).map_err(|e| bad(&e)),
            // Pareto(scale, shape) has mean shape scale / (shape - 1).
            ArrivalProcess::Pareto { shape } => {
                Pareto::new((shape - 1.0) / (shape * lambda), shape).map(Gaps::Pareto).map_err(|e| bad(&e))
            }
        }
    }
}

enum Gaps {
    Exp(Exp<f64>),
    Pareto(Pareto<f64>),
}

impl Distribution<f64> for Gaps {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        match self {
            Gaps::Exp(d) => d.sample(rng),
            Gaps::Pareto(d) => d.sample(rng),
        }
    }
}

/// A stream of (arrival time, size) pairs, drawn in full when it is
/// made: the plan is known before the first flow starts.
pub struct Workload {
    plan: Vec<(f64, u64)>,
    pub count: u64,
    /// Mean arrivals per second of the process the plan was drawn from.
    pub lambda: f64,
    /// Factor the arrival times were scaled by (1 unless the load is exact).
    pub time_scale: f64,
    unit: LoadUnit,
    capacity_bps: f64,
    duration: f64,
    mss: usize,
}

impl Workload {
    /// Arrival rate `lambda = load * capacity / (link time of the mean flow)`,
    /// in `unit` (`LoadUnit::flow_bits`). With `exact_load`, arrivals are drawn
    /// until they offer `load * capacity * duration`, and their times are then
    /// scaled to fit the duration (the draw after the last one lands at its
    /// end): the flows of every seed offer the nominal load, up to one flow,
    /// and the arrival process is `arrivals` conditioned on its total work.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        load: f64,
        capacity_kbps: f64,
        sizes: SizeDist,
        mss: usize,
        duration: f64,
        seed: u64,
        max_flows: Option<u64>,
        exact_load: bool,
        arrivals: ArrivalProcess,
        unit: LoadUnit,
    ) -> Result<Workload, String> {
        if !(load > 0.0 && load.is_finite()) {
            return Err(format!("--load must be > 0, got {load}"));
        }
        let capacity_bps = capacity_kbps * 1000.0;
        let lambda = load * capacity_bps / unit.mean_flow_bits(&sizes, mss);
        let gaps = arrivals.gaps(lambda)?;
        let mut rng = StdRng::seed_from_u64(seed);
        let target_bits = load * capacity_bps * duration;
        let limit = max_flows.unwrap_or(u64::MAX);
        let mut plan = Vec::new();
        let (mut t, mut offered) = (gaps.sample(&mut rng), 0.0);
        loop {
            let more = if exact_load { offered < target_bits } else { t < duration };
            if !more || plan.len() as u64 >= limit {
                break;
            }
            let size = sizes.sample(&mut rng);
            plan.push((t, size));
            offered += unit.flow_bits(size, mss);
            t += gaps.sample(&mut rng);
        }
        let time_scale = if exact_load { duration / t } else { 1.0 };
        for arrival in &mut plan {
            arrival.0 *= time_scale;
        }
        Ok(Workload {
            plan,
            count: 0,
            lambda,
            time_scale,
            unit,
            capacity_bps,
            duration,
            mss,
        })
    }

    /// This plan played again every period until `duration`, the period being
    /// the duration it was drawn for: every period offers the same flows at the
    /// same offsets, so the periods of a long run differ by what the system did,
    /// not by the draw. At most `max_flows` flows in all.
    pub fn repeated(mut self, duration: f64, max_flows: Option<u64>) -> Workload {
        let period = self.duration;
        let once = std::mem::take(&mut self.plan);
        let limit = usize::try_from(max_flows.unwrap_or(u64::MAX)).unwrap_or(usize::MAX);
        self.plan = (0u32..)
            .map(|k| f64::from(k) * period)
            .take_while(|&offset| offset < duration)
            .flat_map(|offset| once.iter().map(move |&(t, size)| (t + offset, size)))
            .take_while(|&(t, _)| t < duration)
            .take(limit)
            .collect();
        self.duration = duration;
        self
    }

    /// The planned arrivals, (time, size), in time order.
    pub fn planned(&self) -> &[(f64, u64)] {
        &self.plan
    }

    /// Flows the plan holds.
    pub fn flows(&self) -> usize {
        self.plan.len()
    }

    /// The load the planned flows offer over the duration, in the workload's unit.
    pub fn offered_load(&self) -> f64 {
        let bits: f64 = self.plan.iter().map(|&(_, size)| self.unit.flow_bits(size, self.mss)).sum();
        bits / (self.capacity_bps * self.duration)
    }

    /// Time of the next arrival (seconds from the start), if any.
    pub fn peek(&self) -> Option<f64> {
        self.plan.get(self.count as usize).map(|&(t, _)| t)
    }

    /// Take the next arrival: (time, size).
    pub fn pop(&mut self) -> Option<(f64, u64)> {
        let next = *self.plan.get(self.count as usize)?;
        self.count += 1;
        Some(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_rate_matches_the_load() {
        // 100 kB flows, mss 1000: 100 DATA + SYN + FIN = 102 slots of 1078 * 8
        // bits = 879648 bits; load 0.5 of 10 Mb/s: lambda = 5e6 / 879648 = 5.6841 flows/s
        let w = Workload::new(0.5, 10_000.0, SizeDist::Fixed(100_000), 1000, 1e9, 7, Some(50_000), false, ArrivalProcess::Poisson, LoadUnit::Slots);
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
    fn a_link_shaped_in_bits_counts_each_frame_at_its_length() {
        // the same flows in bytes: 100 000 + 100 * 78 + SYN 82 + FIN 78 = 107 960 bytes =
        // 863 680 bits against 879 648 in slots; lambda = 5e6 / 863680 = 5.789181 flows/s
        let w = Workload::new(0.5, 10_000.0, SizeDist::Fixed(100_000), 1000, 10.0, 7, None, false, ArrivalProcess::Poisson, LoadUnit::Bytes);
        let w = w.unwrap_or_else(|e| panic!("{e}"));
        assert!((w.lambda - 5.789181).abs() < 1e-5, "{}", w.lambda);
        assert_eq!(LoadUnit::Bytes.flow_bits(1, 1000), (1.0 + 78.0 + 82.0 + 78.0) * 8.0);
        assert_eq!(LoadUnit::Slots.flow_bits(1, 1000), 3.0 * 1078.0 * 8.0);
        // an exact load holds in either unit
        let sizes = SizeDist::parse("pareto:1.2:25000:1000000").unwrap_or_else(|e| panic!("{e}"));
        let exact = Workload::new(0.9, 15_000.0, sizes, 1000, 30.0, 3, None, true, ArrivalProcess::Poisson, LoadUnit::Bytes);
        let exact = exact.unwrap_or_else(|e| panic!("{e}"));
        assert!((exact.offered_load() / 0.9 - 1.0).abs() < 0.05, "{}", exact.offered_load());
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
                false,
                ArrivalProcess::Poisson,
                LoadUnit::Slots,
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

    #[test]
    fn an_exact_load_offers_the_nominal_load_whatever_the_seed() {
        let sizes = SizeDist::parse("pareto:1.2:25000:1000000").unwrap_or_else(|e| panic!("{e}"));
        for seed in 1..=20 {
            let w = Workload::new(0.9, 15_000.0, sizes.clone(), 1000, 30.0, seed, None, true, ArrivalProcess::Poisson, LoadUnit::Slots);
            let w = w.unwrap_or_else(|e| panic!("{e}"));
            // within one flow of the largest size (1000 packets of 23 000 slots)
            assert!((w.offered_load() / 0.9 - 1.0).abs() < 0.05, "seed {seed}: {}", w.offered_load());
            assert!(w.plan.iter().all(|&(t, _)| (0.0..30.0).contains(&t)));
            assert!((0.8..1.25).contains(&w.time_scale), "seed {seed}: {}", w.time_scale);
        }
        let free = Workload::new(0.9, 15_000.0, sizes.clone(), 1000, 30.0, 3, None, false, ArrivalProcess::Poisson, LoadUnit::Slots);
        let exact = Workload::new(0.9, 15_000.0, sizes, 1000, 30.0, 3, None, true, ArrivalProcess::Poisson, LoadUnit::Slots);
        let (free, exact) = (free.unwrap_or_else(|e| panic!("{e}")), exact.unwrap_or_else(|e| panic!("{e}")));
        // the same draws, scaled: the sizes of the flows both plans hold are the same
        let n = free.flows().min(exact.flows());
        assert!(free.plan[..n].iter().zip(&exact.plan[..n]).all(|(a, b)| a.1 == b.1));
    }

    #[test]
    fn a_repeated_plan_offers_the_same_flows_every_period() {
        let sizes = SizeDist::parse("pareto:1.2:25000:1000000").unwrap_or_else(|e| panic!("{e}"));
        let once = Workload::new(0.9, 15_000.0, sizes, 1000, 10.0, 5, None, true, ArrivalProcess::Poisson, LoadUnit::Slots);
        let once = once.unwrap_or_else(|e| panic!("{e}"));
        let (first, load) = (once.plan.clone(), once.offered_load());
        let w = once.repeated(35.0, None);
        // three whole periods, then the part of the fourth that starts before 35 s
        let tail = first.iter().filter(|&&(t, _)| t < 5.0).count();
        assert_eq!(w.flows(), 3 * first.len() + tail);
        for (k, period) in w.plan.chunks(first.len()).enumerate() {
            let offset = 10.0 * k as f64;
            assert!(period.iter().zip(&first).all(|(a, b)| a.1 == b.1 && (a.0 - b.0 - offset).abs() < 1e-9));
        }
        assert!(w.plan.windows(2).all(|p| p[0].0 <= p[1].0));
        assert!(w.plan.iter().all(|&(t, _)| t < 35.0));
        // the last half period offers what the first half did, so the load stays near the period's
        assert!((w.offered_load() / load - 1.0).abs() < 0.15, "{} against {load}", w.offered_load());
        assert_eq!(w.repeated(35.0, Some(7)).flows(), 7);
    }

    #[test]
    fn pareto_gaps_keep_the_mean_rate_and_come_in_bursts() {
        let mk = |arrivals| {
            let w = Workload::new(0.5, 1e4, SizeDist::Fixed(100_000), 1000, 1e9, 7, Some(200_000), false, arrivals,
                                  LoadUnit::Slots);
            w.unwrap_or_else(|e| panic!("{e}"))
        };
        let gaps = |w: &Workload| -> Vec<f64> { w.plan.windows(2).map(|p| p[1].0 - p[0].0).collect() };
        let cv = |g: &[f64]| {
            let mean = g.iter().sum::<f64>() / g.len() as f64;
            (g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / g.len() as f64).sqrt() / mean
        };
        let rate = |w: &Workload| w.plan.len() as f64 / w.plan.last().map_or(1.0, |a| a.0);
        let (poisson, pareto) = (mk(ArrivalProcess::Poisson), mk(ArrivalProcess::Pareto { shape: 1.5 }));
        // the same mean rate (a Pareto of shape 1.5 converges slowly: within 10%)
        assert!((rate(&poisson) / poisson.lambda - 1.0).abs() < 0.02, "{}", rate(&poisson));
        assert!((rate(&pareto) / pareto.lambda - 1.0).abs() < 0.1, "{}", rate(&pareto));
        // exponential gaps vary as much as their mean; these far more
        assert!((cv(&gaps(&poisson)) - 1.0).abs() < 0.05, "{}", cv(&gaps(&poisson)));
        assert!(cv(&gaps(&pareto)) > 1.5, "{}", cv(&gaps(&pareto)));
        // and half of them are shorter than Poisson's median gap, ln 2 / lambda
        let mut g = gaps(&pareto);
        g.sort_by(f64::total_cmp);
        assert!(g[g.len() / 2] * pareto.lambda < std::f64::consts::LN_2, "{}", g[g.len() / 2] * pareto.lambda);
    }

    #[test]
    fn arrivals_parse_or_say_what_they_take() {
        assert_eq!(ArrivalProcess::parse("poisson"), Ok(ArrivalProcess::Poisson));
        assert_eq!(ArrivalProcess::parse("pareto:1.5"), Ok(ArrivalProcess::Pareto { shape: 1.5 }));
        for bad in ["pareto:1", "pareto:0.5", "pareto:inf", "pareto:x", "pareto", "poisson:2", "", "weibull:2"] {
            let e = ArrivalProcess::parse(bad).err().unwrap_or_else(|| panic!("{bad:?} accepted"));
            assert!(e.contains("pareto:SHAPE"), "{bad:?}: {e}");
        }
    }
}

//! Rate controllers: one interface, one module each.
//!
//! The shared driver (`crate::transport::sender`) owns everything that is not the
//! algorithm: pacing, the handshake, loss detection, retransmission, RTT
//! estimation and the monitor-interval (MI) bookkeeping. A controller sees
//! only typed inputs: the SYNACK's rate, the echoed rate of every ACK, and
//! one [`MiReport`] per monitor interval, in MI order, once every packet sent
//! in that interval is known to be acknowledged or lost. It answers with the
//! plan of the next MI (target rate, length) or, for RCP, a new rate at once.
//!
//! All rates are kb/s of Ethernet frames (`docs/protocol.md`, "Units").

mod allegro;
mod fixed;
mod pcc;
mod rcp;
mod utility;
mod vivace;
mod xcp;

pub use allegro::Utility as AllegroUtility;
pub use vivace::Variant as VivaceVariant;

use rand::rngs::SmallRng;
use rand::SeedableRng;

/// What the driver knows about the path when it asks a controller something.
#[derive(Clone, Copy, Debug)]
pub struct Ctx {
    /// Smoothed RTT (s).
    pub srtt_s: f64,
    /// Frame bytes of a full-size DATA packet.
    pub frame_bytes: usize,
    /// Bounds every rate is clamped to.
    pub min_rate_kbps: f64,
    pub max_rate_kbps: f64,
}

impl Ctx {
    pub fn clamp(&self, rate_kbps: f64) -> f64 {
        if rate_kbps.is_nan() {
            return self.min_rate_kbps;
        }
        rate_kbps.clamp(self.min_rate_kbps, self.max_rate_kbps)
    }
    /// Seconds to send `n` full-size packets at `rate_kbps`.
    pub fn time_for_packets(&self, n: f64, rate_kbps: f64) -> f64 {
        n * self.frame_bytes as f64 * 8.0 / (rate_kbps.max(1e-3) * 1000.0)
    }
    /// Rate of `n` full-size packets per smoothed RTT (kb/s).
    pub fn packets_per_rtt(&self, n: f64) -> f64 {
        n * self.frame_bytes as f64 * 8.0 / self.srtt_s.max(1e-6) / 1000.0
    }
}

/// The plan of one monitor interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MiPlan {
    /// Target sending rate during the interval (kb/s).
    pub rate_kbps: f64,
    /// Length of the interval (s).
    pub duration_s: f64,
    /// Does the controller need this interval's result (an experiment), or is
    /// it filler while results are outstanding? The driver may end a filler
    /// interval early when the controller's plan changes.
    pub useful: bool,
}

impl MiPlan {
    /// An interval at `rate_kbps` (clamped to the flow's range) lasting
    /// `rtts` RTTs, and at least `min_pkts` packets.
    pub fn new(ctx: &Ctx, rate_kbps: f64, rtts: f64, min_pkts: f64, useful: bool) -> MiPlan {
        let rate_kbps = ctx.clamp(rate_kbps);
        MiPlan {
            rate_kbps,
            duration_s: mi_length(ctx, rtts, rate_kbps, min_pkts),
            useful,
        }
    }

    /// For controllers that ignore monitor intervals (rcp, fixed): one RTT
    /// and at least 4 packets, only for the trace's loss per interval.
    pub fn trace_only(ctx: &Ctx, rate_kbps: f64) -> MiPlan {
        MiPlan::new(ctx, rate_kbps, 1.0, 4.0, false)
    }
}

/// Everything measured about one monitor interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MiReport {
    pub id: u64,
    /// The interval's target rate (kb/s).
    pub rate_kbps: f64,
    /// Actual length (s): from its start until the next interval started.
    pub duration_s: f64,
    pub sent_pkts: u32,
    /// Packets an ACK covered (cumulative ack or SACK block).
    pub delivered_pkts: u32,
    /// Packets loss detection gave up on while nothing covered them.
    pub lost_pkts: u32,
    /// Achieved sending rate x (kb/s): frame bits sent over the time span of
    /// the interval's packets (see `monitor::Mi::report`).
    pub send_kbps: f64,
    /// Throughput T = x * (frame bits delivered / frame bits sent).
    pub throughput_kbps: f64,
    /// lost_pkts / sent_pkts (0 when nothing was sent).
    pub loss: f64,
    /// Mean RTT of the interval's RTT samples (s).
    pub avg_rtt_s: f64,
    /// Reliable RTT samples (`monitor::SampleFilter`) of the interval.
    pub rtt_samples: u32,
    /// Slope of RTT over send time (s/s), least squares over the reliable
    /// samples; 0 with fewer than 2.
    pub rtt_gradient: f64,
    /// Its standard error (0 with fewer than 3 samples).
    pub rtt_gradient_se: f64,
    /// Root mean square of the RTTs around that line (s).
    pub rtt_residual: f64,
    /// The sender ran out of data during the interval.
    pub app_limited: bool,
}

/// A window-based controller's part of a packet's XCP congestion header.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CongestionRequest {
    /// H_cwnd, frame bytes.
    pub cwnd_bytes: f64,
    /// H_feedback as the sender sets it: the change it asks for, bytes.
    pub feedback_bytes: f64,
}

/// One per flow. See the module documentation for the calling order.
pub trait RateController: Send {
    /// Handshake done: the SYNACK echoed `feedback_kbps`. Returns the rate
    /// to pace at until the first MI plan.
    fn start(&mut self, feedback_kbps: u32, ctx: &Ctx) -> f64;
    /// Interval `id` starts now (ids count up from 0 with no gaps).
    fn next_mi(&mut self, id: u64, ctx: &Ctx) -> MiPlan;
    /// The result of interval `id`. Returns true if the controller's plan
    /// changed and the current interval should end now.
    fn on_mi(&mut self, r: &MiReport, ctx: &Ctx) -> bool;
    /// The rate echoed by an ACK (the minimum the routers stamped). Returns a
    /// new pacing rate to apply at once, if any.
    fn on_feedback(&mut self, _feedback_kbps: u32, _ctx: &Ctx) -> Option<f64> {
        None
    }
    /// What DATA packets carry in `rate_kbps` when pacing at `pacing_kbps`.
    fn asked_kbps(&self, pacing_kbps: f64) -> f64 {
        pacing_kbps
    }
    /// Whether the controller follows the routers' R (its sender then sends
    /// REF probes when it is slower than a packet per RTT).
    fn follows_routers(&self) -> bool {
        false
    }
    /// XCP: what a forward packet of `s` frame bytes whose RCP header says
    /// `rtt_s` (0: no RTT yet) puts in its congestion header
    /// (`transport/xcp_header.rs`); None for every other scheme.
    fn congestion_request(&self, _s: usize, _rtt_s: f64) -> Option<CongestionRequest> {
        None
    }
    /// XCP: the feedback (bytes) an answer echoed. Returns a new pacing rate
    /// to apply at once, if any.
    fn on_congestion_feedback(&mut self, _feedback: i32, _ctx: &Ctx) -> Option<f64> {
        None
    }
    /// The window (frame bytes) a window-based controller allows in flight;
    /// None for rate-based ones.
    fn cwnd_bytes(&self) -> Option<f64> {
        None
    }
    /// Short state name (for traces).
    fn state(&self) -> &'static str;
}

/// A congestion-control choice from the command line.
#[derive(Clone, Debug, PartialEq)]
pub enum CcSpec {
    Rcp,
    /// `allegro` (the paper's utility), `allegro-ref` (the reference code's).
    Allegro(allegro::Utility),
    /// `vivace`, `vivace-loss`, `vivace-latency`, `vivace-stop`,
    /// `vivace-loss-p4rcp` (see `vivace::Params`).
    Vivace(vivace::Variant),
    /// `fixed:RATE`, in kb/s.
    Fixed(f64),
    /// XCP's window-based sender (`xcp.rs`).
    Xcp,
    /// Kernel TCP with an optional congestion control name (`tcp:bbr`);
    /// CUBIC when none is given.
    Tcp(Option<String>),
}

impl CcSpec {
    pub fn parse(s: &str) -> Result<CcSpec, String> {
        let lower = s.trim().to_ascii_lowercase();
        let (head, arg) = match lower.split_once(':') {
            Some((h, a)) => (h.to_string(), Some(a.to_string())),
            None => (lower.clone(), None),
        };
        let no_arg = |spec: CcSpec| -> Result<CcSpec, String> {
            match &arg {
                Some(_) => Err(format!("--cc {s}: '{head}' takes no argument")),
                None => Ok(spec),
            }
        };
        match head.as_str() {
            "rcp" => no_arg(CcSpec::Rcp),
            "xcp" => no_arg(CcSpec::Xcp),
            "allegro" => no_arg(CcSpec::Allegro(allegro::Utility::Paper)),
            "allegro-ref" => no_arg(CcSpec::Allegro(allegro::Utility::Reference)),
            "vivace" => no_arg(CcSpec::Vivace(vivace::Variant::Default)),
            "vivace-loss" => no_arg(CcSpec::Vivace(vivace::Variant::Loss)),
            "vivace-latency" => no_arg(CcSpec::Vivace(vivace::Variant::Latency)),
            "vivace-stop" => no_arg(CcSpec::Vivace(vivace::Variant::Stop)),
            "vivace-loss-p4rcp" => no_arg(CcSpec::Vivace(vivace::Variant::LossP4rcp)),
            "fixed" => {
                let a = arg.ok_or_else(|| format!("--cc {s}: fixed needs a rate (fixed:RATE), e.g. fixed:10mbit"))?;
                let rate = crate::units::parse_rate_kbps(&a).map_err(|e| format!("--cc {s}: fixed:RATE: {e}"))?;
                Ok(CcSpec::Fixed(rate))
            }
            "tcp" => match arg {
                None => Ok(CcSpec::Tcp(None)),
                Some(a) if !a.is_empty() && a.len() < 16 && a.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                    Ok(CcSpec::Tcp(Some(a)))
                }
                Some(a) => Err(format!("--cc {s}: bad TCP congestion control name '{a}'")),
            },
            _ => Err(format!(
                "unknown --cc '{s}' (use rcp, xcp, allegro, allegro-ref, vivace, vivace-loss, vivace-latency, vivace-stop, vivace-loss-p4rcp, fixed:RATE, tcp or tcp:ALGO)"
            )),
        }
    }

    /// The name written into records.
    pub fn name(&self) -> String {
        match self {
            CcSpec::Rcp => "rcp".into(),
            CcSpec::Xcp => "xcp".into(),
            CcSpec::Allegro(allegro::Utility::Paper) => "allegro".into(),
            CcSpec::Allegro(allegro::Utility::Reference) => "allegro-ref".into(),
            CcSpec::Vivace(v) => v.name().into(),
            CcSpec::Fixed(_) => "fixed".into(),
            CcSpec::Tcp(None) => "tcp".into(),
            CcSpec::Tcp(Some(a)) => format!("tcp:{a}"),
        }
    }

    /// Build the controller of one UDP flow; `seed` drives its randomness
    /// (Allegro's trial order and MI lengths, Vivace's probe order).
    /// `max_rate_kbps` is what RCP asks the routers for.
    pub fn build(&self, seed: u64, max_rate_kbps: f64) -> Option<Box<dyn RateController>> {
        let rng = SmallRng::seed_from_u64(seed);
        Some(match self {
            CcSpec::Rcp => Box::new(rcp::Rcp::new(max_rate_kbps)),
            CcSpec::Xcp => Box::new(xcp::Xcp::new(max_rate_kbps)),
            CcSpec::Allegro(u) => Box::new(allegro::Allegro::new(allegro::Params::of(*u), rng)),
            CcSpec::Vivace(v) => Box::new(vivace::Vivace::new(vivace::Params::of(*v), rng)),
            CcSpec::Fixed(r) => Box::new(fixed::Fixed::new(*r)),
            CcSpec::Tcp(_) => return None,
        })
    }
}

/// Length of an interval of `rtts` smoothed RTTs that holds at least
/// `min_pkts` packets at `rate_kbps`.
pub fn mi_length(ctx: &Ctx, rtts: f64, rate_kbps: f64, min_pkts: f64) -> f64 {
    (rtts * ctx.srtt_s).max(ctx.time_for_packets(min_pkts, rate_kbps))
}

#[cfg(test)]
pub(crate) fn test_ctx() -> Ctx {
    // 30 ms RTT, 1078-byte frames (1000 bytes of data), 100 kb/s .. 1 Gb/s.
    Ctx {
        srtt_s: 0.030,
        frame_bytes: 1078,
        min_rate_kbps: 100.0,
        max_rate_kbps: 1_000_000.0,
    }
}

/// Every `--cc` that runs over UDP, once each (`fixed` at 4 Mb/s), for the
/// tests that go through them all.
#[cfg(test)]
pub(crate) const UDP_SCHEMES: [&str; 10] = [
    "rcp",
    "allegro",
    "allegro-ref",
    "vivace",
    "vivace-loss",
    "vivace-latency",
    "vivace-stop",
    "vivace-loss-p4rcp",
    "fixed:4mbit",
    "xcp",
];

/// A report of an interval at `rate` with utility-relevant fields set.
#[cfg(test)]
pub(crate) fn report(id: u64, rate: f64, loss: f64) -> MiReport {
    MiReport {
        id,
        rate_kbps: rate,
        duration_s: 0.06,
        sent_pkts: 100,
        delivered_pkts: (100.0 * (1.0 - loss)) as u32,
        lost_pkts: (100.0 * loss) as u32,
        send_kbps: rate,
        throughput_kbps: rate * (1.0 - loss),
        loss,
        avg_rtt_s: 0.03,
        rtt_samples: 100,
        rtt_gradient: 0.0,
        rtt_gradient_se: 0.0,
        rtt_residual: 0.0,
        app_limited: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_specs() {
        assert_eq!(CcSpec::parse("rcp"), Ok(CcSpec::Rcp));
        assert_eq!(CcSpec::parse("XCP").map(|x| x.name()), Ok("xcp".to_string()));
        assert!(CcSpec::parse("xcp:1").is_err());
        assert_eq!(CcSpec::parse("Allegro"), Ok(CcSpec::Allegro(allegro::Utility::Paper)));
        let ar = CcSpec::parse("allegro-ref");
        assert_eq!(ar, Ok(CcSpec::Allegro(allegro::Utility::Reference)));
        assert_eq!(ar.map(|a| a.name()), Ok("allegro-ref".to_string()));
        assert_eq!(CcSpec::parse("vivace-loss"), Ok(CcSpec::Vivace(vivace::Variant::Loss)));
        assert_eq!(CcSpec::parse("vivace-stop").map(|v| v.name()), Ok("vivace-stop".to_string()));
        let vp = CcSpec::parse("vivace-loss-p4rcp");
        assert_eq!(vp, Ok(CcSpec::Vivace(vivace::Variant::LossP4rcp)));
        assert_eq!(vp.map(|v| v.name()), Ok("vivace-loss-p4rcp".to_string()));
        assert_eq!(CcSpec::parse("fixed:10mbit"), Ok(CcSpec::Fixed(10_000.0)));
        assert_eq!(CcSpec::parse("tcp"), Ok(CcSpec::Tcp(None)));
        assert_eq!(CcSpec::parse("tcp:bbr"), Ok(CcSpec::Tcp(Some("bbr".into()))));
        assert!(CcSpec::parse("fixed").is_err());
        assert!(CcSpec::parse("fixed:10").is_err());
        assert!(CcSpec::parse("rcp:1").is_err());
        assert!(CcSpec::parse("tcp:a b").is_err());
        assert!(CcSpec::parse("reno").is_err());
        assert_eq!(CcSpec::parse("tcp:reno").unwrap().name(), "tcp:reno");
        assert!(CcSpec::Tcp(None).build(1, 1e6).is_none());
        assert!(CcSpec::Vivace(vivace::Variant::Latency).build(1, 1e6).is_some());
    }

    #[test]
    fn ctx_arithmetic() {
        let c = test_ctx();
        // 2 packets per 30 ms: 2 * 1078 * 8 bits / 0.03 s = 574.93 kb/s
        assert!((c.packets_per_rtt(2.0) - 574.933).abs() < 0.01);
        // 10 packets at 8624 kb/s (1000 pkt/s) take 10 ms
        assert!((c.time_for_packets(10.0, 8624.0) - 0.010).abs() < 1e-12);
        // 1.7 RTT = 51 ms beats 10 packets at 10 Mb/s (8.6 ms)
        assert!((mi_length(&c, 1.7, 10_000.0, 10.0) - 0.051).abs() < 1e-12);
        assert_eq!(c.clamp(1.0), 100.0);
        assert_eq!(c.clamp(f64::NAN), 100.0);
        assert_eq!(c.clamp(2e6), 1e6);
    }
}

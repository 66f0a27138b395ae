//! The variants of Vivace and their parameters (which rules of the paper, of
//! pcc.h and of p4rcp each one runs: the module documentation of
//! [`super`]), and pcc.h's confidence amplifier.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Default,
    /// Vivace-Loss as the NSDI'18 code runs it (pcc.h's client with a
    /// latency coefficient of 0): `Params::of` says which rules.
    Loss,
    Latency,
    /// The default with pcc.h's emergency stop.
    Stop,
    /// p4rcp's Vivace-Loss: the default's rules with b = 0 (the paper's
    /// utility, always two probe pairs at +-5%, no emergency stop).
    LossP4rcp,
}

impl Variant {
    pub fn name(&self) -> &'static str {
        match self {
            Variant::Default => "vivace",
            Variant::Loss => "vivace-loss",
            Variant::Latency => "vivace-latency",
            Variant::Stop => "vivace-stop",
            Variant::LossP4rcp => "vivace-loss-p4rcp",
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub t: f64,
    pub b: f64,
    pub c: f64,
    /// Probes at r(1 +- eps).
    pub eps: f64,
    pub theta0: f64,
    pub omega0: f64,
    pub delta: f64,
    /// Smallest step.
    pub step_min_kbps: f64,
    /// Steps up larger than this share of r are tried before taken.
    pub move_ratio: f64,
    /// Lowest rate outside slow start.
    pub rate_min_kbps: f64,
    pub mi_rtts: f64,
    pub mi_min_pkts: f64,
    pub start_pkts_per_rtt: f64,
    /// Slow start's first rate instead (kb/s; None: `start_pkts_per_rtt`).
    pub start_kbps: Option<f64>,
    /// Gradients are truncated to a multiple of this.
    pub flt: f64,
    /// Fewer reliable RTT samples than this: no gradient.
    pub min_rtt_samples: u32,
    /// A gradient counts only above this many standard errors.
    pub gradient_se: f64,
    /// Slow start ignores the flow's first lost packets, and gradients
    /// below `start_flt` while it does.
    pub start_loss_ignore_pkts: u32,
    pub start_flt: f64,
    /// Probes that lost at most this share overall share it.
    pub low_loss: f64,
    /// Double check: the faster probes lost more than this many packets
    /// fewer, with at least `recheck_loss` overall.
    pub recheck_pkts: u32,
    pub recheck_loss: f64,
    /// An MI losing more than this halves the rate (None: never).
    pub stop_loss: Option<f64>,
    /// Probe pairs per decision (1 or 2); with 2, both must agree.
    pub pairs: usize,
    /// pcc.h `search`: one pair only while the moves keep their
    /// direction (`trend_count_ >= 1`), `pairs` after a reversal.
    pub one_pair_on_trend: bool,
    /// pcc.h `getkDelta`: probes at least this far from r (kb/s; 0: none).
    pub probe_min_kbps: f64,
    /// pcc.h `utility`: an MI that lost at most this share pays the loss
    /// coefficient `c_low` instead of `c` (None: always `c`).
    pub low_loss_c: Option<(f64, f64)>,
    /// pcc.h `onMonitorEnds` in START: every MI that lost at most the
    /// budget counts no loss and leaves the budget whole; the first that
    /// lost more uses it up (false: the flow's first lost packets).
    pub start_ignore_per_mi: bool,
    /// pcc.h `MOVING`: the loss rate of a move divides the two MIs' lost
    /// packets by the reference MI's packets plus the target's *lost*
    /// packets (false: by both MIs' packets).
    pub move_loss_over_reference: bool,
}

impl Params {
    pub fn of(v: Variant) -> Params {
        let p = Params {
            // NSDI'18 Table 1; PCC-Uspace pcc_utility_manager.cpp
            t: 0.9,
            b: 900.0,
            c: 11.35,
            // pcc_sender.cpp kProbingStepSize
            eps: 0.05,
            // gradient_descent_pcc_client.cpp: factor 1.0, initial_boundary
            // 0.05, boundary_increment 0.06
            theta0: 1.0,
            omega0: 0.05,
            delta: 0.06,
            // pcc.h decide: |change| >= 0.5; RECORDING: move if > 10%;
            // kMinRateMbps = 1.3
            step_min_kbps: 500.0,
            move_ratio: 0.1,
            rate_min_kbps: 1_300.0,
            // core.cpp start_monitor: 1 RTT, at least 10 packets
            mi_rtts: 1.0,
            mi_min_pkts: 10.0,
            // pcc_sender.cpp: initial congestion window (10) per RTT
            start_pkts_per_rtt: 10.0,
            start_kbps: None,
            // pcc.h utility: int(g * 100) / 2 * 2 / 100
            flt: 0.02,
            // pcc_monitor_interval_queue.cpp kMinReliableRtt
            min_rtt_samples: 4,
            // not in the references: see the module documentation
            gradient_se: 2.0,
            // pcc.h loss_ignore_count = 50; |latency_info| < 0.2 in START
            start_loss_ignore_pkts: 50,
            start_flt: 0.2,
            // pcc.h RECORDING: overall_loss_rate <= 0.01; double check
            // (loss_down - loss_up) > 2 and overall_loss_rate >= 0.05
            low_loss: 0.01,
            recheck_pkts: 2,
            recheck_loss: 0.05,
            // the paper and PCC-Uspace have no emergency stop
            stop_loss: None,
            pairs: 2,
            one_pair_on_trend: false,
            probe_min_kbps: 0.0,
            low_loss_c: None,
            start_ignore_per_mi: false,
            move_loss_over_reference: false,
        };

        match v {
            Variant::Default | Variant::Latency => p,
            Variant::LossP4rcp => Params { b: 0.0, ..p },
            // pcc.h onMonitorEnds: loss / total > 0.5
            Variant::Stop => Params {
                stop_loss: Some(0.5),
                ..p
            },
            // gradient_descent_pcc_client SERVER PORT 0: pcc.h with
            // kLatencyCoefficient = 0 (the latency filters above then
            // play no part)
            Variant::Loss => Params {
                b: 0.0,
                // PCC() rate_ = 0.8, doubled at the first START monitor
                start_kbps: Some(1_600.0),
                // onMonitorEnds in START: loss = 0 while loss_ignore_count
                // >= loss, which it leaves as it is
                start_ignore_per_mi: true,
                // utility: loss coefficient 1 when loss_rate <= 0.03
                low_loss_c: Some((0.03, 1.0)),
                // search: number_of_probes_ = 2 if trend_count_ >= 1
                one_pair_on_trend: true,
                // getkDelta: max(0.05, 0.5 / base_rate_)
                probe_min_kbps: 500.0,
                // MOVING: overall_total = reference_total_pkt +
                // target_loss_pkt
                move_loss_over_reference: true,
                // onMonitorEnds: double(loss) / total > 0.5
                stop_loss: Some(0.5),
                ..p
            },
        }
    }
}

/// The confidence amplifier of pcc.h `decide`:
/// a+1 (a < 3), 2a-2 (a < 6), 4a-14 (a < 9), 8a-50 (a >= 9).
pub fn amplifier(a: f64) -> f64 {
    if a < 3.0 {
        a + 1.0
    } else if a < 6.0 {
        2.0 * a - 2.0
    } else if a < 9.0 {
        4.0 * a - 14.0
    } else {
        8.0 * a - 50.0
    }
}

//! REF probes (ns-2's `rcp-host.cc`): a flow whose packets leave further
//! apart than its minimum RTT would hear the routers' R only with its data,
//! less than once per RTT, and ramp up slowly. It sends a small REF packet
//! whenever no forward packet (DATA or REF) left for min(0.5 s, min RTT);
//! routers stamp and sample it like DATA, the receiver echoes the stamped
//! rate in a REFACK (`docs/protocol.md`).

/// ns-2's SYN_DELAY: a REF goes out at least this often however long the RTT.
pub const MAX_PROBE_INTERVAL_S: f64 = 0.5;
/// The most of a flow's rate its REFs may take. Without a bound every slow flow sends a REF per min RTT
/// whatever its rate: when many flows crowd a link and R falls, their REFs alone can exceed the link
/// (a hundred flows at 20 ms send 5 000 REFs a second), y rises, R falls further and more flows pile up.
/// Bounded by the rate, the REFs fall with R; but whatever share they may take is link capacity the
/// flows' data loses when the link is crowded with slow flows (at half, a third: at load 0.9 the flows
/// then pile up until R sits at its floor). A sixteenth costs at most 6%, and since a REF is under a
/// twelfth of a data frame, a flow that sends DATA at its rate sends none between its packets.
pub const REF_RATE_SHARE: f64 = 1.0 / 16.0;

#[derive(Debug, Default)]
pub struct RefProbe {
    last_forward: f64,
    next_seq: u32,
}

impl RefProbe {
    pub fn new(now: f64) -> RefProbe {
        RefProbe {
            last_forward: now,
            next_seq: 0,
        }
    }

    /// A forward packet (DATA or REF) left at `now`.
    pub fn on_forward(&mut self, now: f64) {
        self.last_forward = now;
    }

    /// When the next REF is due, if the flow probes: its packets leave
    /// `packet_interval_s` apart, more than its `min_rtt_s` (a known one).
    /// REFs of `ref_interval_s` each at the flow's rate go no closer than
    /// that over REF_RATE_SHARE.
    pub fn due(&self, packet_interval_s: f64, min_rtt_s: f64, ref_interval_s: f64) -> Option<f64> {
        (min_rtt_s.is_finite() && min_rtt_s > 0.0 && packet_interval_s > min_rtt_s).then(|| {
            self.last_forward + min_rtt_s.min(MAX_PROBE_INTERVAL_S).max(ref_interval_s / REF_RATE_SHARE)
        })
    }

    /// The REF's own transmission number (REFs count their own, as SYNs do).
    pub fn next_seq(&mut self) -> u32 {
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_slower_than_one_packet_per_rtt_probes_every_min_rtt() {
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-9);
        let mut p = RefProbe::new(10.0);
        assert_eq!(p.due(0.010, 0.040, 0.001), None, "a packet per 10 ms hears R with its data");
        assert!(close(p.due(0.100, 0.040, 0.001), 10.040));
        p.on_forward(10.1);
        assert!(close(p.due(0.100, 0.040, 0.001), 10.140));
        assert!(close(p.due(2.0, 1.0, 0.001), 10.6), "at least every 0.5 s");
        assert_eq!(p.due(1.0, f64::INFINITY, 0.001), None, "no RTT known yet");
        assert_eq!((p.next_seq(), p.next_seq()), (0, 1));
    }

    #[test]
    fn refs_take_at_most_their_share_of_the_flows_rate() {
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-9);
        let p = RefProbe::new(10.0);
        // a REF takes 30 ms at the flow's rate: at most one per 30 ms / REF_RATE_SHARE, not one per min RTT
        assert!(close(p.due(0.400, 0.020, 0.030), 10.0 + 0.030 / REF_RATE_SHARE));
        assert!(close(p.due(0.400, 0.020, 0.001), 10.020), "a fast enough flow probes every min RTT");
    }
}

//! XCP end host (Katabi, Handley, Rohrs, SIGCOMM 2002; `docs/xcp.md`).
//!
//! A window-based sender: at most cwnd frame bytes in flight (the driver
//! holds new data beyond it), paced at cwnd per smoothed RTT. Every forward
//! packet carries the XCP congestion header (`transport/xcp_header.rs`):
//! H_cwnd, x = rtt s / cwnd and H_feedback, the sender's request
//! (r rtt - cwnd) s / cwnd for r = its maximum rate, which each XCP router
//! lowers to its own feedback. The receiver echoes H_feedback in the
//! packet's answer and the sender applies it: cwnd = max(cwnd + H_feedback, s).
//! A loss halves cwnd once per monitor interval (an RTT), as TCP would: the
//! paper keeps TCP's loss response for what XCP routers do not prevent.
//!
//! A new flow starts with one packet of window and grows only by the
//! routers' feedback: the behaviour the RCP talk's comparison rests on.

use super::{CongestionRequest, Ctx, MiPlan, MiReport, RateController};

/// The first window, in packets.
pub const INITIAL_WINDOW_PACKETS: f64 = 1.0;

pub struct Xcp {
    max_rate_kbps: f64,
    /// Frame bytes; None until the handshake gives a packet size.
    cwnd: Option<f64>,
    /// s: frame bytes of a full-size packet (the window's floor).
    s: f64,
}

impl Xcp {
    pub fn new(max_rate_kbps: f64) -> Xcp {
        Xcp {
            max_rate_kbps,
            cwnd: None,
            s: 0.0,
        }
    }

    fn rate_kbps(&self, ctx: &Ctx) -> f64 {
        let cwnd = self.cwnd.unwrap_or(INITIAL_WINDOW_PACKETS * ctx.frame_bytes as f64);
        ctx.clamp(cwnd * 8.0 / ctx.srtt_s / 1000.0)
    }
}

/// The paper's request: the window change (r rtt - cwnd) that would bring the
/// flow to rate r (bytes/s), spread over the cwnd / s packets of a window.
fn desired_feedback(r: f64, rtt: f64, cwnd: f64, s: f64) -> f64 {
    (r * rtt - cwnd) * s / cwnd
}

impl RateController for Xcp {
    fn start(&mut self, _feedback_kbps: u32, ctx: &Ctx) -> f64 {
        self.s = ctx.frame_bytes as f64;
        self.cwnd = Some(INITIAL_WINDOW_PACKETS * self.s);
        self.rate_kbps(ctx)
    }

    fn next_mi(&mut self, _id: u64, ctx: &Ctx) -> MiPlan {
        // Intervals serve the trace and the loss response only.
        MiPlan::trace_only(ctx, self.rate_kbps(ctx))
    }

    fn on_mi(&mut self, r: &MiReport, _ctx: &Ctx) -> bool {
        match self.cwnd {
            Some(cwnd) if r.lost_pkts > 0 => {
                self.cwnd = Some((cwnd / 2.0).max(self.s));
                true
            }
            _ => false,
        }
    }

    fn congestion_request(&self, s: usize, rtt_s: f64) -> Option<CongestionRequest> {
        let cwnd = self.cwnd.unwrap_or(INITIAL_WINDOW_PACKETS * s as f64);
        // Without an RTT the sender cannot size its request: one packet more.
        let feedback = if rtt_s > 0.0 {
            desired_feedback(self.max_rate_kbps * 1000.0 / 8.0, rtt_s, cwnd, s as f64)
        } else {
            s as f64
        };
        Some(CongestionRequest {
            cwnd_bytes: cwnd,
            feedback_bytes: feedback,
        })
    }

    fn on_congestion_feedback(&mut self, feedback: i32, ctx: &Ctx) -> Option<f64> {
        let cwnd = self.cwnd?;
        self.cwnd = Some((cwnd + feedback as f64).max(self.s));
        Some(self.rate_kbps(ctx))
    }

    fn cwnd_bytes(&self) -> Option<f64> {
        self.cwnd
    }

    fn state(&self) -> &'static str {
        "window"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{report, test_ctx};

    #[test]
    fn starts_with_one_packet_and_applies_the_echoed_feedback() {
        let ctx = test_ctx(); // 30 ms, 1078-byte frames
        let mut c = Xcp::new(100_000.0);
        assert_eq!(c.cwnd_bytes(), None);
        // one packet per 30 ms: 1078 * 8 / 0.03 = 287.5 kb/s
        assert!((c.start(0, &ctx) - 287.47).abs() < 0.01);
        assert_eq!(c.cwnd_bytes(), Some(1078.0));
        let r = c.on_congestion_feedback(10 * 1078, &ctx).expect("a new rate");
        assert_eq!(c.cwnd_bytes(), Some(11.0 * 1078.0));
        assert!((r - 11.0 * 287.47).abs() < 0.1);
        // negative feedback never takes the window below one packet
        c.on_congestion_feedback(-1_000_000, &ctx);
        assert_eq!(c.cwnd_bytes(), Some(1078.0));
        assert!((c.next_mi(0, &ctx).rate_kbps - 287.47).abs() < 0.01);
    }

    #[test]
    fn the_header_asks_for_the_window_of_the_maximum_rate() {
        let ctx = test_ctx();
        let mut c = Xcp::new(8_000.0); // 1e6 bytes/s
        c.start(0, &ctx);
        c.on_congestion_feedback(9 * 1078, &ctx); // 10 packets
        let h = c.congestion_request(1078, 0.05).expect("xcp carries its header");
        // r rtt = 50 000 bytes; (50 000 - 10 780) / 10 packets = 3922 bytes a packet
        assert_eq!(h.cwnd_bytes, 10_780.0);
        assert!((h.feedback_bytes - 3922.0).abs() < 1e-9);
        // above the maximum rate it asks for less; without an RTT for one packet
        c.on_congestion_feedback(100 * 1078, &ctx);
        assert!(c.congestion_request(1078, 0.05).unwrap().feedback_bytes < 0.0);
        assert_eq!(c.congestion_request(1078, 0.0).unwrap().feedback_bytes, 1078.0);
        // before the handshake (the SYN): the initial window of the packet's size
        assert_eq!(Xcp::new(8_000.0).congestion_request(100, 0.0).unwrap().cwnd_bytes, 100.0);
    }

    #[test]
    fn a_loss_halves_the_window_down_to_one_packet() {
        let ctx = test_ctx();
        let mut c = Xcp::new(100_000.0);
        c.start(0, &ctx);
        c.on_congestion_feedback(7 * 1078, &ctx);
        assert!(!c.on_mi(&report(0, 1000.0, 0.0), &ctx));
        assert!(c.on_mi(&report(1, 1000.0, 0.1), &ctx));
        assert_eq!(c.cwnd_bytes(), Some(4.0 * 1078.0));
        c.on_mi(&report(2, 1000.0, 0.1), &ctx);
        c.on_mi(&report(3, 1000.0, 0.1), &ctx);
        c.on_mi(&report(4, 1000.0, 0.1), &ctx);
        assert_eq!(c.cwnd_bytes(), Some(1078.0));
    }
}

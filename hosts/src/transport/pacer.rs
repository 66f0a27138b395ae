//! Pacing (`docs/protocol.md`, "Pacing"): when the next DATA packet may
//! leave at the rate in force.

use crate::units::packet_interval;

/// How long a flow waits before it tries again after the socket refused a
/// datagram (would block).
const BLOCKED_WAIT_S: f64 = 0.0002;

/// A pacer: the earliest time the next packet may leave. Successive
/// departures are spaced by exactly one packet interval at the current rate
/// ("schedule" arithmetic), so timer lateness does not lower the average
/// rate: a late wake-up sends what is due at once. Credit for lateness is
/// bounded by `max_lag` (10 ms: on a loaded 2-core machine a process is
/// often descheduled for a few ms, and a 2 ms bound lost 5% of the rate at
/// 100 Mb/s), and no credit accumulates while the flow has nothing to send.
#[derive(Clone, Debug)]
pub struct Pacer {
    next: f64,
    /// The socket refused a datagram: nothing leaves before this.
    blocked_until: f64,
    rate_kbps: f64,
    pub max_lag: f64,
}

impl Pacer {
    /// A pacer at `rate_kbps` whose first packet may leave at `now`; all
    /// times are seconds on one monotonic clock.
    pub fn new(now: f64, rate_kbps: f64) -> Pacer {
        Pacer {
            next: now,
            blocked_until: 0.0,
            rate_kbps,
            max_lag: 0.010,
        }
    }

    /// The rate in force (kb/s of frames).
    pub fn rate(&self) -> f64 {
        self.rate_kbps
    }

    /// Pace at `rate_kbps` from the next packet on; true if it changed.
    pub fn set_rate(&mut self, rate_kbps: f64) -> bool {
        let changed = rate_kbps != self.rate_kbps;
        self.rate_kbps = rate_kbps;
        changed
    }

    /// Start the schedule again: the next packet may leave at `now`.
    pub fn restart(&mut self, now: f64) {
        self.next = now;
    }

    /// Earliest departure of the next packet.
    pub fn next_departure(&self) -> f64 {
        self.next.max(self.blocked_until)
    }

    /// May a packet leave at `now`?
    pub fn ready(&self, now: f64) -> bool {
        now >= self.next && now >= self.blocked_until
    }

    /// A packet of `frame_bytes` left at `now`.
    pub fn on_send(&mut self, now: f64, frame_bytes: usize) {
        let base = self.next.max(now - self.max_lag);
        self.next = base + packet_interval(frame_bytes, self.rate_kbps).as_secs_f64();
    }

    /// The socket would not take a packet at `now`: wait a little.
    pub fn on_blocked(&mut self, now: f64) {
        self.blocked_until = now + BLOCKED_WAIT_S;
    }

    /// Nothing to send at `now`: no credit accumulates while idle.
    pub fn idle(&mut self, now: f64) {
        if self.next < now {
            self.next = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacer_keeps_the_average_despite_late_wakeups() {
        // 1000-byte frames at 8 Mb/s -> 1 ms apart. Wake up 0.3 ms late every
        // time and send whatever is due: after 1 s exactly 1000 packets.
        let mut p = Pacer::new(0.0, 8000.0);
        let mut sent = 0;
        let mut now: f64 = 0.0;
        while now < 1.0 {
            while p.ready(now) && p.next_departure() < 1.0 {
                p.on_send(now, 1000);
                sent += 1;
            }
            now = p.next_departure() + 0.0003;
        }
        assert_eq!(sent, 1000);
    }

    #[test]
    fn pacer_gives_no_credit_for_idle_time() {
        let mut p = Pacer::new(0.0, 8000.0);
        p.on_send(0.0, 1000); // next at 1 ms
        p.idle(5.0);
        assert_eq!(p.next_departure(), 5.0);
        // a wake-up far past the schedule is clamped to max_lag (10 ms) of credit
        let mut q = Pacer::new(0.0, 8000.0);
        q.on_send(10.0, 1000);
        assert!((q.next_departure() - (10.0 - 0.010 + 0.001)).abs() < 1e-12);
    }

    #[test]
    fn a_rate_change_applies_from_the_next_packet() {
        let mut p = Pacer::new(0.0, 8000.0);
        assert!(!p.set_rate(8000.0), "no change");
        p.on_send(0.0, 1000); // 1 ms at 8 Mb/s
        assert!(p.set_rate(16000.0));
        assert_eq!(p.rate(), 16000.0);
        p.on_send(0.001, 1000); // 0.5 ms at 16 Mb/s
        assert!((p.next_departure() - 0.0015).abs() < 1e-12);
        // after the handshake the schedule starts at the SYNACK
        p.restart(2.0);
        assert_eq!(p.next_departure(), 2.0);
    }

    #[test]
    fn a_blocked_socket_holds_departures_for_0_2_ms() {
        let mut p = Pacer::new(0.0, 8000.0);
        p.on_blocked(1.0);
        assert!(!p.ready(1.0001));
        assert!((p.next_departure() - 1.0002).abs() < 1e-12);
        assert!(p.ready(1.0002));
    }
}

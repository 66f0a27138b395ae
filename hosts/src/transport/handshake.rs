//! The exchange's control packets (`docs/protocol.md`, "Exchange"): when a
//! SYN or a FIN (re)leaves, and which SYN attempt a SYNACK answers.
//!
//! - SYN: retransmitted after 1, 2, 4, 8, 8, ... s until a SYNACK arrives
//!   (or the flow's timeout ends); attempts count from 0 in `pkt_seq`, and
//!   the SYNACK's echo of it gives the first RTT sample.
//! - FIN: retransmitted backing off from one RTO (between 10 ms and 2 s),
//!   at most 8 times.

/// Initial SYN retransmission timeout (RFC 6298's 1 s), doubled per try...
const SYN_RTO: f64 = 1.0;
/// ... up to this.
const SYN_RTO_MAX: f64 = 8.0;
/// FIN attempts before the flow gives up on a FINACK.
const FIN_TRIES: u32 = 8;
/// Bounds of the wait between FIN attempts.
const FIN_WAIT_MIN: f64 = 0.01;
const FIN_WAIT_MAX: f64 = 2.0;
/// A control packet the socket would not take is tried again this soon.
const BLOCKED_RETRY_S: f64 = 0.001;

/// The SYN's attempts.
#[derive(Clone, Debug)]
pub struct Handshake {
    /// Send time of every attempt, by its `pkt_seq`.
    sent: Vec<f64>,
    next_retry: f64,
}

impl Handshake {
    /// The first SYN is due at `now`.
    pub fn new(now: f64) -> Handshake {
        Handshake {
            sent: Vec::new(),
            next_retry: now,
        }
    }

    /// `pkt_seq` of the next attempt.
    pub fn next_seq(&self) -> u32 {
        self.sent.len() as u32
    }

    /// When the next attempt is due.
    pub fn next_retry(&self) -> f64 {
        self.next_retry
    }

    /// The attempt `next_seq` left at `now`.
    pub fn on_sent(&mut self, now: f64) {
        let tries = self.sent.len() as i32;
        self.sent.push(now);
        self.next_retry = now + (SYN_RTO * 2f64.powi(tries)).min(SYN_RTO_MAX);
    }

    /// The socket would not take the SYN at `now`.
    pub fn on_blocked(&mut self, now: f64) {
        self.next_retry = now + BLOCKED_RETRY_S;
    }

    /// The RTT a SYNACK arriving at `now` and echoing `pkt_seq` measures;
    /// None if it answers none of our attempts.
    pub fn rtt(&self, pkt_seq: u32, now: f64) -> Option<f64> {
        self.sent.get(pkt_seq as usize).map(|&t| now - t)
    }
}

/// The FIN's attempts.
#[derive(Clone, Debug)]
pub struct Close {
    tries: u32,
    next_retry: f64,
}

impl Close {
    /// The first FIN is due at `now`.
    pub fn new(now: f64) -> Close {
        Close {
            tries: 0,
            next_retry: now,
        }
    }

    /// `pkt_seq` of the next attempt.
    pub fn next_seq(&self) -> u32 {
        self.tries
    }

    /// When the next attempt is due.
    pub fn next_retry(&self) -> f64 {
        self.next_retry
    }

    /// Every attempt was made: give up on the FINACK.
    pub fn exhausted(&self) -> bool {
        self.tries >= FIN_TRIES
    }

    /// An attempt left at `now`, `rto` being the flow's retransmission
    /// timeout then.
    pub fn on_sent(&mut self, now: f64, rto: f64) {
        self.tries += 1;
        self.next_retry = now + (rto * 2f64.powi(self.tries as i32 - 1)).clamp(FIN_WAIT_MIN, FIN_WAIT_MAX);
    }

    /// The socket would not take the FIN at `now`.
    pub fn on_blocked(&mut self, now: f64) {
        self.next_retry = now + BLOCKED_RETRY_S;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syn_backs_off_1_2_4_8_8_s() {
        let mut h = Handshake::new(0.0);
        assert_eq!((h.next_seq(), h.next_retry()), (0, 0.0));
        let mut now = 0.0;
        let mut waits = Vec::new();
        for _ in 0..6 {
            h.on_sent(now);
            waits.push(h.next_retry() - now);
            now = h.next_retry();
        }
        assert_eq!(waits, [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]);
        assert_eq!(h.next_seq(), 6);
    }

    #[test]
    fn a_synack_is_matched_to_the_attempt_it_echoes() {
        let mut h = Handshake::new(0.0);
        h.on_sent(0.0);
        h.on_sent(1.0);
        // the answer to attempt 0 arrives late, after attempt 1 left
        assert_eq!(h.rtt(0, 1.25), Some(1.25));
        assert_eq!(h.rtt(1, 1.25), Some(0.25));
        assert_eq!(h.rtt(2, 1.25), None, "no such attempt");
        // a blocked socket: try again in 1 ms, same pkt_seq
        h.on_blocked(3.0);
        assert_eq!((h.next_seq(), h.next_retry()), (2, 3.001));
    }

    #[test]
    fn fin_backs_off_from_one_rto_at_most_8_times() {
        let mut c = Close::new(5.0);
        assert_eq!((c.next_seq(), c.next_retry()), (0, 5.0));
        let mut waits = Vec::new();
        while !c.exhausted() {
            c.on_sent(0.0, 0.1);
            waits.push(c.next_retry());
        }
        // 0.1 * 2^k s, between 10 ms and 2 s
        assert_eq!(waits, [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0, 2.0]);
        assert_eq!(c.next_seq(), 8);
        let mut fast = Close::new(0.0);
        fast.on_sent(0.0, 0.001);
        assert_eq!(fast.next_retry(), 0.01);
    }
}

//! Command-line units: rates, byte counts, durations; and pacing arithmetic.

use std::time::Duration;

/// Parse a rate into kb/s (1 kb/s = 1000 bit/s). A unit is required:
/// `bit`, `kbit`, `mbit`, `gbit` (as `tc`), also `bps`, `kbps`, `mbps`,
/// `gbps` meaning *bits* per second, case-insensitive. `15mbit` = 15000.
pub fn parse_rate_kbps(s: &str) -> Result<f64, String> {
    let t = s.trim().to_ascii_lowercase();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("bad rate '{s}': expected a number and a unit, e.g. 15mbit, 500kbit, 1gbit"))?;
    let mult = match unit {
        "bit" | "bps" => 0.001,
        "kbit" | "kbps" | "k" => 1.0,
        "mbit" | "mbps" | "m" => 1000.0,
        "gbit" | "gbps" | "g" => 1_000_000.0,
        "" => return Err(format!("rate '{s}' needs a unit, e.g. 15mbit, 500kbit, 1gbit")),
        _ => return Err(format!("unknown rate unit in '{s}' (use bit, kbit, mbit or gbit)")),
    };
    let kbps = v * mult;
    if !kbps.is_finite() || kbps <= 0.0 || kbps > u32::MAX as f64 {
        return Err(format!("rate '{s}' out of range (must be > 0 and < 4.29 Tbit)"));
    }
    Ok(kbps)
}

/// Parse a byte count: plain number, or with a suffix `k`/`kb` (1000),
/// `m`/`mb` (10^6), `g`/`gb` (10^9), `kib`/`mib`/`gib` (powers of 1024),
/// case-insensitive; a fraction is allowed with a suffix (`1.5m`).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("bad byte count '{s}' (e.g. 200000, 200k, 1M, 64KiB)"))?;
    let mult: f64 = match unit {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("unknown size unit in '{s}' (use k, M, G, KiB, MiB, GiB)")),
    };
    let b = (v * mult).round();
    if !(0.0..=1e18).contains(&b) {
        return Err(format!("byte count '{s}' out of range"));
    }
    Ok(b as u64)
}

/// Parse a duration: seconds as a number (`2.5`), or with `s`, `ms`, `us`,
/// `m` (minutes) suffix.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim().to_ascii_lowercase();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("bad duration '{s}' (e.g. 30, 30s, 500ms)"))?;
    let secs = match unit {
        "" | "s" => v,
        "ms" => v / 1e3,
        "us" => v / 1e6,
        "m" | "min" => v * 60.0,
        _ => return Err(format!("unknown duration unit in '{s}' (use s, ms, us or m)")),
    };
    if !(0.0..=1e7).contains(&secs) {
        return Err(format!("duration '{s}' out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Time one frame of `frame_bytes` takes at `rate_kbps`:
/// `frame_bytes * 8 / (rate_kbps * 1000)` seconds.
pub fn packet_interval(frame_bytes: usize, rate_kbps: f64) -> Duration {
    let rate = rate_kbps.max(1e-3);
    Duration::from_secs_f64(frame_bytes as f64 * 8.0 / (rate * 1000.0))
}

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
    pub max_lag: f64,
}

impl Pacer {
    /// `now` and all times are seconds on one monotonic clock.
    pub fn new(now: f64) -> Pacer {
        Pacer {
            next: now,
            max_lag: 0.010,
        }
    }
    /// Earliest departure of the next packet.
    pub fn next_departure(&self) -> f64 {
        self.next
    }
    /// May a packet leave at `now`?
    pub fn ready(&self, now: f64) -> bool {
        now >= self.next
    }
    /// A packet of `frame_bytes` left at `now` at `rate_kbps`.
    pub fn on_send(&mut self, now: f64, frame_bytes: usize, rate_kbps: f64) {
        let base = self.next.max(now - self.max_lag);
        self.next = base + packet_interval(frame_bytes, rate_kbps).as_secs_f64();
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
    fn rates() {
        assert_eq!(parse_rate_kbps("15mbit").unwrap(), 15_000.0);
        assert_eq!(parse_rate_kbps("500kbit").unwrap(), 500.0);
        assert_eq!(parse_rate_kbps("1gbit").unwrap(), 1_000_000.0);
        assert_eq!(parse_rate_kbps("1.5Mbit").unwrap(), 1_500.0);
        assert_eq!(parse_rate_kbps("64000bit").unwrap(), 64.0);
        assert!(parse_rate_kbps("15").is_err());
        assert!(parse_rate_kbps("fast").is_err());
        assert!(parse_rate_kbps("0mbit").is_err());
        assert!(parse_rate_kbps("15furlongs").is_err());
    }

    #[test]
    fn bytes_and_durations() {
        assert_eq!(parse_bytes("200000").unwrap(), 200_000);
        assert_eq!(parse_bytes("200k").unwrap(), 200_000);
        assert_eq!(parse_bytes("1.5M").unwrap(), 1_500_000);
        assert_eq!(parse_bytes("64KiB").unwrap(), 65_536);
        assert!(parse_bytes("-1").is_err());
        assert!(parse_bytes("1x").is_err());
        assert_eq!(parse_duration("2.5").unwrap(), Duration::from_millis(2500));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn interval_arithmetic() {
        // 1078-byte frame at 10 Mb/s: 8624 bits / 10^7 bit/s = 862.4 us.
        let d = packet_interval(1078, 10_000.0);
        assert!((d.as_secs_f64() - 862.4e-6).abs() < 1e-9);
        // at 500 Mb/s: 8624 / 5e8 = 17.248 us
        let d = packet_interval(1078, 500_000.0);
        assert!((d.as_secs_f64() - 17.248e-6).abs() < 1e-9);
    }

    #[test]
    fn pacer_keeps_the_average_despite_late_wakeups() {
        // 1000-byte frames at 8 Mb/s -> 1 ms apart. Wake up 0.3 ms late every
        // time and send whatever is due: after 1 s exactly 1000 packets.
        let mut p = Pacer::new(0.0);
        let mut sent = 0;
        let mut now: f64 = 0.0;
        while now < 1.0 {
            while p.ready(now) && p.next_departure() < 1.0 {
                p.on_send(now, 1000, 8000.0);
                sent += 1;
            }
            now = p.next_departure() + 0.0003;
        }
        assert_eq!(sent, 1000);
    }

    #[test]
    fn pacer_gives_no_credit_for_idle_time() {
        let mut p = Pacer::new(0.0);
        p.on_send(0.0, 1000, 8000.0); // next at 1 ms
        p.idle(5.0);
        assert_eq!(p.next_departure(), 5.0);
        // a wake-up far past the schedule is clamped to max_lag (10 ms) of credit
        let mut q = Pacer::new(0.0);
        q.on_send(10.0, 1000, 8000.0);
        assert!((q.next_departure() - (10.0 - 0.010 + 0.001)).abs() < 1e-12);
    }
}

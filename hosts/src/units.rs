//! Command-line units: rates, byte counts, durations; and the time a frame
//! takes at a rate.

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
}

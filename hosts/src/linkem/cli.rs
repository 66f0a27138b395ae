//! The command line: two ports in one of two modes, and the link's
//! treatment.

use crate::emulation::Params;
use clap::Parser;
use p4rcp_host::units;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "p4rcp-linkem",
    version,
    about = "A user-space emulated link (delay, loss, reordering, rate) between two TUN devices or two interfaces, for kernels without sch_netem"
)]
pub struct LinkemArgs {
    /// TUN mode: namespace of side A (the sender side).
    #[arg(long)]
    ns_a: Option<String>,
    /// TUN mode: TUN device of side A.
    #[arg(long)]
    dev_a: Option<String>,
    /// TUN mode: namespace of side B.
    #[arg(long)]
    ns_b: Option<String>,
    /// TUN mode: TUN device of side B.
    #[arg(long)]
    dev_b: Option<String>,
    /// Ethernet mode: interface of side A (in the current namespace).
    #[arg(long)]
    if_a: Option<String>,
    /// Ethernet mode: interface of side B (in the current namespace).
    #[arg(long)]
    if_b: Option<String>,
    /// One-way delay, applied in each direction.
    #[arg(long, default_value = "0", value_parser = units::parse_duration)]
    delay: Duration,
    /// Loss A->B in percent.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Loss B->A in percent.
    #[arg(long, default_value_t = 0.0)]
    loss_back: f64,
    /// Percent of A->B packets that skip the delay (reordering).
    #[arg(long, default_value_t = 0.0)]
    reorder: f64,
    /// Bottleneck rate A->B (e.g. 20mbit; default: unlimited).
    #[arg(long, value_parser = units::parse_rate_kbps)]
    rate: Option<f64>,
    /// Bottleneck queue A->B in bytes (with --rate).
    #[arg(long, default_value = "75k", value_parser = units::parse_bytes)]
    limit: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also write the final counters (one JSON line) to FILE.
    #[arg(long)]
    pub stats: Option<String>,
    /// Check the arguments as a start would, then exit (0: good, 2: the
    /// message a start would print); opens no device, socket or file.
    #[arg(long)]
    pub check: bool,
}

pub const IFNAMSIZ: usize = 16;

/// Which pair of ports to join.
#[derive(Debug, PartialEq)]
pub enum Mode {
    Tun {
        ns_a: String,
        dev_a: String,
        ns_b: String,
        dev_b: String,
    },
    Ethernet {
        if_a: String,
        if_b: String,
    },
}

/// Check the arguments: exactly one complete mode, sane percentages.
pub fn validate(a: &LinkemArgs) -> Result<(Mode, Params), String> {
    let tun = [
        ("--ns-a", &a.ns_a),
        ("--dev-a", &a.dev_a),
        ("--ns-b", &a.ns_b),
        ("--dev-b", &a.dev_b),
    ];
    let eth = [("--if-a", &a.if_a), ("--if-b", &a.if_b)];
    let given = |v: &[(&str, &Option<String>)]| v.iter().filter(|(_, x)| x.is_some()).count();
    let missing = |v: &[(&str, &Option<String>)]| {
        v.iter()
            .filter(|(_, x)| x.is_none())
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mode = match (given(&tun), given(&eth)) {
        (0, 0) => {
            return Err(
                "linkem needs exactly one mode: TUN (--ns-a NS --dev-a TUN --ns-b NS --dev-b TUN) \
                        or Ethernet (--if-a IFACE --if-b IFACE)"
                    .into(),
            )
        }
        (t, e) if t > 0 && e > 0 => {
            return Err(
                "linkem: choose one mode, TUN (--ns-a/--dev-a/--ns-b/--dev-b) or Ethernet \
                        (--if-a/--if-b), not both"
                    .into(),
            )
        }
        (4, 0) => Mode::Tun {
            ns_a: a.ns_a.clone().unwrap_or_default(),
            dev_a: a.dev_a.clone().unwrap_or_default(),
            ns_b: a.ns_b.clone().unwrap_or_default(),
            dev_b: a.dev_b.clone().unwrap_or_default(),
        },
        (_, 0) => {
            return Err(format!(
                "linkem TUN mode needs --ns-a, --dev-a, --ns-b and --dev-b (missing {})",
                missing(&tun)
            ))
        }
        (0, 2) => Mode::Ethernet {
            if_a: a.if_a.clone().unwrap_or_default(),
            if_b: a.if_b.clone().unwrap_or_default(),
        },
        _ => {
            return Err(format!(
                "linkem Ethernet mode needs --if-a and --if-b (missing {})",
                missing(&eth)
            ))
        }
    };
    let names: Vec<&String> = match &mode {
        Mode::Tun { dev_a, dev_b, .. } => vec![dev_a, dev_b],
        Mode::Ethernet { if_a, if_b } => {
            if if_a == if_b {
                return Err(format!(
                    "--if-a and --if-b must be two different interfaces (both {if_a})"
                ));
            }
            vec![if_a, if_b]
        }
    };
    for n in names {
        if n.is_empty() || n.len() >= IFNAMSIZ {
            return Err(format!("bad interface name '{n}' (1 to {} characters)", IFNAMSIZ - 1));
        }
    }
    for (name, p) in [
        ("--loss", a.loss),
        ("--loss-back", a.loss_back),
        ("--reorder", a.reorder),
    ] {
        if !(0.0..=100.0).contains(&p) {
            return Err(format!("{name} must be a percentage in [0, 100], got {p}"));
        }
    }
    Ok((
        mode,
        Params {
            delay: a.delay.as_secs_f64(),
            loss: a.loss,
            loss_back: a.loss_back,
            reorder: a.reorder,
            rate_kbps: a.rate,
            limit: a.limit,
            seed: a.seed,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(args: &[&str]) -> Result<(Mode, Params), String> {
        let a = LinkemArgs::try_parse_from(std::iter::once("linkem").chain(args.iter().copied()))
            .map_err(|e| format!("clap: {e}"))?;
        validate(&a)
    }

    fn err(args: &[&str], needle: &str) {
        match check(args) {
            Ok((m, _)) => panic!("{args:?} accepted as {m:?}"),
            Err(e) => assert!(e.contains(needle), "{args:?}: {e:?} does not mention {needle:?}"),
        }
    }

    #[test]
    fn exactly_one_mode() {
        let tun = ["--ns-a", "x", "--dev-a", "t", "--ns-b", "y", "--dev-b", "t"];
        let (m, _) = check(&tun).unwrap();
        assert_eq!(
            m,
            Mode::Tun {
                ns_a: "x".into(),
                dev_a: "t".into(),
                ns_b: "y".into(),
                dev_b: "t".into()
            }
        );
        let (m, p) = check(&[
            "--if-a", "d1-eth0", "--if-b", "d1-eth1", "--delay", "20ms", "--loss", "1",
        ])
        .unwrap();
        assert_eq!(
            m,
            Mode::Ethernet {
                if_a: "d1-eth0".into(),
                if_b: "d1-eth1".into()
            }
        );
        assert!((p.delay - 0.020).abs() < 1e-12);
        assert_eq!(p.loss, 1.0);
        assert_eq!(p.loss_back, 0.0);
        assert!(p.rate_kbps.is_none());

        err(&[], "exactly one mode");
        err(&["--delay", "20ms"], "exactly one mode");
        let mut both: Vec<&str> = tun.to_vec();
        both.extend(["--if-a", "e0", "--if-b", "e1"]);
        err(&both, "not both");
        err(&["--ns-a", "x", "--if-a", "e0"], "not both");
        err(&["--ns-a", "x", "--dev-a", "t", "--ns-b", "y"], "missing --dev-b");
        err(&["--if-a", "e0"], "missing --if-b");
        err(&["--if-b", "e0"], "missing --if-a");
        err(&["--if-a", "e0", "--if-b", "e0"], "different");
        err(
            &["--if-a", "an-interface-name-too-long", "--if-b", "e0"],
            "bad interface name",
        );
        err(&["--if-a", "e0", "--if-b", "e1", "--loss", "150"], "percentage");
        err(&["--if-a", "e0", "--if-b", "e1", "--loss-back=-1"], "percentage");
        err(&["--if-a", "e0", "--if-b", "e1", "--reorder", "101"], "percentage");
        err(&["--if-a", "e0", "--if-b", "e1", "--rate", "20"], "needs a unit");
    }
}

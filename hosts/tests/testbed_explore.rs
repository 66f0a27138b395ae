//! Explorations of the test bed: not tests (`#[ignore]`d), printouts for
//! studying the controllers. Run one with
//! `cargo test --release NAME -- --ignored --nocapture`; the environment
//! picks schemes (`SIM_CC=allegro,vivace`), seeds (`SIM_SEEDS=5`: 1..5) and
//! the scenario's knobs named at each; `SIM_TRACE=1` (or `mi`) prints
//! every trace line.

mod testbed;

use p4rcp_host::cc::CcSpec;
use testbed::scenarios::*;
use testbed::{simulate, FlowSpec, Net};

fn seeds() -> Vec<u64> {
    let n = std::env::var("SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5u64);
    (1..=n).collect()
}

fn env_f64(name: &str, default: f64) -> f64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn env_cc() -> Vec<CcSpec> {
    match std::env::var("SIM_CC") {
        Ok(s) => s.split(',').filter_map(|c| CcSpec::parse(c).ok()).collect(),
        Err(_) => vec![ALLEGRO, ALLEGRO_REF, VIVACE, VIVACE_LOSS, VIVACE_LOSS_P4RCP],
    }
}

/// Not a test: every scenario for each PCC scheme (`SIM_CC=a,b`) and
/// seed (`SIM_SEEDS=n`: 1..n), in the tests' terms
/// (`cargo test --release explore_pcc -- --ignored --nocapture`).
#[test]
#[ignore]
fn explore_pcc() {
    for cc in env_cc() {
        for seed in seeds() {
            let a = [0.0, 0.01, 0.02].map(|l| alone(&cc, l, 0.0, seed));
            let j = [0.001, 0.002, 0.004].map(|j| alone(&cc, 0.0, j, seed));
            let four = [0.0, 0.001].map(|j| four_flows(&cc, j, 30.0, seed).0);
            let rr = [0.020, 0.100].map(|l| rtt_ratio(&cc, l, seed));
            let bw = bandwidth_change(&cc, env_f64("SIM_JITTER", 0.0), seed)
                .map(|t| t.map_or("never".into(), |t| format!("{t:.1}")));
            eprintln!(
                "{:12} seed {seed}: alone 0/1/2% {:.2} {:.2} {:.2} | ack jitter 1/2/4 ms {:.2} {:.2} {:.2} | \
                 4 flows Jain (0/1 ms) {:.2} {:.2} | RTT ratio 20/100 ms {:.2} {:.2} | bw change {} {}",
                cc.name(),
                a[0],
                a[1],
                a[2],
                j[0],
                j[1],
                j[2],
                four[0],
                four[1],
                rr[0],
                rr[1],
                bw[0],
                bw[1]
            );
        }
    }
}

/// Not a test: per-flow goodput (Mb/s) and loss (%) per second of the
/// four-flow scenario (`SIM_CC`, `SIM_SEEDS`, `SIM_JITTER` s,
/// `SIM_SECS`), and Jain's index per 10 s.
#[test]
#[ignore]
fn explore_four_flows() {
    let (jitter, secs) = (env_f64("SIM_JITTER", 0.0), env_f64("SIM_SECS", 30.0));
    for cc in env_cc() {
        for seed in seeds() {
            let (_, r) = four_flows(&cc, jitter, secs, seed);
            let j = per_10_s(0.0, secs, |from, to| format!("{:.3}", r.jain(from, to)));
            eprintln!("{} seed {seed}: Jain per 10 s {j}", cc.name());
            for f in &r.flows {
                let per_s = |v: &dyn Fn(f64) -> f64| -> String {
                    (0..secs as usize)
                        .map(|t| format!("{:4.1}", v(t as f64)))
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                let loss = |t: f64| {
                    let v: Vec<f64> = f
                        .trace
                        .iter()
                        .filter(|l| l.event == "sample" && (t..t + 1.0).contains(&(f.start_s + l.t_s)))
                        .filter_map(|l| l.loss)
                        .collect();
                    100.0 * v.iter().sum::<f64>() / v.len().max(1) as f64
                };
                eprintln!("  Mb/s  {}", per_s(&|t| f.goodput(t, t + 1.0) / 1000.0));
                eprintln!("  loss% {}", per_s(&loss));
            }
        }
    }
}

/// Not a test: the rtt-fairness scenario (10 ms against `SIM_RTT` s, the
/// long one 5 s first, a buffer of `SIM_BUFFER` packets, data packets up
/// to `SIM_JITTER` s late at the queue) until `SIM_SECS`: the short /
/// long goodput ratio per 10 s and each flow's loss (`SIM_CC`,
/// `SIM_SEEDS`), to tell a slow convergence from a lasting bias.
#[test]
#[ignore]
fn explore_rtt_fairness() {
    let (long_rtt, secs) = (env_f64("SIM_RTT", 0.100), env_f64("SIM_SECS", 40.0));
    let net = Net {
        arrival_jitter_s: env_f64("SIM_JITTER", 0.0),
        ..Net::bottleneck(12_000.0, env_f64("SIM_BUFFER", SHORT_FLOW_BDP_PKTS))
    };
    for cc in env_cc() {
        for seed in seeds() {
            let r = rtt_pair(&cc, long_rtt, &net, secs, seed);
            let ratios = per_10_s(10.0, secs, |from, to| {
                format!(
                    "{:.2}",
                    r.flows[0].goodput(from, to) / r.flows[1].goodput(from, to).max(1.0)
                )
            });
            eprintln!(
                "{} seed {seed}: short / long per 10 s from 10 s {ratios} | lost short {:.4} long {:.4}",
                cc.name(),
                r.flows[0].loss_rate(),
                r.flows[1].loss_rate()
            );
        }
    }
}

/// A figure per 10 s window from `from` until `secs`, space-separated.
fn per_10_s(from: f64, secs: f64, figure: impl Fn(f64, f64) -> String) -> String {
    let windows = ((secs - from) / 10.0) as usize;
    (0..windows)
        .map(|k| figure(from + 10.0 * k as f64, from + 10.0 * k as f64 + 10.0))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Not a test: per-flow loss of fixed-rate flows (10 + 3 x 1 Mb/s) at
/// an overloaded 12 Mb/s drop-tail queue, by arrival jitter: perfectly
/// paced flows do not lose in proportion to their rates.
#[test]
#[ignore]
fn explore_droptail() {
    for jitter in [0.0, 0.0002, 0.0005, 0.001, 0.002] {
        let net = Net {
            arrival_jitter_s: jitter,
            ..Net::bottleneck(12_000.0, 64.0)
        };
        let flows: Vec<FlowSpec> = [10_000.0, 1_000.0, 1_000.0, 1_000.0]
            .iter()
            .map(|r| FlowSpec::long(CcSpec::Fixed(*r), 0.040, 0.0, 20.0))
            .collect();
        let r = simulate(&net, &flows, 1, 60.0);
        let l: Vec<String> = r.flows.iter().map(|f| format!("{:.3}", f.loss_rate())).collect();
        eprintln!("arrival jitter {:.1} ms: loss {}", jitter * 1e3, l.join(" "));
    }
}

/// Not a test: one flow alone (15 Mb/s, 30 ms, `SIM_LOSS` both ways):
/// its goodput per second until `SIM_SECS` and, with `SIM_MIS=1`, its
/// MIs (`SIM_CC`, `SIM_SEEDS`).
#[test]
#[ignore]
fn explore_alone() {
    let (loss, secs) = (env_f64("SIM_LOSS", 0.0), env_f64("SIM_SECS", 2.0));
    for cc in env_cc() {
        for seed in seeds() {
            let net = Net {
                loss,
                loss_back: loss,
                ..Net::bottleneck(15_000.0, 64.0)
            };
            let r = simulate(&net, &[FlowSpec::long(cc.clone(), 0.030, 0.0, secs)], seed, 2.0 * secs);
            let f = &r.flows[0];
            let per_s: Vec<String> = (0..secs as usize)
                .map(|t| format!("{:.1}", f.goodput(t as f64, t as f64 + 1.0) / 1000.0))
                .collect();
            eprintln!("{} seed {seed}: goodput per s (Mb/s) {}", cc.name(), per_s.join(" "));
            if std::env::var("SIM_MIS").is_err() {
                continue;
            }
            for l in r.flows[0].trace.iter().filter(|l| l.event == "mi") {
                eprintln!(
                    "  t {:7.3} MI at {:6.0} kb/s sent {:6.0} loss {:.3} -> rate {:6.0} {}",
                    l.t_s,
                    l.mi_rate_kbps.unwrap_or(0.0),
                    l.send_kbps.unwrap_or(0.0),
                    l.mi_loss,
                    l.rate_kbps,
                    l.state
                );
            }
        }
    }
}

/// Not a test: both flows' MIs from 9.5 s to 14 s of the bandwidth-change
/// scenario (`SIM_CC`, `SIM_SEEDS`).
#[test]
#[ignore]
fn explore_bandwidth_change() {
    for cc in env_cc() {
        for seed in seeds() {
            let r = bandwidth_change_run(&cc, 0.0, seed);
            let j = [
                times_to_share(&r),
                bandwidth_change(&cc, 0.0005, seed),
                bandwidth_change(&cc, 0.001, seed),
            ];
            eprintln!("{} seed {seed}: arrival jitter 0 / 0.5 / 1 ms: {j:?}", cc.name());
            if std::env::var("SIM_MIS").is_err() {
                continue;
            }
            for (i, f) in r.flows.iter().enumerate() {
                for l in f
                    .trace
                    .iter()
                    .filter(|l| l.event == "mi" && (9.5..14.0).contains(&l.t_s))
                {
                    eprintln!(
                        "  flow {i} t {:7.3} MI at {:6.0} kb/s loss {:.3} g {:7.4} scatter {:.4} n {:3} -> {:6.0} {}",
                        l.t_s,
                        l.mi_rate_kbps.unwrap_or(0.0),
                        l.mi_loss,
                        l.rtt_gradient.unwrap_or(0.0),
                        l.rtt_scatter.unwrap_or(0.0),
                        l.rtt_samples.unwrap_or(0),
                        l.rate_kbps,
                        l.state
                    );
                }
            }
        }
    }
}

/// Not a test: Vivace under heavy ACK jitter (Mininet-like RTT noise):
/// alone (15 Mb/s) and four flows (12 Mb/s), by jitter.
#[test]
#[ignore]
fn explore_noise() {
    for cc in env_cc() {
        for seed in seeds() {
            let alone_u = [0.004, 0.01, 0.02].map(|j| alone(&cc, 0.0, j, seed));
            let four = [0.004, 0.01].map(|j| {
                let net = Net {
                    ack_jitter_s: j,
                    ..Net::bottleneck(12_000.0, 64.0)
                };
                let r = four_flows_on(&net, &cc, 30.0, seed);
                (r.jain(20.0, 30.0), r.utilisation(20.0, 30.0, 12_000.0))
            });
            eprintln!(
                "{} seed {seed}: alone, ACK jitter 4/10/20 ms: {:.2} {:.2} {:.2} | four flows, 4/10 ms: Jain {:.2} {:.2} util {:.2} {:.2}",
                cc.name(),
                alone_u[0],
                alone_u[1],
                alone_u[2],
                four[0].0,
                four[1].0,
                four[0].1,
                four[1].1
            );
        }
    }
}

/// Not a test: the lossy experiment as Mininet runs it (`lossy`: 20 s,
/// data packets lost, goodput over 10-20 s) at 0, 1, 2 and 5% loss
/// (`SIM_LOSSES=0,0.05` for others), per scheme (`SIM_CC`) and seed
/// (`SIM_SEEDS`), and the mean over the seeds; on stdout, one JSON line per
/// scheme, seed and loss (what the ns-3 engine's cross-check,
/// `topo/ns3/tests/test_cross_check.py`, compares its runs with).
#[test]
#[ignore]
fn explore_lossy() {
    let losses: Vec<f64> = std::env::var("SIM_LOSSES")
        .map(|s| s.split(',').filter_map(|l| l.parse().ok()).collect())
        .unwrap_or_else(|_| vec![0.0, 0.01, 0.02, 0.05]);
    let label = losses
        .iter()
        .map(|l| format!("{}", l * 100.0))
        .collect::<Vec<_>>()
        .join("/");
    for cc in env_cc() {
        let seeds = seeds();
        let mut mean = vec![0.0; losses.len()];
        for &seed in &seeds {
            let u: Vec<f64> = losses.iter().map(|&l| lossy(&cc, l, seed)).collect();
            for (m, v) in mean.iter_mut().zip(&u) {
                *m += v / seeds.len() as f64;
            }
            for (loss, share) in losses.iter().zip(&u) {
                println!("{}", serde_json::json!({"cc": cc.name(), "seed": seed, "loss": loss, "share": share}));
            }
            let u: Vec<String> = u.iter().map(|v| format!("{v:.2}")).collect();
            eprintln!("{:18} seed {seed:2}: {label}% {}", cc.name(), u.join(" "));
        }
        let m: Vec<String> = mean.iter().map(|v| format!("{v:.2}")).collect();
        eprintln!("{:18} mean   : {label}% {}", cc.name(), m.join(" "));
    }
}

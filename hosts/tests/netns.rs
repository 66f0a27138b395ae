//! Byte-exact delivery of every scheme over an impaired link between two
//! network namespaces made by the test: 20 Mb/s, 10 ms one-way delay, 25%
//! reordering, and 0, 1, 5 or 10% random loss in both directions (so SYNs,
//! ACKs and FINs are lost too).
//!
//! The link is a veth pair with `netem` (delay, loss, reorder) and `tbf`
//! (rate) when the kernel has `sch_netem`; otherwise (as on the project's
//! CI VMs) two TUN devices joined by `p4rcp-linkem`, which emulates the
//! same link in user space. `P4RCP_LINK=linkem` forces the latter.
//!
//! Needs root and iproute2; without them every test prints SKIPPED and
//! passes. Namespaces are named after the process id and removed on drop,
//! also when a test panics.

mod common;

use common::*;
use std::process::{Command, Stdio};

/// Two namespaces (`<name>a` sender side, `<name>b` receiver side), the
/// link between them and a receiver; all torn down on drop.
struct Bed {
    ns_a: String,
    ns_b: String,
    procs: Vec<Proc>,
    pub recv_out: String,
    pub kind: &'static str,
    _dir: TempDir,
}

impl Drop for Bed {
    fn drop(&mut self) {
        for p in self.procs.iter_mut() {
            p.terminate(2.0);
        }
        for ns in [&self.ns_a, &self.ns_b] {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stderr(Stdio::null())
                .status();
        }
    }
}

fn sh(args: &[&str]) -> Result<(), String> {
    let o = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{args:?}: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!("{args:?}: {}", String::from_utf8_lossy(&o.stderr).trim()))
    }
}

fn skip(why: &str) -> Option<Bed> {
    // written to fd 2 directly so that the test harness does not capture it
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr().lock(),
        "SKIPPED: this test needs root and ip netns ({why})"
    );
    None
}

fn netem_available(ns: &str) -> bool {
    if std::env::var("P4RCP_LINK").as_deref() == Ok("linkem") {
        return false;
    }
    let ok = sh(&[
        "ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms",
    ])
    .is_ok();
    if ok {
        let _ = sh(&["ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", "lo", "root"]);
    }
    ok
}

fn setup(tag: &str, loss_pct: f64, reorder_pct: f64) -> Option<Bed> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return skip("not root");
    }
    let name = format!("p4h{}{tag}", std::process::id());
    let (ns_a, ns_b) = (format!("{name}a"), format!("{name}b"));
    if let Err(e) = sh(&["ip", "netns", "add", &ns_a]) {
        return skip(&e);
    }
    let mut bed = Bed {
        ns_a: ns_a.clone(),
        ns_b: ns_b.clone(),
        procs: Vec::new(),
        recv_out: String::new(),
        kind: "",
        _dir: TempDir::new(tag),
    };
    let r = (|| -> Result<(), String> {
        sh(&["ip", "netns", "add", &ns_b])?;
        for ns in [&ns_a, &ns_b] {
            sh(&["ip", "-n", ns, "link", "set", "lo", "up"])?;
        }
        let loss = format!("{loss_pct}%");
        if netem_available(&ns_a) {
            bed.kind = "veth+netem+tbf";
            sh(&[
                "ip", "link", "add", "p4ha", "netns", &ns_a, "type", "veth", "peer", "name", "p4hb", "netns", &ns_b,
            ])?;
            for (ns, dev, addr) in [(&ns_a, "p4ha", "10.201.0.1/24"), (&ns_b, "p4hb", "10.201.0.2/24")] {
                sh(&["ip", "-n", ns, "addr", "add", addr, "dev", dev])?;
                sh(&["ip", "-n", ns, "link", "set", dev, "up"])?;
            }
            let reorder = format!("{reorder_pct}%");
            sh(&[
                "tc", "-n", &ns_a, "qdisc", "add", "dev", "p4ha", "root", "handle", "1:", "netem", "delay", "10ms",
                "loss", &loss, "reorder", &reorder, "50%",
            ])?;
            sh(&[
                "tc", "-n", &ns_a, "qdisc", "add", "dev", "p4ha", "parent", "1:", "handle", "2:", "tbf", "rate",
                "20mbit", "burst", "32kbit", "limit", "75000",
            ])?;
            sh(&[
                "tc", "-n", &ns_b, "qdisc", "add", "dev", "p4hb", "root", "netem", "delay", "10ms", "loss", &loss,
            ])?;
        } else {
            bed.kind = "tun+linkem";
            for (ns, addr) in [(&ns_a, "10.201.0.1/24"), (&ns_b, "10.201.0.2/24")] {
                sh(&["ip", "-n", ns, "tuntap", "add", "dev", "p4ht", "mode", "tun"])?;
                sh(&["ip", "-n", ns, "addr", "add", addr, "dev", "p4ht"])?;
                sh(&["ip", "-n", ns, "link", "set", "p4ht", "up"])?;
            }
            let (l, ro) = (loss_pct.to_string(), reorder_pct.to_string());
            bed.procs.push(Proc::spawn(
                Command::new(linkem_bin())
                    .args(["--ns-a", &ns_a, "--dev-a", "p4ht", "--ns-b", &ns_b, "--dev-b", "p4ht"])
                    .args(["--delay", "10ms", "--loss", &l, "--loss-back", &l, "--reorder", &ro])
                    .args(["--rate", "20mbit", "--limit", "75k"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped()),
            ));
        }
        bed.recv_out = bed._dir.file("recv.jsonl");
        bed.procs.push(Proc::spawn(
            Command::new("ip")
                .args(["netns", "exec", &ns_b, bin(), "recv", "--out", &bed.recv_out])
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
        ));
        std::thread::sleep(std::time::Duration::from_millis(300));
        Ok(())
    })();
    match r {
        Ok(()) => {
            eprintln!("link: {} ({}% loss, {}% reordering)", bed.kind, loss_pct, reorder_pct);
            Some(bed)
        }
        Err(e) => panic!("setting up the test bed failed: {e}"),
    }
}

const SIZE: u64 = 200_000;

/// All schemes at once over the bed; every byte must arrive exactly once.
fn delivery(tag: &str, loss_pct: f64) {
    let Some(bed) = setup(tag, loss_pct, 25.0) else { return };
    let base: u64 = 5000;
    let schemes: Vec<&str> = RATE_SCHEMES.into_iter().chain(["fixed:5mbit", "tcp"]).collect();
    let flows: Vec<_> = schemes
        .iter()
        .enumerate()
        .map(|(i, cc)| {
            let mut cmd = Command::new("ip");
            cmd.args(["netns", "exec", &bed.ns_a, bin(), "send", "--to", "10.201.0.2"])
                .args([
                    "--size",
                    &SIZE.to_string(),
                    "--cc",
                    cc,
                    "--flow-id",
                    &(base + i as u64).to_string(),
                ])
                // rcp has no router here: it sends at what it asks for
                .args(["--max-rate", if *cc == "rcp" { "8mbit" } else { "100mbit" }])
                .args(["--min-rate", "500kbit", "--timeout", "150"]);
            let cc = cc.to_string();
            std::thread::spawn(move || (cc, run_with_timeout(&mut cmd, 200.0)))
        })
        .collect();
    let mut ids = Vec::new();
    for h in flows {
        let (cc, o) = h.join().unwrap_or_else(|_| panic!("sender thread panicked"));
        let recs = json_lines(&String::from_utf8_lossy(&o.stdout));
        assert_eq!(recs.len(), 1, "{cc}: {}", String::from_utf8_lossy(&o.stderr));
        let r = &recs[0];
        eprintln!(
            "{cc:15} fct {:>8} s, {} retransmissions",
            r["fct_s"], r["retransmissions"]
        );
        assert!(o.status.success(), "{cc} at {loss_pct}% loss: {r}");
        assert_eq!(r["completed"], true, "{cc}: {r}");
        assert_eq!(r["verified"], true, "{cc}: {r}");
        assert_eq!(r["size_bytes"], SIZE, "{cc}: {r}");
        ids.push(r["flow_id"].as_u64().unwrap_or(0));
    }
    let rr = wait_for_lines(&bed.recv_out, schemes.len(), 20.0);
    for id in ids {
        let mine: Vec<_> = rr.iter().filter(|x| x["flow_id"].as_u64() == Some(id)).collect();
        assert_eq!(mine.len(), 1, "flow {id}: receiver records {rr:?}");
        let x = mine[0];
        assert_eq!(x["verified"], true, "{x}");
        assert_eq!(x["completed"], true, "{x}");
        assert_eq!(x["bytes_delivered"], SIZE, "{x}");
    }
}

#[test]
fn netns_every_scheme_no_loss() {
    delivery("l0", 0.0);
}

#[test]
fn netns_every_scheme_1pct_loss() {
    delivery("l1", 1.0);
}

#[test]
fn netns_every_scheme_5pct_loss() {
    delivery("l5", 5.0);
}

#[test]
fn netns_every_scheme_10pct_loss() {
    delivery("l10", 10.0);
}

/// A TCP flow with --trace writes goodput samples from TCP_INFO, as the UDP
/// schemes do, and they add up to what the flow delivered.
#[test]
fn netns_tcp_flow_samples_goodput() {
    let Some(bed) = setup("ts", 0.0, 0.0) else { return };
    let trace = bed._dir.file("trace.jsonl");
    let mut cmd = Command::new("ip");
    cmd.args([
        "netns",
        "exec",
        &bed.ns_a,
        bin(),
        "send",
        "--to",
        "10.201.0.2",
        "--cc",
        "tcp",
    ])
    .args([
        "--duration",
        "2",
        "--trace",
        &trace,
        "--sample-interval",
        "100ms",
        "--timeout",
        "30",
    ]);
    let o = run_with_timeout(&mut cmd, 60.0);
    let recs = json_lines(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(recs.len(), 1, "{}", String::from_utf8_lossy(&o.stderr));
    let r = &recs[0];
    assert_eq!(r["completed"], true, "{r}");
    let samples: Vec<_> = read_json_lines(&trace)
        .into_iter()
        .filter(|x| x["event"] == "sample")
        .collect();
    assert!(samples.len() >= 18, "{} samples in 2 s at 100 ms", samples.len());
    assert!(samples
        .iter()
        .all(|x| x["state"] == "tcp" && x["srtt_ms"].as_f64().unwrap_or(0.0) > 0.0));
    // goodput x period, summed: the bytes acknowledged while sampling
    let mut acked_bits = 0.0;
    let mut last_t = 0.0;
    for x in &samples {
        let t = x["t_s"].as_f64().unwrap_or(0.0);
        acked_bits += x["goodput_kbps"].as_f64().unwrap_or(0.0) * 1000.0 * (t - last_t);
        last_t = t;
    }
    let size_bits = r["size_bytes"].as_f64().unwrap_or(0.0) * 8.0;
    eprintln!(
        "samples {}, acked while sampling {acked_bits:.0} of {size_bits:.0} bits",
        samples.len()
    );
    assert!(
        acked_bits > 0.7 * size_bits && acked_bits <= 1.01 * size_bits,
        "samples account for {acked_bits:.0} of {size_bits:.0} bits"
    );
}

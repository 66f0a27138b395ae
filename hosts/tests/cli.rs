//! Integration tests that need no privileges: the command line, every
//! scheme over loopback, `traffic`, and a receiver fed garbage.

mod common;

use common::*;
use std::net::UdpSocket;
use std::process::{Command, Stdio};

fn recv(port: u16, out: &str) -> Proc {
    Proc::spawn(
        Command::new(bin())
            .args([
                "recv",
                "--bind",
                &format!("127.0.0.1:{port}"),
                "--tcp-port",
                &(port + 1).to_string(),
            ])
            .args(["--out", out])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
}

/// A receiver on a free local port, given time to bind: (port, its records file, the process).
fn local_receiver(dir: &TempDir) -> (u16, String, Proc) {
    let port = free_port();
    let rout = dir.file("recv.jsonl");
    let r = recv(port, &rout);
    std::thread::sleep(std::time::Duration::from_millis(300));
    (port, rout, r)
}

/// `send` to the local receiver on `port` (TCP on `port + 1`).
fn send_to_local(port: u16) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args([
        "send",
        "--to",
        &format!("127.0.0.1:{port}"),
        "--tcp-port",
        &(port + 1).to_string(),
    ]);
    cmd
}

fn fails_with(args: &[&str], needle: &str) {
    command_fails_with(Command::new(bin()).args(args), needle);
}

fn command_fails_with(cmd: &mut Command, needle: &str) {
    let o = run_with_timeout(cmd, 20.0);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{cmd:?} should fail");
    assert!(
        err.contains(needle),
        "{cmd:?}: stderr does not mention {needle:?}:\n{err}"
    );
}

#[test]
fn bad_arguments_fail_clearly() {
    fails_with(
        &["send", "--to", "127.0.0.1", "--size", "1000", "--cc", "bogus"],
        "unknown --cc",
    );
    fails_with(
        &["send", "--to", "127.0.0.1", "--size", "1000", "--cc", "fixed"],
        "fixed needs a rate",
    );
    fails_with(
        &[
            "send",
            "--to",
            "127.0.0.1",
            "--size",
            "1000",
            "--cc",
            "rcp",
            "--max-rate",
            "15",
        ],
        "needs a unit",
    );
    fails_with(&["send", "--to", "127.0.0.1", "--cc", "rcp"], "--size");
    fails_with(
        &["send", "--to", "127.0.0.1", "--size", "12q", "--cc", "rcp"],
        "unknown size unit",
    );
    fails_with(
        &["send", "--to", "not an address", "--size", "1k", "--cc", "rcp"],
        "bad address",
    );
    command_fails_with(
        traffic(5000, "rcp", "0.5", "10mbit", "pareto:1:25k").args(["--duration", "1"]),
        "shape must be > 1",
    );
    command_fails_with(
        traffic(5000, "rcp", "0.5", "10mbit", "cdf:/nonexistent").args(["--duration", "1"]),
        "cannot read CDF file",
    );
    fails_with(&["recv", "--bind", "300.1.1.1:5"], "bad address");
    command_fails_with(
        Command::new(linkem_bin()).args([
            "--ns-a", "x", "--dev-a", "t", "--ns-b", "y", "--dev-b", "t", "--loss", "150",
        ]),
        "percentage",
    );
}

/// p4rcp-linkem: exactly one of the TUN and Ethernet modes, else status 2.
#[test]
fn linkem_needs_exactly_one_mode() {
    for (args, needle) in [
        (vec!["--delay", "20ms"], "exactly one mode"),
        (vec!["--if-a", "e0", "--if-b", "e1", "--ns-a", "x"], "not both"),
        (vec!["--if-a", "e0"], "missing --if-b"),
        (vec!["--ns-a", "x", "--dev-a", "t"], "missing --ns-b, --dev-b"),
    ] {
        let o = run_with_timeout(Command::new(linkem_bin()).args(&args), 20.0);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: stderr does not mention {needle:?}:\n{err}"
        );
    }
}

#[test]
fn a_flow_without_receiver_gives_up_with_a_record() {
    let port = free_port();
    let o = run_with_timeout(
        Command::new(bin()).args([
            "send",
            "--to",
            &format!("127.0.0.1:{port}"),
            "--size",
            "10k",
            "--cc",
            "allegro",
            "--timeout",
            "2",
        ]),
        30.0,
    );
    assert_eq!(o.status.code(), Some(1));
    let recs = json_lines(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["completed"], false);
    assert!(recs[0]["error"].as_str().unwrap_or("").contains("SYNACK"));
}

/// Every scheme, 300 KB over loopback: byte-exact delivery, records agree.
#[test]
fn every_scheme_over_loopback() {
    let dir = TempDir::new("loopback");
    let (port, rout, mut r) = local_receiver(&dir);
    // rcp and allegro first: the trace's checks below find them as flows 1000 and 1001
    let schemes: Vec<&str> = RATE_SCHEMES.into_iter().chain(["fixed:20mbit", "tcp", "tcp:reno"]).collect();
    let trace = dir.file("trace.jsonl");
    let mut ends = std::collections::HashMap::new(); // flow id -> sender's (start, start + fct)
    for (i, cc) in schemes.iter().enumerate() {
        let o = run_with_timeout(
            send_to_local(port)
                .args([
                    "--size",
                    "300k",
                    "--cc",
                    cc,
                    "--max-rate",
                    "50mbit",
                    "--flow-id",
                    &(1000 + i).to_string(),
                ])
                .args(["--timeout", "60", "--trace", &trace]),
            90.0,
        );
        let recs = json_lines(&String::from_utf8_lossy(&o.stdout));
        assert!(o.status.success(), "{cc}: {}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(recs.len(), 1);
        let rec = &recs[0];
        assert_eq!(rec["completed"], true, "{cc}: {rec}");
        assert_eq!(rec["verified"], true, "{cc}: {rec}");
        assert_eq!(rec["size_bytes"], 300_000);
        assert_eq!(rec["flow_id"], 1000 + i);
        assert!(rec["fct_s"].as_f64().unwrap_or(0.0) > 0.0);
        let start = rec["start_unix_s"].as_f64().unwrap_or(0.0);
        ends.insert(
            rec["flow_id"].as_u64(),
            (start, start + rec["fct_s"].as_f64().unwrap_or(0.0)),
        );
        let want = if cc.starts_with("fixed") { "fixed" } else { cc };
        assert_eq!(rec["scheme"], want);
    }
    let rr = wait_for_lines(&rout, schemes.len(), 10.0);
    let stderr = r.terminate(5.0);
    assert_eq!(rr.len(), schemes.len(), "receiver records: {rr:?}");
    for x in &rr {
        assert_eq!(x["verified"], true, "{x}");
        assert_eq!(x["completed"], true, "{x}");
        assert_eq!(x["bytes_delivered"], 300_000, "{x}");
        // the last byte arrived after the sender started and before it learnt so (clocks: one machine)
        let (start, acked) = ends[&x["flow_id"].as_u64()];
        let last = x["last_byte_unix_s"].as_f64().unwrap_or(0.0);
        assert!(start < last && last <= acked + 1e-3, "{x}: sender {start}..{acked}");
    }
    assert!(stderr.contains("recv_stats"), "{stderr}");
    // the trace has rate lines of the UDP flows
    let t = read_json_lines(&trace);
    assert!(t.iter().any(|l| l["event"] == "rate" && l["flow_id"] == 1000));
    assert!(t.iter().any(|l| l["event"] == "mi" && l["flow_id"] == 1001));
}

/// Garbage and foreign datagrams are counted and dropped; the receiver
/// keeps serving.
#[test]
fn receiver_survives_garbage() {
    let dir = TempDir::new("garbage");
    let (port, rout, mut r) = local_receiver(&dir);
    let s = UdpSocket::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let dst = format!("127.0.0.1:{port}");
    let mut seed: u64 = 12345;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut sent = 0;
    for i in 0..3000 {
        let len = (next() % 120) as usize;
        let mut b: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if i % 3 == 0 && !b.is_empty() {
            b[0] = 0x10 | (b[0] & 0x0f); // version 1, any type
        }
        if s.send_to(&b, &dst).is_ok() {
            sent += 1;
        }
    }
    // an ACK (a type receivers do not take) and a DATA for no flow
    let mut ack = vec![0x11u8];
    ack.extend_from_slice(&[0u8; 43]);
    let _ = s.send_to(&ack, &dst);
    let o = run_with_timeout(
        Command::new(bin()).args([
            "send",
            "--to",
            &dst,
            "--size",
            "100k",
            "--cc",
            "vivace",
            "--tcp-port",
            "1",
        ]),
        60.0,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rr = wait_for_lines(&rout, 1, 10.0);
    let stderr = r.terminate(5.0);
    assert_eq!(rr.len(), 1);
    assert_eq!(rr[0]["verified"], true);
    let stats = json_lines(&stderr)
        .into_iter()
        .find(|v| v["event"] == "recv_stats")
        .unwrap_or_default();
    let malformed: u64 = stats["stats"]["malformed"]
        .as_object()
        .map(|m| m.values().filter_map(|v| v.as_u64()).sum())
        .unwrap_or(0);
    let unexpected = stats["stats"]["unexpected"].as_u64().unwrap_or(0);
    assert!(malformed + unexpected >= sent as u64 - 5, "{sent} sent, stats {stats}");
    assert!(malformed > 2000, "{stats}");
}

#[test]
fn traffic_runs_poisson_flows_and_exits() {
    let dir = TempDir::new("traffic");
    let (port, _, mut r) = local_receiver(&dir);
    for cc in ["vivace-loss", "tcp"] {
        let out = dir.file(&format!("{cc}.jsonl"));
        let o = run_with_timeout(
            traffic(port, cc, "0.5", "20mbit", "exp:20k").args([
                "--duration",
                "2",
                "--seed",
                "7",
                "--max-rate",
                "40mbit",
                "--out",
                &out,
            ]),
            90.0,
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let recs = read_json_lines(&out);
        // 0.5 * 20e6 / (20000 * 1.078 * 8) = 57.98 flows/s: about 116 in 2 s
        assert!(recs.len() > 60 && recs.len() < 200, "{cc}: {} flows", recs.len());
        assert!(
            recs.iter().all(|x| x["completed"] == true && x["verified"] == true),
            "{cc}"
        );
        let idx: Vec<u64> = recs.iter().filter_map(|x| x["index"].as_u64()).collect();
        assert_eq!(idx.len(), recs.len());
    }
    r.terminate(5.0);
}

/// `traffic` to a local receiver on `port` (TCP on `port + 1`).
fn traffic(port: u16, cc: &str, load: &str, capacity: &str, sizes: &str) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args([
        "traffic",
        "--to",
        &format!("127.0.0.1:{port}"),
        "--tcp-port",
        &(port + 1).to_string(),
    ])
    .args(["--cc", cc, "--load", load, "--capacity", capacity, "--sizes", sizes]);
    cmd
}

/// The same seed gives the same flow sizes for every scheme.
#[test]
fn traffic_sizes_do_not_depend_on_the_scheme() {
    let dir = TempDir::new("seed");
    let (port, _, mut r) = local_receiver(&dir);
    let mut sizes = Vec::new();
    for cc in ["fixed:50mbit", "tcp"] {
        let out = dir.file(&format!("s-{}.jsonl", cc.replace(':', "_")));
        let o = run_with_timeout(
            traffic(port, cc, "0.3", "50mbit", "pareto:1.5:30k").args([
                "--duration",
                "1",
                "--seed",
                "99",
                "--out",
                &out,
            ]),
            90.0,
        );
        assert!(o.status.success());
        let mut v: Vec<(u64, u64)> = read_json_lines(&out)
            .iter()
            .map(|x| (x["index"].as_u64().unwrap_or(0), x["size_bytes"].as_u64().unwrap_or(0)))
            .collect();
        v.sort();
        sizes.push(v);
    }
    r.terminate(5.0);
    assert!(!sizes[0].is_empty());
    assert_eq!(sizes[0], sizes[1]);
}

#[test]
fn open_ended_flows_have_the_receivers_last_byte_time() {
    let dir = TempDir::new("open");
    let (port, rout, mut r) = local_receiver(&dir);
    let mut ends = std::collections::HashMap::new(); // flow id -> sender's (start, start + fct)
    for (i, cc) in ["fixed:20mbit", "tcp"].iter().enumerate() {
        let o = run_with_timeout(
            send_to_local(port).args(["--duration", "0.5", "--cc", cc, "--flow-id", &(2000 + i).to_string()]),
            60.0,
        );
        assert!(o.status.success(), "{cc}: {}", String::from_utf8_lossy(&o.stderr));
        let recs = json_lines(&String::from_utf8_lossy(&o.stdout));
        let start = recs[0]["start_unix_s"].as_f64().unwrap_or(0.0);
        ends.insert(
            recs[0]["flow_id"].as_u64(),
            (start, start + recs[0]["fct_s"].as_f64().unwrap_or(0.0)),
        );
    }
    let rr = wait_for_lines(&rout, 2, 10.0);
    r.terminate(5.0);
    assert_eq!(rr.len(), 2, "receiver records: {rr:?}");
    for x in &rr {
        assert_eq!(x["completed"], true, "{x}");
        let (start, acked) = ends[&x["flow_id"].as_u64()];
        let last = x["last_byte_unix_s"].as_f64().unwrap_or(0.0);
        assert!(
            start + 0.4 < last && last <= acked + 1e-3,
            "{x}: sender {start}..{acked}"
        );
    }
}

/// `--check` refused `cmd` as a start does: status 2, nothing on stdout,
/// one line on stderr naming `needle`. Returns that line.
fn check_refuses(cmd: &mut Command, needle: &str) -> String {
    let o = run_with_timeout(cmd, 20.0);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{cmd:?}: {err}");
    assert!(o.stdout.is_empty(), "{cmd:?}");
    assert_eq!(err.lines().count(), 1, "{cmd:?}: not one line:\n{err}");
    assert!(err.contains(needle), "{cmd:?}: {err:?} does not mention {needle:?}");
    err
}

/// `--check` accepted `cmd`: status 0, nothing printed.
fn check_accepts(cmd: &mut Command) {
    let o = run_with_timeout(cmd, 20.0);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{cmd:?} printed something");
}

/// The Python runner's `traffic` command (it checks it before it builds a
/// network), with `extra` arguments (`--check`).
fn runner_traffic(sizes: &str, out: &str, extra: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.arg("traffic")
        .args(extra)
        .args([
            "--to",
            "10.0.0.2",
            "--cc",
            "rcp",
            "--load",
            "0.45",
            "--capacity",
            "15000kbit",
        ])
        .args(["--sizes", sizes, "--duration", "15", "--seed", "1000", "--out", out]);
    cmd
}

#[test]
fn check_refuses_a_bad_pareto_shape_with_the_start_s_message() {
    let dir = TempDir::new("check-shape");
    let out = dir.file("x.jsonl");
    let line = check_refuses(
        &mut runner_traffic("pareto:0.5:25000", &out, &["--check"]),
        "Pareto shape must be > 1",
    );
    assert!(line.starts_with("p4rcp-host: "), "{line}");
    // a real start refuses it with the very same line
    let o = run_with_timeout(&mut runner_traffic("pareto:0.5:25000", &out, &[]), 20.0);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&o.stderr), line);
    assert!(!std::path::Path::new(&out).exists());
}

#[test]
fn check_refuses_what_a_start_refuses() {
    let send_to = |to: &str, args: &[&str]| {
        let mut cmd = Command::new(bin());
        cmd.args(["send", "--check", "--to", to, "--size", "1k"]).args(args);
        cmd
    };
    let send = |args: &[&str]| send_to("10.0.0.2", args);
    check_refuses(&mut send(&["--cc", "bogus"]), "unknown --cc");
    check_refuses(&mut send(&["--cc", "fixed"]), "fixed needs a rate");
    check_refuses(&mut send(&["--cc", "rcp", "--max-rate", "15"]), "needs a unit");
    check_refuses(&mut send(&["--cc", "rcp", "--timeout", "soon"]), "bad duration");
    check_refuses(&mut send(&["--cc", "rcp", "--bind", "not an address"]), "bad address");
    check_refuses(&mut send_to("300.1.1.1", &["--cc", "tcp"]), "bad address");
    let dir = TempDir::new("check-refuses");
    let out = dir.file("x.jsonl");
    // what traffic::Workload::new and the size parser reject
    check_refuses(
        Command::new(bin())
            .args(["traffic", "--check", "--to", "10.0.0.2", "--cc", "rcp", "--load", "0"])
            .args(["--capacity", "15mbit", "--sizes", "exp:25k", "--duration", "15"]),
        "--load must be > 0",
    );
    check_refuses(
        &mut runner_traffic("cdf:/nonexistent", &out, &["--check"]),
        "cannot read CDF file",
    );
    check_refuses(
        &mut runner_traffic("fixed:0", &out, &["--check"]),
        "fixed size must be > 0",
    );
    check_refuses(
        &mut runner_traffic("fixed:1000", &out, &["--check", "--load-unit", "packets"]),
        "invalid value 'packets' for '--load-unit",
    );
    check_refuses(
        Command::new(bin()).args(["recv", "--check", "--idle-timeout", "5furlongs"]),
        "unknown duration unit",
    );
    check_refuses(
        Command::new(linkem_bin()).args(["--check", "--if-a", "e0", "--if-b", "e1", "--loss", "150"]),
        "percentage",
    );
    check_refuses(
        Command::new(linkem_bin()).args(["--check", "--if-a", "e0"]),
        "missing --if-b",
    );
    assert!(!std::path::Path::new(&out).exists());
}

/// A good command: status 0, nothing printed, no file created, no socket
/// or device opened (the address is in use, the interfaces do not exist).
#[test]
fn check_accepts_a_good_command_and_starts_nothing() {
    let dir = TempDir::new("check-good");
    let (out, trace, stats) = (dir.file("out.jsonl"), dir.file("trace.jsonl"), dir.file("stats.json"));
    check_accepts(&mut runner_traffic(
        "pareto:1.2:25000",
        &out,
        &["--check", "--trace", &trace],
    ));
    // a bounded Pareto takes any shape > 0
    check_accepts(&mut runner_traffic("pareto:0.5:25000:1000000", &out, &["--check"]));
    for cc in ["vivace", "tcp:bbr"] {
        check_accepts(
            Command::new(bin())
                .args(["send", "--check", "--to", "10.0.0.2:7000", "--cc", cc])
                .args(["--duration", "30", "--flows", "4", "--out", &out, "--trace", &trace]),
        );
    }
    let busy = UdpSocket::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let busy = busy.local_addr().map(|a| a.to_string()).unwrap_or_default();
    check_accepts(Command::new(bin()).args(["recv", "--check", "--bind", &busy, "--out", &out]));
    check_accepts(
        Command::new(linkem_bin())
            .args(["--check", "--if-a", "p4rcp-no-if0", "--if-b", "p4rcp-no-if1"])
            .args(["--delay", "20ms", "--loss", "1", "--rate", "15mbit", "--stats", &stats]),
    );
    for f in [&out, &trace, &stats] {
        assert!(!std::path::Path::new(f).exists(), "{f} was created");
    }
    // the same receiver without --check cannot start: the address is taken
    command_fails_with(Command::new(bin()).args(["recv", "--bind", &busy]), "cannot bind UDP");
}

/// `traffic --plan`: the flows a run would start, one JSON line each, the same for the same seed, as many
/// as the traffic_plan line of a real start announces; --exact-load offers the nominal load.
#[test]
fn traffic_plan_lists_the_flows_a_start_would_run() {
    let dir = TempDir::new("plan");
    let out = dir.file("flows.jsonl");
    let plan = |extra: &[&str]| {
        let mut cmd = runner_traffic("pareto:1.2:25000:1000000", &out, extra);
        cmd.arg("--plan");
        let o = run_with_timeout(&mut cmd, 20.0);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let first = plan(&[]);
    assert_eq!(first, plan(&[]), "same seed, same plan");
    let lines: Vec<serde_json::Value> = first.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!lines.is_empty());
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(line["index"], i);
        assert!(line["size_bytes"].as_u64().unwrap() <= 1_000_000);
    }
    assert!(!std::path::Path::new(&out).exists(), "--plan opens no output");
    let exact = plan(&["--exact-load"]);
    assert_ne!(exact, first, "the exact load scales the arrival times");
}

//! `p4rcp-linkem --if-a --if-b` (Ethernet mode) between two veth
//! ends in a "box" namespace, as in the Mininet experiments:
//!
//! ```text
//! ns1: x1 10.99.0.1/24 ==veth== box: e0 [linkem] e1 ==veth== ns2: x2 10.99.0.2/24
//! ```
//!
//! Checks ping through the box (RTT = 2 x 20 ms), a verified fixed-rate flow,
//! a verified flow at 10% loss, and that checksums left to offload by the
//! sender are completed by the box. Needs root and iproute2 (ICMP echo is
//! sent by the test itself, no `ping` binary needed); without
//! root every test prints SKIPPED and passes. Namespaces are named after the
//! process id and the test, and removed on drop (also when a test panics).

mod common;

use common::*;
use std::process::{Command, Stdio};
use std::time::Duration;

/// ns1, the box and ns2, with linkem and a receiver running; all torn
/// down on drop.
struct Bed {
    ns1: String,
    ns2: String,
    nsbox: String,
    linkem: Proc,
    recv: Proc,
    stats: String,
    recv_out: String,
    dir: TempDir,
}

impl Drop for Bed {
    fn drop(&mut self) {
        self.recv.terminate(2.0);
        self.linkem.terminate(2.0);
        for ns in [&self.ns1, &self.nsbox, &self.ns2] {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stderr(Stdio::null())
                .status();
        }
    }
}

fn sh(args: &[&str]) -> Result<String, String> {
    let o = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{args:?}: {e}"))?;
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    } else {
        Err(format!("{args:?}: {}", String::from_utf8_lossy(&o.stderr).trim()))
    }
}

fn skip(why: &str) {
    // written to fd 2 directly so that the test harness does not capture it
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr().lock(),
        "SKIPPED: this test needs root and ip netns ({why})"
    );
}

/// `host_offload`: leave checksum offload on for h1's x1 (the kernel
/// leaves UDP checksums to the "NIC", i.e. to linkem).
fn setup(tag: &str, linkem_args: &[&str], host_offload: bool) -> Option<Bed> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        skip("not root");
        return None;
    }
    let name = format!("p4e{}{tag}", std::process::id());
    let (ns1, ns2, nsbox) = (format!("{name}h1"), format!("{name}h2"), format!("{name}box"));
    if let Err(e) = sh(&["ip", "netns", "add", &ns1]) {
        skip(&e);
        return None;
    }
    let dir = TempDir::new(&format!("eth{tag}"));
    let mut bed = Bed {
        ns1: ns1.clone(),
        ns2: ns2.clone(),
        nsbox: nsbox.clone(),
        linkem: Proc(None),
        recv: Proc(None),
        stats: dir.file("linkem.json"),
        recv_out: dir.file("recv.jsonl"),
        dir,
    };
    let r = (|| -> Result<(), String> {
        sh(&["ip", "netns", "add", &nsbox])?;
        sh(&["ip", "netns", "add", &ns2])?;
        // created directly inside the namespaces: fixed names do not clash
        sh(&[
            "ip", "link", "add", "x1", "netns", &ns1, "type", "veth", "peer", "name", "e0", "netns", &nsbox,
        ])?;
        sh(&[
            "ip", "link", "add", "x2", "netns", &ns2, "type", "veth", "peer", "name", "e1", "netns", &nsbox,
        ])?;
        let have_ethtool = sh(&["ethtool", "--version"]).is_ok();
        for (ns, dev, addr) in [
            (&ns1, "x1", Some("10.99.0.1/24")),
            (&nsbox, "e0", None),
            (&nsbox, "e1", None),
            (&ns2, "x2", Some("10.99.0.2/24")),
        ] {
            // the kernel, not the NIC, computes checksums: no partial ones
            // reach the box
            if have_ethtool && !(host_offload && dev == "x1") {
                sh(&[
                    "ip",
                    "netns",
                    "exec",
                    ns,
                    "ethtool",
                    "--offload",
                    dev,
                    "rx",
                    "off",
                    "tx",
                    "off",
                ])?;
            }
            let _ = sh(&[
                "ip",
                "netns",
                "exec",
                ns,
                "sysctl",
                "-qw",
                &format!("net.ipv6.conf.{dev}.disable_ipv6=1"),
            ]);
            if let Some(a) = addr {
                sh(&["ip", "-n", ns, "addr", "add", a, "dev", dev])?;
            }
            sh(&["ip", "-n", ns, "link", "set", dev, "up"])?;
        }
        for ns in [&ns1, &ns2] {
            sh(&["ip", "-n", ns, "link", "set", "lo", "up"])?;
        }
        bed.linkem = Proc::spawn(
            Command::new("ip")
                .args(["netns", "exec", &nsbox, linkem_bin(), "--if-a", "e0", "--if-b", "e1"])
                .args(linkem_args)
                .args(["--stats", &bed.stats])
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
        );
        bed.recv = Proc::spawn(
            Command::new("ip")
                .args(["netns", "exec", &ns2, bin(), "recv", "--out", &bed.recv_out])
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
        );
        std::thread::sleep(Duration::from_millis(300));
        Ok(())
    })();
    if let Err(e) = r {
        panic!("setting up the test bed failed: {e}");
    }
    Some(bed)
}

/// A fixed-rate flow ns1 -> ns2 through the box; asserts that sender and
/// receiver both verified every byte.
fn flow(bed: &Bed, flow_id: u32) {
    let o = run_with_timeout(
        Command::new("ip")
            .args(["netns", "exec", &bed.ns1, bin(), "send", "--to", "10.99.0.2"])
            .args(["--cc", "fixed:5mbit", "--size", "200000", "--timeout", "30"])
            .args(["--flow-id", &flow_id.to_string()]),
        45.0,
    );
    let recs = json_lines(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(recs.len(), 1, "sender: {}", String::from_utf8_lossy(&o.stderr));
    let r = &recs[0];
    eprintln!("flow: fct {} s, {} retransmissions", r["fct_s"], r["retransmissions"]);
    assert!(o.status.success(), "sender failed: {r}");
    assert_eq!(r["completed"], true, "{r}");
    assert_eq!(r["verified"], true, "{r}");
    let rr = wait_for_lines(&bed.recv_out, 1, 10.0);
    let mine: Vec<_> = rr
        .iter()
        .filter(|x| x["flow_id"].as_u64() == Some(flow_id as u64))
        .collect();
    assert_eq!(mine.len(), 1, "receiver records: {rr:?}");
    assert_eq!(mine[0]["verified"], true, "{}", mine[0]);
    assert_eq!(mine[0]["bytes_delivered"], 200_000, "{}", mine[0]);
}

/// SIGTERM linkem; it must exit by itself and report its counters.
fn linkem_stats(bed: &mut Bed) -> serde_json::Value {
    let err = bed.linkem.terminate(3.0);
    let v = read_json_lines(&bed.stats);
    assert_eq!(
        v.len(),
        1,
        "linkem wrote no --stats (did it exit on SIGTERM?); stderr:\n{err}"
    );
    assert!(err.contains("linkem_stats"), "no counters on stderr:\n{err}");
    eprintln!("{}", v[0]);
    let _ = &bed.dir;
    v[0].clone()
}

/// `count` ICMP echo requests from namespace `ns` to `dst`, 200 ms apart;
/// the RTT of each in ms (None: no reply within 2 s). A raw socket in a
/// thread that entered `ns`, so that the test needs no `ping` binary.
fn ping(ns: &str, dst: [u8; 4], count: u16) -> Vec<Option<f64>> {
    let path = format!("/var/run/netns/{ns}");
    std::thread::spawn(move || {
        use std::os::fd::AsRawFd;
        use std::time::Instant;
        let nsf = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // SAFETY: setns on an open namespace file; this thread only.
        assert_eq!(unsafe { libc::setns(nsf.as_raw_fd(), libc::CLONE_NEWNET) }, 0, "setns");
        // SAFETY: plain socket(2); closed below.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::IPPROTO_ICMP) };
        assert!(fd >= 0, "raw ICMP socket: {}", std::io::Error::last_os_error());
        // SAFETY: zero is a valid sockaddr_in.
        let mut sin: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        sin.sin_family = libc::AF_INET as libc::sa_family_t;
        sin.sin_addr.s_addr = u32::from_be_bytes(dst).to_be();
        let id = (std::process::id() as u16) ^ 0x5a5a;
        let mut rtts = Vec::new();
        for seq in 0..count {
            let mut pkt = vec![8u8, 0, 0, 0];
            pkt.extend_from_slice(&id.to_be_bytes());
            pkt.extend_from_slice(&seq.to_be_bytes());
            pkt.extend((0..56).map(|i| i as u8));
            let mut sum: u32 = pkt.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]]) as u32).sum();
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            pkt[2..4].copy_from_slice(&(!(sum as u16)).to_be_bytes());
            let t0 = Instant::now();
            // SAFETY: sending a live buffer to a sockaddr_in.
            let r = unsafe {
                libc::sendto(
                    fd,
                    pkt.as_ptr() as *const libc::c_void,
                    pkt.len(),
                    0,
                    &sin as *const libc::sockaddr_in as *const libc::sockaddr,
                    std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                )
            };
            assert_eq!(r, pkt.len() as isize, "sendto: {}", std::io::Error::last_os_error());
            let mut got = None;
            let mut buf = [0u8; 2048];
            while t0.elapsed() < Duration::from_secs(2) {
                let left = Duration::from_secs(2).saturating_sub(t0.elapsed());
                let mut pfd = libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one pollfd.
                if unsafe { libc::poll(&mut pfd, 1, left.as_millis() as i32 + 1) } <= 0 {
                    continue;
                }
                // SAFETY: receiving into a live buffer.
                let n = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
                if n < 28 {
                    continue;
                }
                // raw ICMP sockets return the IP header too
                let icmp = &buf[((buf[0] & 0xf) as usize * 4)..n as usize];
                if icmp.len() >= 8 && icmp[0] == 0 && icmp[4..6] == id.to_be_bytes() && icmp[6..8] == seq.to_be_bytes()
                {
                    got = Some(t0.elapsed().as_secs_f64() * 1e3);
                    break;
                }
            }
            rtts.push(got);
            std::thread::sleep(Duration::from_millis(200));
        }
        // SAFETY: closing our socket.
        unsafe { libc::close(fd) };
        rtts
    })
    .join()
    .unwrap_or_else(|_| panic!("ping thread panicked"))
}

#[test]
fn ethernet_box_ping_and_flow() {
    let Some(mut bed) = setup("p", &["--delay", "20ms"], false) else {
        return;
    };
    // the first echo waits for ARP (which crosses the box too)
    let _ = ping(&bed.ns1, [10, 99, 0, 2], 1);
    let rtts = ping(&bed.ns1, [10, 99, 0, 2], 5);
    eprintln!("ping RTTs (ms): {rtts:?}");
    for r in &rtts {
        let r = r.unwrap_or_else(|| panic!("no echo reply through the box: {rtts:?}"));
        assert!((40.0..60.0).contains(&r), "RTT {r:.2} ms not in [40, 60) ms: {rtts:?}");
    }
    flow(&bed, 7001);
    let s = linkem_stats(&mut bed);
    for d in ["a_to_b", "b_to_a"] {
        assert!(s[d]["delivered"].as_u64().unwrap_or(0) > 0, "{s}");
        assert_eq!(s[d]["lost"], 0, "{s}");
        assert_eq!(s[d]["send_errors"], 0, "{s}");
        assert_eq!(s[d]["checksums_completed"], 0, "{s}");
    }
    assert!(s["a_to_b"]["delivered"].as_u64().unwrap_or(0) >= 200, "{s}");
}

#[test]
fn ethernet_box_flow_at_10pct_loss() {
    let Some(mut bed) = setup("l", &["--delay", "20ms", "--loss", "10"], false) else {
        return;
    };
    flow(&bed, 7002);
    let s = linkem_stats(&mut bed);
    let (n, lost) = (
        s["a_to_b"]["packets"].as_u64().unwrap_or(0),
        s["a_to_b"]["lost"].as_u64().unwrap_or(0),
    );
    assert!(n >= 200 && lost > 0, "{s}");
    let frac = lost as f64 / n as f64;
    assert!(
        (0.03..0.2).contains(&frac),
        "A->B loss {frac:.3}, expected about 0.10: {s}"
    );
    assert_eq!(s["b_to_a"]["lost"], 0, "{s}");
}

/// h1 keeps checksum offload on, so its UDP datagrams reach the box with a
/// partial checksum; linkem completes it, and h2 (rx offload off: its
/// kernel checks every checksum) must accept every datagram.
#[test]
fn ethernet_box_completes_offloaded_checksums() {
    if Command::new("ethtool").arg("--version").output().is_err() {
        // without ethtool the veths keep their offloads: nothing to compare
        skip("no ethtool");
        return;
    }
    let Some(mut bed) = setup("c", &["--delay", "5ms"], true) else {
        return;
    };
    flow(&bed, 7003);
    let s = linkem_stats(&mut bed);
    assert!(s["a_to_b"]["checksums_completed"].as_u64().unwrap_or(0) >= 200, "{s}");
}

/// A packet is delayed from the moment it reached the box, by the kernel's
/// receive timestamp, not from when linkem got round to reading it: while
/// linkem is stopped for 100 ms an echo request waits in the socket, and
/// once linkem runs again it is already due (50 ms delay each way), so the
/// RTT is about 100 + 50 ms, not 100 + 2 x 50 ms.
#[test]
fn ethernet_box_delays_from_the_wire_arrival() {
    let Some(mut bed) = setup("t", &["--delay", "50ms"], false) else {
        return;
    };
    let _ = ping(&bed.ns1, [10, 99, 0, 2], 1); // ARP
    let ns1 = bed.ns1.clone();
    let pid = bed.linkem.pid();
    // SAFETY: signalling our own child by pid.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let pinger = std::thread::spawn(move || ping(&ns1, [10, 99, 0, 2], 1));
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let rtts = pinger.join().expect("ping thread");
    let rtt = rtts[0].unwrap_or_else(|| panic!("no echo reply through the box"));
    eprintln!("RTT with linkem stopped for 100 ms: {rtt:.1} ms");
    assert!(
        (145.0..175.0).contains(&rtt),
        "RTT {rtt:.1} ms: expected about 150 (200 if delayed from the read)"
    );
    let _ = linkem_stats(&mut bed);
}

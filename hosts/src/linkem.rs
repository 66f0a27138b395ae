//! `linkem`: a user-space emulated link, for test beds whose kernel has no
//! `sch_netem` (this project's CI VMs ship `tbf` and `htb` but not `netem`).
//!
//! Two TUN devices, each in its own network namespace, are created by the
//! caller (`ip -n NS tuntap add dev NAME mode tun`, addresses, routes, up).
//! `linkem` attaches to both and moves IP packets between them:
//!
//! - A -> B (the data direction): random loss (`--loss`), then a drop-tail
//!   bottleneck queue served at `--rate` (frame bytes = IP length + 14, as
//!   everywhere in p4rcp) holding at most `--limit` bytes, then the one-way
//!   `--delay`; with probability `--reorder` a packet skips the delay (as
//!   netem's `reorder`), overtaking earlier ones.
//! - B -> A: `--loss-back`, then `--delay`.
//!
//! One thread, ppoll on both devices, a heap of delivery times; no spinning.

use crate::net;
use crate::units;
use clap::Args;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct LinkemArgs {
    /// Namespace of side A (the sender side) and its TUN device.
    #[arg(long)]
    ns_a: String,
    #[arg(long)]
    dev_a: String,
    /// Namespace of side B and its TUN device.
    #[arg(long)]
    ns_b: String,
    #[arg(long)]
    dev_b: String,
    /// One-way delay, each direction.
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
    /// Bottleneck queue A->B in bytes.
    #[arg(long, default_value = "75k", value_parser = units::parse_bytes)]
    limit: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

const IFNAMSIZ: usize = 16;

/// Attach to the persistent TUN device `dev` in namespace `ns`.
fn open_tun(ns: &str, dev: &str) -> io::Result<File> {
    if dev.len() >= IFNAMSIZ {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "device name too long"));
    }
    let nsf = File::open(format!("/var/run/netns/{ns}"))?;
    // SAFETY: setns on an open namespace file; affects this thread only.
    if unsafe { libc::setns(nsf.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let f = OpenOptions::new().read(true).write(true).open("/dev/net/tun")?;
    // struct ifreq: name[16], then a short of flags, padded to 40 bytes
    let mut ifr = [0u8; 40];
    ifr[..dev.len()].copy_from_slice(dev.as_bytes());
    let flags = (libc::IFF_TUN | libc::IFF_NO_PI) as i16;
    ifr[IFNAMSIZ..IFNAMSIZ + 2].copy_from_slice(&flags.to_ne_bytes());
    // SAFETY: TUNSETIFF reads/writes a 40-byte ifreq.
    if unsafe { libc::ioctl(f.as_raw_fd(), libc::TUNSETIFF, ifr.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // non-blocking reads
    // SAFETY: fcntl on a valid fd.
    unsafe {
        let fl = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(f.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
    }
    Ok(f)
}

#[derive(Default, Debug, serde::Serialize)]
struct DirStats {
    packets: u64,
    lost: u64,
    queue_drops: u64,
    reordered: u64,
    delivered: u64,
}

pub fn run(a: LinkemArgs) -> Result<ExitCode, String> {
    for (name, p) in [
        ("--loss", a.loss),
        ("--loss-back", a.loss_back),
        ("--reorder", a.reorder),
    ] {
        if !(0.0..=100.0).contains(&p) {
            return Err(format!("{name} must be a percentage in [0, 100], got {p}"));
        }
    }
    let mut ta = open_tun(&a.ns_a, &a.dev_a).map_err(|e| format!("TUN {} in {}: {e}", a.dev_a, a.ns_a))?;
    let mut tb = open_tun(&a.ns_b, &a.dev_b).map_err(|e| format!("TUN {} in {}: {e}", a.dev_b, a.ns_b))?;
    net::install_signal_handlers();
    net::tighten_timer_slack();
    let mut rng = SmallRng::seed_from_u64(a.seed);
    let t0 = Instant::now();
    let delay = a.delay.as_secs_f64();
    // pending deliveries: (time ns, sequence, to B?) -> packet
    let mut heap: BinaryHeap<Reverse<(u64, u64, bool)>> = BinaryHeap::new();
    let mut store: std::collections::HashMap<u64, Vec<u8>> = std::collections::HashMap::new();
    let mut seq = 0u64;
    // bottleneck A->B: packets waiting for the line, bytes queued, line free at
    let mut queue: VecDeque<(f64, Vec<u8>)> = VecDeque::new();
    let mut queued_bytes = 0u64;
    let mut line_free = 0.0f64;
    let mut ab = DirStats::default();
    let mut ba = DirStats::default();
    let mut buf = vec![0u8; 65_536];
    let now_s = |t0: &Instant| t0.elapsed().as_secs_f64();
    let mut pfds = [
        libc::pollfd {
            fd: ta.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: tb.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    while !net::stopping() {
        let now = now_s(&t0);
        // A -> B arrivals
        for _ in 0..256 {
            let n = match ta.read(&mut buf) {
                Ok(n) if n > 0 => n,
                _ => break,
            };
            ab.packets += 1;
            if rng.gen::<f64>() * 100.0 < a.loss {
                ab.lost += 1;
                continue;
            }
            let frame = n as u64 + 14;
            if a.rate.is_some() {
                if queued_bytes + frame > a.limit {
                    ab.queue_drops += 1;
                    continue;
                }
                queued_bytes += frame;
                queue.push_back((now, buf[..n].to_vec()));
            } else {
                let skip = rng.gen::<f64>() * 100.0 < a.reorder;
                ab.reordered += skip as u64;
                let at = now + if skip { 0.0 } else { delay };
                seq += 1;
                store.insert(seq, buf[..n].to_vec());
                heap.push(Reverse(((at * 1e9) as u64, seq, true)));
            }
        }
        // B -> A arrivals
        for _ in 0..256 {
            let n = match tb.read(&mut buf) {
                Ok(n) if n > 0 => n,
                _ => break,
            };
            ba.packets += 1;
            if rng.gen::<f64>() * 100.0 < a.loss_back {
                ba.lost += 1;
                continue;
            }
            seq += 1;
            store.insert(seq, buf[..n].to_vec());
            heap.push(Reverse((((now + delay) * 1e9) as u64, seq, false)));
        }
        // serve the bottleneck: each packet leaves the line after its
        // transmission time, then propagates
        if let Some(rate) = a.rate {
            while let Some((arrived, p)) = queue.front() {
                let frame = p.len() as f64 + 14.0;
                let done = line_free.max(*arrived) + frame * 8.0 / (rate * 1000.0);
                if done > now {
                    break;
                }
                line_free = done;
                let Some((_, p)) = queue.pop_front() else { break };
                queued_bytes -= p.len() as u64 + 14;
                let skip = rng.gen::<f64>() * 100.0 < a.reorder;
                ab.reordered += skip as u64;
                let at = done + if skip { 0.0 } else { delay };
                seq += 1;
                store.insert(seq, p);
                heap.push(Reverse(((at * 1e9) as u64, seq, true)));
            }
        }
        // deliveries that are due
        let now_ns = (now_s(&t0) * 1e9) as u64;
        while let Some(&Reverse((t, id, to_b))) = heap.peek() {
            if t > now_ns {
                break;
            }
            heap.pop();
            if let Some(p) = store.remove(&id) {
                let r = if to_b { tb.write(&p) } else { ta.write(&p) };
                if r.is_ok() {
                    if to_b {
                        ab.delivered += 1;
                    } else {
                        ba.delivered += 1;
                    }
                }
            }
        }
        // sleep until the next event
        let now = now_s(&t0);
        let mut next = now + 0.5;
        if let Some(&Reverse((t, _, _))) = heap.peek() {
            next = next.min(t as f64 / 1e9);
        }
        if let (Some(rate), Some((arrived, p))) = (a.rate, queue.front()) {
            let frame = p.len() as f64 + 14.0;
            next = next.min(line_free.max(*arrived) + frame * 8.0 / (rate * 1000.0));
        }
        let wait = (next - now).max(0.0);
        let ts = libc::timespec {
            tv_sec: wait as libc::time_t,
            tv_nsec: ((wait.fract()) * 1e9) as libc::c_long,
        };
        for p in pfds.iter_mut() {
            p.revents = 0;
        }
        // SAFETY: two valid pollfds and a timespec.
        unsafe {
            libc::ppoll(pfds.as_mut_ptr(), 2, &ts, std::ptr::null());
        }
    }
    eprintln!(
        "{}",
        serde_json::json!({"event": "linkem_stats", "a_to_b": ab, "b_to_a": ba})
    );
    let _ = ta.flush();
    Ok(ExitCode::SUCCESS)
}

//! The emulation core: one thread, `ppoll` on both ports, a drop-tail
//! queue A->B, a heap of delivery times.

use crate::ports::{Port, Rx};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::time::Instant;

/// The link's treatment, common to both modes.
#[derive(Debug, Clone)]
pub struct Params {
    /// One-way delay, seconds, each direction.
    pub delay: f64,
    pub loss: f64,
    pub loss_back: f64,
    pub reorder: f64,
    pub rate_kbps: Option<f64>,
    pub limit: u64,
    pub seed: u64,
}

#[derive(Default, Debug, serde::Serialize)]
pub struct DirStats {
    /// Packets (frames) received from the ingress port.
    packets: u64,
    /// Dropped by random loss.
    lost: u64,
    /// Dropped by the full bottleneck queue.
    queue_drops: u64,
    /// Skipped the delay (--reorder).
    reordered: u64,
    /// Forwarded: written to the egress port.
    delivered: u64,
    /// Larger than the 64 KiB buffer, or than the egress port's MTU (a
    /// TSO/GSO super-frame): dropped.
    too_big: u64,
    /// The egress port refused them for another reason.
    send_errors: u64,
    recv_errors: u64,
    /// Ethernet mode: frames whose checksum the sender's kernel left to
    /// offload, completed by linkem.
    checksums_completed: u64,
}

/// A packet waiting for its delivery time; ordered by (time, arrival).
struct Pending {
    at_ns: u64,
    seq: u64,
    to_b: bool,
    pkt: Vec<u8>,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.at_ns, self.seq) == (o.at_ns, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.at_ns, self.seq).cmp(&(o.at_ns, o.seq))
    }
}

/// The next packet from `port`: Some(len), or None when nothing is left
/// for now. Counts what is dropped on the way in.
fn next_packet(port: &mut dyn Port, buf: &mut [u8], st: &mut DirStats, side: &str) -> Option<usize> {
    // bounded, so that a flood of skipped frames cannot starve the timers
    for _ in 0..1024 {
        match port.recv(buf) {
            Rx::Packet(n) => return Some(n),
            Rx::Skip => continue,
            Rx::TooBig => {
                st.packets += 1;
                st.too_big += 1;
            }
            Rx::Empty => return None,
            Rx::Error(e) => {
                if st.recv_errors == 0 {
                    eprintln!("p4rcp-linkem: reading side {side}: {e}");
                }
                st.recv_errors += 1;
                return None;
            }
        }
    }
    None
}

/// Move packets between `a` and `b` with the link's treatment until
/// `stop()` (SIGINT/SIGTERM); returns the counters (A->B, B->A).
pub fn emulate(a: &mut dyn Port, b: &mut dyn Port, p: &Params, stop: &dyn Fn() -> bool) -> (DirStats, DirStats) {
    let mut rng = SmallRng::seed_from_u64(p.seed);
    let t0 = Instant::now();
    let now_s = || t0.elapsed().as_secs_f64();
    let to_ns = |t: f64| (t * 1e9) as u64;
    let mut heap: BinaryHeap<Reverse<Pending>> = BinaryHeap::new();
    let mut seq = 0u64;
    // bottleneck A->B: packets waiting for the line, bytes queued, line free at
    let mut queue: VecDeque<(f64, Vec<u8>)> = VecDeque::new();
    let mut queued_bytes = 0u64;
    let mut line_free = 0.0f64;
    let oh_a = a.frame_overhead();
    let tx_time = |len: usize, rate: f64| (len as u64 + oh_a) as f64 * 8.0 / (rate * 1000.0);
    let mut ab = DirStats::default();
    let mut ba = DirStats::default();
    let mut buf = vec![0u8; 65_536];
    let mut pfds = [
        libc::pollfd {
            fd: a.fd(),
            events: libc::POLLIN,
            revents: libc::POLLIN, // read both at the start
        },
        libc::pollfd {
            fd: b.fd(),
            events: libc::POLLIN,
            revents: libc::POLLIN,
        },
    ];
    while !stop() {
        let now = now_s();
        // A -> B arrivals (only from a port ppoll found ready: no empty reads)
        let ready = |p: &libc::pollfd| p.fd < 0 || p.revents != 0;
        for _ in 0..if ready(&pfds[0]) { 256 } else { 0 } {
            let Some(n) = next_packet(a, &mut buf, &mut ab, "A") else {
                break;
            };
            let arrived = now_s() - a.rx_age();
            ab.packets += 1;
            if rng.gen::<f64>() * 100.0 < p.loss {
                ab.lost += 1;
                continue;
            }
            if p.rate_kbps.is_some() {
                let frame = n as u64 + oh_a;
                if queued_bytes + frame > p.limit {
                    ab.queue_drops += 1;
                    continue;
                }
                queued_bytes += frame;
                queue.push_back((arrived, buf[..n].to_vec()));
            } else {
                let skip = rng.gen::<f64>() * 100.0 < p.reorder;
                ab.reordered += skip as u64;
                let at = arrived + if skip { 0.0 } else { p.delay };
                seq += 1;
                heap.push(Reverse(Pending {
                    at_ns: to_ns(at),
                    seq,
                    to_b: true,
                    pkt: buf[..n].to_vec(),
                }));
            }
        }
        // B -> A arrivals
        for _ in 0..if ready(&pfds[1]) { 256 } else { 0 } {
            let Some(n) = next_packet(b, &mut buf, &mut ba, "B") else {
                break;
            };
            let arrived = now_s() - b.rx_age();
            ba.packets += 1;
            if rng.gen::<f64>() * 100.0 < p.loss_back {
                ba.lost += 1;
                continue;
            }
            seq += 1;
            heap.push(Reverse(Pending {
                at_ns: to_ns(arrived + p.delay),
                seq,
                to_b: false,
                pkt: buf[..n].to_vec(),
            }));
        }
        // serve the bottleneck: each packet leaves the line after its
        // transmission time, then propagates
        if let Some(rate) = p.rate_kbps {
            while let Some((arrived, pkt)) = queue.front() {
                let done = line_free.max(*arrived) + tx_time(pkt.len(), rate);
                if done > now {
                    break;
                }
                line_free = done;
                let Some((_, pkt)) = queue.pop_front() else { break };
                queued_bytes -= pkt.len() as u64 + oh_a;
                let skip = rng.gen::<f64>() * 100.0 < p.reorder;
                ab.reordered += skip as u64;
                let at = done + if skip { 0.0 } else { p.delay };
                seq += 1;
                heap.push(Reverse(Pending {
                    at_ns: to_ns(at),
                    seq,
                    to_b: true,
                    pkt,
                }));
            }
        }
        // deliveries that are due
        let now_ns = to_ns(now_s());
        while heap.peek().is_some_and(|Reverse(x)| x.at_ns <= now_ns) {
            let Some(Reverse(x)) = heap.pop() else { break };
            let (sent, st) = if x.to_b {
                (b.send(&x.pkt), &mut ab)
            } else {
                (a.send(&x.pkt), &mut ba)
            };
            match sent {
                Ok(()) => st.delivered += 1,
                Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => {
                    if st.too_big == 0 {
                        eprintln!(
                            "p4rcp-linkem: dropping {}-byte frames larger than the MTU of side {} \
                             (counted in too_big; TSO/GSO left on upstream? ethtool --offload IF tso off gso off)",
                            x.pkt.len(),
                            if x.to_b { "B" } else { "A" }
                        );
                    }
                    st.too_big += 1;
                }
                Err(e) => {
                    if st.send_errors == 0 {
                        let side = if x.to_b { "B" } else { "A" };
                        eprintln!(
                            "p4rcp-linkem: sending {} bytes on side {side}: {e} (counted in send_errors)",
                            x.pkt.len()
                        );
                    }
                    st.send_errors += 1;
                }
            }
        }
        // sleep until the next event
        let now = now_s();
        let mut next = now + 0.5;
        if let Some(Reverse(x)) = heap.peek() {
            next = next.min(x.at_ns as f64 / 1e9);
        }
        if let (Some(rate), Some((arrived, pkt))) = (p.rate_kbps, queue.front()) {
            next = next.min(line_free.max(*arrived) + tx_time(pkt.len(), rate));
        }
        let wait = (next - now).max(0.0);
        let ts = libc::timespec {
            tv_sec: wait as libc::time_t,
            tv_nsec: (wait.fract() * 1e9) as libc::c_long,
        };
        for pfd in pfds.iter_mut() {
            pfd.revents = 0;
        }
        // SAFETY: two valid pollfds and a timespec.
        unsafe {
            libc::ppoll(pfds.as_mut_ptr(), 2, &ts, std::ptr::null());
        }
    }
    ab.checksums_completed = a.checksums_completed();
    ba.checksums_completed = b.checksums_completed();
    (ab, ba)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use std::os::fd::RawFd;
    use std::time::Duration;

    /// A port fed from a list, recording what is sent to it.
    struct Mem {
        inbox: VecDeque<Vec<u8>>,
        sent: Vec<(Instant, Vec<u8>)>,
    }
    impl Port for Mem {
        fn fd(&self) -> RawFd {
            -1 // ppoll ignores negative fds: it only sleeps
        }
        fn recv(&mut self, buf: &mut [u8]) -> Rx {
            match self.inbox.pop_front() {
                Some(p) => {
                    buf[..p.len()].copy_from_slice(&p);
                    Rx::Packet(p.len())
                }
                None => Rx::Empty,
            }
        }
        fn send(&mut self, pkt: &[u8]) -> io::Result<()> {
            self.sent.push((Instant::now(), pkt.to_vec()));
            Ok(())
        }
        fn frame_overhead(&self) -> u64 {
            0
        }
    }

    fn mem(tag: u8, n: usize) -> Mem {
        Mem {
            inbox: (0..n).map(|i| [tag, i as u8, 0xee, 0x55].repeat(100)).collect(),
            sent: Vec::new(),
        }
    }

    fn params(delay: f64, loss: f64, loss_back: f64) -> Params {
        Params {
            delay,
            loss,
            loss_back,
            reorder: 0.0,
            rate_kbps: None,
            limit: 75_000,
            seed: 7,
        }
    }

    #[test]
    fn core_forwards_both_ways_after_the_delay() {
        let (mut a, mut b) = (mem(0xa, 40), mem(0xb, 30));
        let (want_b, want_a) = (a.inbox.clone(), b.inbox.clone());
        let t0 = Instant::now();
        let stop = || t0.elapsed() > Duration::from_millis(150);
        let (ab, ba) = emulate(&mut a, &mut b, &params(0.030, 0.0, 0.0), &stop);
        assert_eq!((ab.packets, ab.delivered, ba.packets, ba.delivered), (40, 40, 30, 30));
        let got_b: Vec<_> = b.sent.iter().map(|(_, p)| p.clone()).collect();
        let got_a: Vec<_> = a.sent.iter().map(|(_, p)| p.clone()).collect();
        assert_eq!(got_b, Vec::from(want_b), "A->B byte for byte, in order");
        assert_eq!(got_a, Vec::from(want_a), "B->A byte for byte, in order");
        for (t, _) in a.sent.iter().chain(b.sent.iter()) {
            assert!(
                t.duration_since(t0) >= Duration::from_millis(30),
                "delivered before the delay"
            );
        }
    }

    #[test]
    fn core_loss_per_direction_and_rate() {
        let (mut a, mut b) = (mem(1, 50), mem(2, 50));
        let t0 = Instant::now();
        let stop = || t0.elapsed() > Duration::from_millis(50);
        let (ab, ba) = emulate(&mut a, &mut b, &params(0.0, 100.0, 0.0), &stop);
        assert_eq!((ab.lost, ab.delivered, ba.lost, ba.delivered), (50, 0, 0, 50));
        // 400-byte frames at 8 Mb/s: 0.4 ms each; a 2000-byte queue holds 5
        let (mut a, mut b) = (mem(1, 20), mem(2, 0));
        let mut p = params(0.0, 0.0, 0.0);
        p.rate_kbps = Some(8000.0);
        p.limit = 2000;
        let t0 = Instant::now();
        let stop = || t0.elapsed() > Duration::from_millis(50);
        let (ab, _) = emulate(&mut a, &mut b, &p, &stop);
        assert_eq!((ab.packets, ab.queue_drops, ab.delivered), (20, 15, 5));
        let last = b.sent.last().map(|(t, _)| t.duration_since(t0)).unwrap_or_default();
        assert!(
            last >= Duration::from_micros(2000),
            "5 frames of 0.4 ms left after {last:?}"
        );
    }
}

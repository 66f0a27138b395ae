//! Tests of the whole transport (sender + receiver + controllers) over a
//! simulated link with virtual time: delay, random loss both ways,
//! reordering, a rate-limited drop-tail bottleneck and an optional RCP
//! router that stamps a rate. Deterministic (seeded), no sockets, no root.

use crate::cc::CcSpec;
use crate::receiver::Receiver;
use crate::record::{FlowRecord, RecvRecord};
use crate::sender::{FlowParams, SenderFlow, Tx};
use crate::wire::{Packet, PktType, RCP_HEADER_LEN};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::SocketAddr;

/// A `Tx` that keeps what is sent (also used by the receiver's tests).
#[derive(Default)]
pub struct Collect(pub Vec<Vec<u8>>);

impl Tx for Collect {
    fn send(&mut self, buf: &[u8], _dst: SocketAddr) -> bool {
        self.0.push(buf.to_vec());
        true
    }
}

#[derive(Clone, Copy, Debug)]
pub struct LinkCfg {
    pub one_way_s: f64,
    pub loss: f64,
    pub loss_back: f64,
    pub reorder: f64,
    pub rate_kbps: f64,
    pub limit_bytes: f64,
    /// RCP router on the forward path stamping this rate (0: none).
    pub stamp_kbps: u32,
}

pub struct SimResult {
    pub sent: FlowRecord,
    pub recv: Vec<RecvRecord>,
    pub trace: Vec<crate::record::TraceLine>,
    /// Packets declared lost that were acknowledged later.
    pub spurious: u64,
}

impl SimResult {
    /// Mean goodput (kb/s of application bytes) of the "sample" trace
    /// lines with `from <= t < to`.
    pub fn goodput(&self, from: f64, to: f64) -> f64 {
        let v: Vec<f64> = self
            .trace
            .iter()
            .filter(|l| l.event == "sample" && l.t_s >= from && l.t_s < to)
            .filter_map(|l| l.goodput_kbps)
            .collect();
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    }
}

/// Run one flow over `link` until it ends or `max_time` (virtual seconds).
pub fn run(
    cc: &CcSpec,
    size: Option<u64>,
    duration: Option<f64>,
    link: LinkCfg,
    seed: u64,
    max_time: f64,
) -> SimResult {
    let sender_addr: SocketAddr = "10.0.0.1:40000".parse().unwrap_or_else(|_| unreachable!());
    let recv_addr: SocketAddr = "10.0.0.2:6577".parse().unwrap_or_else(|_| unreachable!());
    let mut rng = SmallRng::seed_from_u64(seed);
    let p = FlowParams {
        flow_id: 77 + seed as u32,
        index: None,
        dst: recv_addr,
        scheme: cc.name(),
        size,
        duration,
        mss: 1000,
        max_rate_kbps: 100_000.0,
        min_rate_kbps: 100.0,
        timeout_s: max_time,
        trace: true,
        sample_interval_s: 0.1,
        start_unix_s: 0.0,
    };
    let ctl = cc.build(seed, p.max_rate_kbps).unwrap_or_else(|| unreachable!());
    let mut flow = SenderFlow::new(p, ctl, 0.0);
    let mut rx = Receiver::new(1e9);
    // in flight: (arrival ns, seq) -> (to receiver?, bytes)
    let mut heap: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
    let mut pkts: HashMap<u64, (bool, Vec<u8>)> = HashMap::new();
    let mut seq = 0u64;
    let mut line_free = 0.0f64;
    let mut recv_records = Vec::new();
    let mut t = 0.0f64;
    let ns = |x: f64| (x * 1e9).round() as u64;
    loop {
        let next_ev = heap
            .peek()
            .map(|Reverse((n, _))| *n as f64 / 1e9)
            .unwrap_or(f64::INFINITY);
        let next = flow.next_wake().min(next_ev);
        if flow.is_done() || !next.is_finite() || next > max_time {
            break;
        }
        t = next.max(t);
        let mut out = Collect::default();
        let mut back = Collect::default();
        if next_ev <= t {
            let Some(Reverse((_, id))) = heap.pop() else { break };
            let Some((to_rx, mut bytes)) = pkts.remove(&id) else {
                continue;
            };
            if to_rx {
                rx.on_datagram(&bytes, sender_addr, t, t, &mut back);
                recv_records.extend(rx.take_records());
            } else {
                if let Ok(pkt) = Packet::parse(&bytes) {
                    flow.on_packet(&pkt, t, &mut out);
                }
                bytes.clear();
            }
        } else {
            flow.on_timer(t, &mut out);
        }
        for mut d in out.0 {
            if rng.gen::<f64>() < link.loss {
                continue;
            }
            // router: stamp forward packets (DATA, SYN)
            if link.stamp_kbps > 0 && d.len() >= RCP_HEADER_LEN {
                let ty = d[0] & 0x0f;
                if ty == PktType::Data as u8 || ty == PktType::Syn as u8 {
                    let r = u32::from_be_bytes([d[4], d[5], d[6], d[7]]);
                    if r > link.stamp_kbps {
                        d[4..8].copy_from_slice(&link.stamp_kbps.to_be_bytes());
                    }
                }
            }
            let frame = (d.len() + 42) as f64;
            let backlog = (line_free - t).max(0.0) * link.rate_kbps * 1000.0 / 8.0;
            if backlog + frame > link.limit_bytes {
                continue; // drop-tail
            }
            line_free = line_free.max(t) + frame * 8.0 / (link.rate_kbps * 1000.0);
            let skip = rng.gen::<f64>() < link.reorder;
            let at = line_free + if skip { 0.0 } else { link.one_way_s };
            seq += 1;
            pkts.insert(seq, (true, d));
            heap.push(Reverse((ns(at), seq)));
        }
        for d in back.0 {
            if rng.gen::<f64>() < link.loss_back {
                continue;
            }
            seq += 1;
            pkts.insert(seq, (false, d));
            heap.push(Reverse((ns(t + link.one_way_s), seq)));
        }
    }
    if !flow.is_done() {
        flow.interrupt();
    }
    let trace = flow.take_trace();
    if std::env::var("SIM_TRACE").is_ok() {
        for l in &trace {
            if l.event != "mi" || std::env::var("SIM_TRACE").as_deref() == Ok("mi") {
                eprintln!("{}", serde_json::to_string(&l).unwrap_or_default());
            }
        }
    }
    let sent = flow.record();
    SimResult {
        sent,
        recv: recv_records,
        trace,
        spurious: flow.spurious(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::vivace::Variant;

    fn link(loss: f64, reorder: f64) -> LinkCfg {
        LinkCfg {
            one_way_s: 0.015,
            loss,
            loss_back: loss,
            reorder,
            rate_kbps: 20_000.0,
            limit_bytes: 75_000.0,
            stamp_kbps: 0,
        }
    }

    fn schemes() -> Vec<CcSpec> {
        vec![
            CcSpec::Rcp,
            CcSpec::Allegro,
            CcSpec::Vivace(Variant::Default),
            CcSpec::Vivace(Variant::Loss),
            CcSpec::Vivace(Variant::Latency),
            CcSpec::Fixed(10_000.0),
        ]
    }

    /// Every scheme delivers every byte exactly once, in order, at 0, 1, 5
    /// and 10% loss both ways with 25% reordering.
    #[test]
    fn byte_exact_delivery_under_loss_and_reordering() {
        for cc in schemes() {
            for (i, loss) in [0.0, 0.01, 0.05, 0.10].iter().enumerate() {
                let mut l = link(*loss, 0.25);
                if cc == CcSpec::Rcp {
                    l.stamp_kbps = 15_000; // a router; rcp follows it
                }
                let r = run(&cc, Some(200_000), None, l, 100 + i as u64, 120.0);
                let what = format!("{} at {}% loss", cc.name(), loss * 100.0);
                assert!(r.sent.completed, "{what}: sender did not complete: {:?}", r.sent);
                assert_eq!(r.sent.verified, Some(true), "{what}");
                assert_eq!(r.recv.len(), 1, "{what}");
                let rr = &r.recv[0];
                assert!(rr.completed && rr.verified, "{what}: {rr:?}");
                assert_eq!(rr.bytes_delivered, 200_000, "{what}");
                if *loss > 0.0 {
                    assert!(r.sent.retransmissions > 0, "{what}: no retransmissions?");
                }
            }
        }
    }

    /// Heavy reordering makes the sender declare packets lost that then
    /// arrive: it notices (spurious losses) and widens its reordering window.
    #[test]
    fn reordering_is_detected_as_spurious_loss() {
        let r = run(&CcSpec::Fixed(10_000.0), Some(500_000), None, link(0.0, 0.3), 4, 60.0);
        assert!(r.sent.completed && r.recv[0].verified);
        assert!(r.spurious > 0, "no spurious loss detected");
    }

    #[test]
    fn rcp_paces_at_the_stamped_rate() {
        let mut l = link(0.0, 0.0);
        l.stamp_kbps = 8_000;
        let r = run(&CcSpec::Rcp, Some(1_000_000), None, l, 5, 60.0);
        assert_eq!(r.sent.synack_rate_kbps, Some(8_000));
        let s = r.sent.send_rate_kbps.unwrap_or(0.0);
        assert!((s / 8_000.0 - 1.0).abs() < 0.01, "send rate {s}");
        assert_eq!(r.sent.retransmissions, 0);
    }

    #[test]
    fn open_ended_flow_stops_after_its_duration() {
        let r = run(&CcSpec::Fixed(5_000.0), None, Some(2.0), link(0.0, 0.1), 9, 60.0);
        assert!(r.sent.completed, "{:?}", r.sent);
        // data from the SYNACK (30 ms) to 2 s at 5 Mb/s, 1078-byte frames:
        // 1.97 * 5e6 / 8624 = 1142.2 packets of 1000 B
        let pkts = r.sent.size_bytes as f64 / 1000.0;
        assert!((pkts - 1142.2).abs() < 3.0, "{pkts} {:?}", r.sent);
        assert!(r.recv[0].completed && r.recv[0].verified);
    }

    /// Utilisation (frame bits of acknowledged data / 20 Mb/s) between
    /// `from` and `to` seconds of a flow on 20 Mb/s, 30 ms RTT, 1% random
    /// loss (forward only), 75 KB buffer.
    fn utilisation(cc: CcSpec, seed: u64, from: f64, to: f64) -> f64 {
        let mut l = link(0.01, 0.0);
        l.loss_back = 0.0;
        let r = run(&cc, None, Some(to), l, seed, to * 5.0);
        assert!(r.sent.completed);
        r.goodput(from, to) * 1078.0 / 1000.0 / 20_000.0
    }

    /// Not a test: prints utilisation over time of long flows.
    #[test]
    #[ignore]
    fn explore_utilisation() {
        let secs: f64 = std::env::var("SIM_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(60.0);
        let loss: f64 = std::env::var("SIM_LOSS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0.01);
        for cc in [
            CcSpec::Allegro,
            CcSpec::Vivace(Variant::Loss),
            CcSpec::Vivace(Variant::Default),
        ] {
            for seed in 1..=std::env::var("SIM_SEEDS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(3u64)
            {
                let mut l = link(loss, 0.0);
                l.loss_back = 0.0;
                l.limit_bytes = std::env::var("SIM_BUF")
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(75_000.0);
                let r = run(&cc, None, Some(secs), l, seed, secs * 5.0);
                let mut line = format!("{:12} seed {seed}:", cc.name());
                let mut t = 0.0;
                while t < secs {
                    line += &format!(" {:.2}", r.goodput(t, t + 10.0) * 1078.0 / 1000.0 / 20_000.0);
                    t += 10.0;
                }
                eprintln!("{line}");
            }
        }
    }

    #[test]
    fn pcc_keeps_throughput_at_one_percent_random_loss() {
        // steady state; regression guards, not the benchmark
        let u = utilisation(CcSpec::Allegro, 1, 10.0, 40.0);
        assert!(u > 0.9, "allegro: {u}");
        let u = utilisation(CcSpec::Vivace(Variant::Loss), 1, 10.0, 40.0);
        assert!(u > 0.85, "vivace-loss: {u}");
    }
}

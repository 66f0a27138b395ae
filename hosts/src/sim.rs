//! A simulated network for tests, in virtual time: several flows, each with
//! its own round-trip time, share one drop-tail bottleneck served at a fixed
//! rate (which may change at given times). Data packets may be lost at
//! random before the queue, reach it late (arrival jitter) or skip the
//! propagation delay (reordering); an optional RCP router stamps a rate into
//! them; ACKs may be lost at random or arrive late (ACK jitter). The real
//! `SenderFlow`s, one `Receiver` and the real controllers run on it.
//! Deterministic for a seed; no sockets, no root.

use crate::cc::CcSpec;
use crate::transport::receiver::Receiver;
use crate::transport::record::{FlowRecord, RecvRecord, TraceLine};
use crate::transport::sender::{FlowParams, SenderFlow};
use crate::transport::wire::{Packet, PktType, RCP_HEADER_LEN};
use crate::transport::Tx;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// A `Tx` that keeps what is sent (also used by the receiver's tests).
#[derive(Default)]
pub struct Collect(pub Vec<Vec<u8>>);

impl Tx for Collect {
    fn send(&mut self, buf: &[u8], _dst: SocketAddr) -> bool {
        self.0.push(buf.to_vec());
        true
    }
}

/// A `Tx` that keeps each datagram with its destination.
#[derive(Default)]
struct Outbox(Vec<(SocketAddr, Vec<u8>)>);

impl Tx for Outbox {
    fn send(&mut self, buf: &[u8], dst: SocketAddr) -> bool {
        self.0.push((dst, buf.to_vec()));
        true
    }
}

/// Bytes a datagram occupies on the wire: UDP, IPv4 and Ethernet headers
/// (`docs/protocol.md`, "Units").
fn frame_bytes(datagram: &[u8]) -> f64 {
    (datagram.len() + 8 + 20 + 14) as f64
}

/// The shared part of the network.
#[derive(Clone, Debug)]
pub struct Net {
    /// Bottleneck service rate (kb/s of frames).
    pub rate_kbps: f64,
    /// Drop-tail limit: frame bytes queued, the one in service included.
    pub buffer_bytes: f64,
    /// Random loss of data packets (before the queue) and of ACKs.
    pub loss: f64,
    pub loss_back: f64,
    /// Fraction of data packets that skip the propagation delay.
    pub reorder: f64,
    /// Data packets reach the queue up to this late (uniform), each flow's
    /// packets in the order they were sent: a sender or an emulator that
    /// was descheduled releases a burst.
    pub arrival_jitter_s: f64,
    /// ACKs reach their sender up to this late (uniform), in order.
    pub ack_jitter_s: f64,
    /// An RCP router before the queue stamps at most this rate (0: none).
    pub stamp_kbps: u32,
    /// (time, new rate): the bottleneck's rate changes.
    pub rate_changes: Vec<(f64, f64)>,
}

impl Net {
    /// A clean bottleneck: `rate_kbps`, a buffer of `buffer_pkts` full data
    /// frames (1078 bytes, as bmv2's queue depth in packets).
    pub fn bottleneck(rate_kbps: f64, buffer_pkts: f64) -> Net {
        Net {
            rate_kbps,
            buffer_bytes: buffer_pkts * 1078.0,
            loss: 0.0,
            loss_back: 0.0,
            reorder: 0.0,
            arrival_jitter_s: 0.0,
            ack_jitter_s: 0.0,
            stamp_kbps: 0,
            rate_changes: Vec::new(),
        }
    }
}

/// One flow of a simulation.
#[derive(Clone, Debug)]
pub struct FlowSpec {
    pub cc: CcSpec,
    /// Base round-trip time: half on the way to the receiver (after the
    /// queue), half on the way back.
    pub rtt_s: f64,
    pub start_s: f64,
    /// Application bytes, or seconds of new data for an open-ended flow.
    pub size: Option<u64>,
    pub duration: Option<f64>,
}

impl FlowSpec {
    /// An open-ended flow sending new data from `start_s` until `until_s`.
    pub fn long(cc: CcSpec, rtt_s: f64, start_s: f64, until_s: f64) -> FlowSpec {
        FlowSpec {
            cc,
            rtt_s,
            start_s,
            size: None,
            duration: Some(until_s - start_s),
        }
    }
}

pub struct FlowResult {
    pub start_s: f64,
    pub sent: FlowRecord,
    /// The receiver's record (None if the receiver never closed the flow).
    pub recv: Option<RecvRecord>,
    pub trace: Vec<TraceLine>,
    /// Packets declared lost that were acknowledged later.
    pub spurious: u64,
}

impl FlowResult {
    /// Mean goodput (kb/s of application bytes) of the flow's "sample" trace
    /// lines in `[from, to)` (simulation time).
    pub fn goodput(&self, from: f64, to: f64) -> f64 {
        let v: Vec<f64> = self
            .trace
            .iter()
            .filter(|l| l.event == "sample")
            .filter(|l| (from..to).contains(&(self.start_s + l.t_s)))
            .filter_map(|l| l.goodput_kbps)
            .collect();
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    }

    /// Share of the packets sent that the sender declared lost.
    pub fn loss_rate(&self) -> f64 {
        self.sent.packets_lost.unwrap_or(0) as f64 / self.sent.packets_sent as f64
    }
}

pub struct SimResult {
    pub flows: Vec<FlowResult>,
    /// Data packets the full queue dropped.
    pub queue_drops: u64,
}

impl SimResult {
    /// Frame rate of the flows' acknowledged data in `[from, to)` over the
    /// bottleneck's rate `rate_kbps` (1000-byte payloads in 1078-byte frames).
    pub fn utilisation(&self, from: f64, to: f64, rate_kbps: f64) -> f64 {
        let good: f64 = self.flows.iter().map(|f| f.goodput(from, to)).sum();
        good * 1078.0 / 1000.0 / rate_kbps
    }

    /// Jain's fairness index of the flows' goodputs in `[from, to)`.
    pub fn jain(&self, from: f64, to: f64) -> f64 {
        jain(&self.flows.iter().map(|f| f.goodput(from, to)).collect::<Vec<_>>())
    }
}

/// Jain's index (sum x)^2 / (n sum x^2): 1 for equal shares, 1/n for one
/// flow taking everything.
pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if s2 == 0.0 {
        return 0.0;
    }
    s * s / (x.len() as f64 * s2)
}

/// What happens next in the network.
enum Ev {
    /// A data packet reaches the bottleneck queue.
    AtQueue(usize, Vec<u8>),
    /// The packet in service has left the queue.
    Departed,
    /// A data packet reaches the receiver.
    AtReceiver(usize, Vec<u8>),
    /// An ACK (or SYNACK, FINACK) reaches its sender.
    AtSender(usize, Vec<u8>),
    RateChange(f64),
}

struct Sim {
    net: Net,
    rng: SmallRng,
    now: f64,
    heap: BinaryHeap<Reverse<(u64, u64)>>,
    events: HashMap<u64, Ev>,
    next_ev: u64,
    queue: VecDeque<(usize, Vec<u8>)>,
    queued_bytes: f64,
    busy: bool,
    rate_kbps: f64,
    queue_drops: u64,
    /// Per flow: when its latest data packet reaches the queue and its
    /// latest ACK reaches it (jitter keeps each stream in order).
    last_at_queue: Vec<f64>,
    last_at_sender: Vec<f64>,
}

impl Sim {
    fn at(&mut self, t: f64, ev: Ev) {
        self.next_ev += 1;
        self.events.insert(self.next_ev, ev);
        self.heap.push(Reverse(((t * 1e9).round() as u64, self.next_ev)));
    }

    fn next_time(&self) -> f64 {
        self.heap
            .peek()
            .map(|Reverse((ns, _))| *ns as f64 / 1e9)
            .unwrap_or(f64::INFINITY)
    }

    fn pop(&mut self) -> Option<Ev> {
        let Reverse((_, id)) = self.heap.pop()?;
        self.events.remove(&id)
    }

    /// A sender put `d` on the wire.
    fn send_data(&mut self, flow: usize, mut d: Vec<u8>) {
        if self.rng.gen::<f64>() < self.net.loss {
            return;
        }
        let stamp = self.net.stamp_kbps;
        if stamp > 0 && d.len() >= RCP_HEADER_LEN {
            let ty = d[0] & 0x0f;
            if ty == PktType::Data as u8 || ty == PktType::Syn as u8 {
                let r = u32::from_be_bytes([d[4], d[5], d[6], d[7]]);
                if r > stamp {
                    d[4..8].copy_from_slice(&stamp.to_be_bytes());
                }
            }
        }
        let late = self.rng.gen::<f64>() * self.net.arrival_jitter_s;
        let t = (self.now + late).max(self.last_at_queue[flow]);
        self.last_at_queue[flow] = t;
        self.at(t, Ev::AtQueue(flow, d));
    }

    fn enqueue(&mut self, flow: usize, d: Vec<u8>) {
        let frame = frame_bytes(&d);
        if self.queued_bytes + frame > self.net.buffer_bytes {
            self.queue_drops += 1;
            return;
        }
        self.queued_bytes += frame;
        self.queue.push_back((flow, d));
        if !self.busy {
            self.serve_next();
        }
    }

    fn serve_next(&mut self) {
        self.busy = match self.queue.front() {
            Some((_, d)) => {
                let t = self.now + frame_bytes(d) * 8.0 / (self.rate_kbps * 1000.0);
                self.at(t, Ev::Departed);
                true
            }
            None => false,
        };
    }

    /// The receiver answered flow `flow` with `d`.
    fn send_ack(&mut self, flow: usize, one_way_s: f64, d: Vec<u8>) {
        if self.rng.gen::<f64>() < self.net.loss_back {
            return;
        }
        let late = self.rng.gen::<f64>() * self.net.ack_jitter_s;
        let t = (self.now + one_way_s + late).max(self.last_at_sender[flow]);
        self.last_at_sender[flow] = t;
        self.at(t, Ev::AtSender(flow, d));
    }
}

/// Flow i of a simulation has flow id `FIRST_FLOW_ID + i`.
const FIRST_FLOW_ID: u32 = 77;

/// Run `flows` over `net` until every flow has ended or `max_time`.
/// Flow i's controller is seeded with `seed * 1000 + i`.
pub fn simulate(net: &Net, flows: &[FlowSpec], seed: u64, max_time: f64) -> SimResult {
    let recv_addr: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 6577);
    let addr_of = |i: usize| SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1)), 40000 + i as u16);
    let by_addr: HashMap<SocketAddr, usize> = (0..flows.len()).map(|i| (addr_of(i), i)).collect();
    let mut sim = Sim {
        net: net.clone(),
        rng: SmallRng::seed_from_u64(seed),
        now: 0.0,
        heap: BinaryHeap::new(),
        events: HashMap::new(),
        next_ev: 0,
        queue: VecDeque::new(),
        queued_bytes: 0.0,
        busy: false,
        rate_kbps: net.rate_kbps,
        queue_drops: 0,
        last_at_queue: vec![0.0; flows.len()],
        last_at_sender: vec![0.0; flows.len()],
    };
    for &(t, r) in &net.rate_changes {
        sim.at(t, Ev::RateChange(r));
    }
    let mut senders: Vec<Option<SenderFlow>> = (0..flows.len()).map(|_| None).collect();
    let mut finished: Vec<Option<FlowResult>> = (0..flows.len()).map(|_| None).collect();
    let mut recv_records: Vec<Option<RecvRecord>> = vec![None; flows.len()];
    let mut rx = Receiver::new(1e9);
    loop {
        // the earliest of: a network event, a flow's timer, a flow's start
        let mut next = sim.next_time();
        let mut due: Option<usize> = None;
        for (i, f) in flows.iter().enumerate() {
            let w = match (&senders[i], &finished[i]) {
                (_, Some(_)) => continue,
                (Some(s), None) => s.next_wake(),
                (None, None) => f.start_s,
            };
            if w < next {
                next = w;
                due = Some(i);
            }
        }
        if !next.is_finite() || next > max_time {
            break;
        }
        sim.now = sim.now.max(next);
        let mut out = Outbox::default();
        let mut touched = None;
        match due {
            Some(i) => {
                let s = senders[i].get_or_insert_with(|| {
                    let f = &flows[i];
                    let p = FlowParams {
                        flow_id: FIRST_FLOW_ID + i as u32,
                        index: None,
                        dst: recv_addr,
                        scheme: f.cc.name(),
                        size: f.size,
                        duration: f.duration,
                        mss: 1000,
                        max_rate_kbps: 100_000.0,
                        min_rate_kbps: 100.0,
                        timeout_s: max_time,
                        trace: true,
                        sample_interval_s: 0.1,
                    };
                    let ctl = f.cc.build(seed * 1000 + i as u64, p.max_rate_kbps);
                    SenderFlow::new(
                        p,
                        ctl.unwrap_or_else(|| unreachable!("no controller")),
                        f.start_s,
                        f.start_s,
                    )
                });
                s.on_timer(sim.now, &mut out);
                touched = Some(i);
            }
            None => match sim.pop() {
                Some(Ev::AtQueue(i, d)) => sim.enqueue(i, d),
                Some(Ev::Departed) => {
                    if let Some((i, d)) = sim.queue.pop_front() {
                        sim.queued_bytes -= frame_bytes(&d);
                        let skip = sim.rng.gen::<f64>() < sim.net.reorder;
                        let t = sim.now + if skip { 0.0 } else { flows[i].rtt_s / 2.0 };
                        sim.at(t, Ev::AtReceiver(i, d));
                    }
                    sim.serve_next();
                }
                Some(Ev::AtReceiver(i, d)) => {
                    let mut back = Outbox::default();
                    rx.on_datagram(&d, addr_of(i), sim.now, sim.now, &mut back);
                    for r in rx.take_records() {
                        if let Some(slot) = recv_records.get_mut(r.flow_id.wrapping_sub(FIRST_FLOW_ID) as usize) {
                            *slot = Some(r);
                        }
                    }
                    for (dst, a) in back.0 {
                        if let Some(&j) = by_addr.get(&dst) {
                            sim.send_ack(j, flows[j].rtt_s / 2.0, a);
                        }
                    }
                }
                Some(Ev::AtSender(i, d)) => {
                    if let (Some(s), Ok(pkt)) = (senders[i].as_mut(), Packet::parse(&d)) {
                        s.on_packet(&pkt, sim.now, &mut out);
                        touched = Some(i);
                    }
                }
                Some(Ev::RateChange(r)) => sim.rate_kbps = r,
                None => break,
            },
        }
        if let Some(i) = touched {
            for (_, d) in out.0 {
                sim.send_data(i, d);
            }
            if finished[i].is_none() {
                if let Some(s) = senders[i].as_mut().filter(|s| s.is_done()) {
                    finished[i] = Some(flow_result(s, flows[i].start_s));
                }
            }
        }
    }
    let flows = (0..flows.len())
        .map(|i| {
            let mut r = match (finished[i].take(), senders[i].as_mut()) {
                (Some(r), _) => r,
                (None, Some(s)) => {
                    s.interrupt();
                    flow_result(s, flows[i].start_s)
                }
                (None, None) => panic!("flow {i} never started before {max_time} s"),
            };
            r.recv = recv_records[i].take();
            r
        })
        .collect();
    SimResult {
        flows,
        queue_drops: sim.queue_drops,
    }
}

fn flow_result(s: &mut SenderFlow, start_s: f64) -> FlowResult {
    let trace = s.take_trace();
    if let Ok(what) = std::env::var("SIM_TRACE") {
        for l in trace.iter().filter(|l| l.event != "mi" || what == "mi") {
            eprintln!("{}", serde_json::to_string(&l).unwrap_or_default());
        }
    }
    FlowResult {
        start_s,
        sent: s.record(),
        recv: None,
        trace,
        spurious: s.spurious(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::vivace::Variant;

    /// 20 Mb/s, 30 ms, 75 KB of buffer: the single-flow transport tests.
    fn link(loss: f64, reorder: f64) -> Net {
        Net {
            loss,
            loss_back: loss,
            reorder,
            buffer_bytes: 75_000.0,
            ..Net::bottleneck(20_000.0, 0.0)
        }
    }

    fn one(cc: &CcSpec, size: Option<u64>, duration: Option<f64>, net: &Net, seed: u64, max: f64) -> FlowResult {
        let f = FlowSpec {
            cc: cc.clone(),
            rtt_s: 0.030,
            start_s: 0.0,
            size,
            duration,
        };
        let mut r = simulate(net, &[f], seed, max);
        r.flows.remove(0)
    }

    fn schemes() -> Vec<CcSpec> {
        vec![
            CcSpec::Rcp,
            CcSpec::Allegro(crate::cc::allegro::Utility::Paper),
            CcSpec::Vivace(Variant::Default),
            CcSpec::Vivace(Variant::Loss),
            CcSpec::Vivace(Variant::Latency),
            CcSpec::Fixed(10_000.0),
        ]
    }

    #[test]
    fn jain_index() {
        assert_eq!(jain(&[3.0, 3.0, 3.0, 3.0]), 1.0);
        assert_eq!(jain(&[4.0, 0.0, 0.0, 0.0]), 0.25);
        // (1 + 2 + 3)^2 / (3 * (1 + 4 + 9)) = 36 / 42
        assert!((jain(&[1.0, 2.0, 3.0]) - 36.0 / 42.0).abs() < 1e-12);
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
                let r = one(&cc, Some(200_000), None, &l, 100 + i as u64, 120.0);
                let what = format!("{} at {}% loss", cc.name(), loss * 100.0);
                assert!(r.sent.completed, "{what}: sender did not complete: {:?}", r.sent);
                assert_eq!(r.sent.verified, Some(true), "{what}");
                let Some(rr) = &r.recv else {
                    panic!("{what}: no receiver record");
                };
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
        let r = one(&CcSpec::Fixed(10_000.0), Some(500_000), None, &link(0.0, 0.3), 4, 60.0);
        assert!(r.sent.completed && r.recv.as_ref().is_some_and(|rr| rr.verified));
        assert!(r.spurious > 0, "no spurious loss detected");
    }

    #[test]
    fn rcp_paces_at_the_stamped_rate() {
        let mut l = link(0.0, 0.0);
        l.stamp_kbps = 8_000;
        let r = one(&CcSpec::Rcp, Some(1_000_000), None, &l, 5, 60.0);
        assert_eq!(r.sent.synack_rate_kbps, Some(8_000));
        let s = r.sent.send_rate_kbps.unwrap_or(0.0);
        assert!((s / 8_000.0 - 1.0).abs() < 0.01, "send rate {s}");
        assert_eq!(r.sent.retransmissions, 0);
    }

    #[test]
    fn open_ended_flow_stops_after_its_duration() {
        let r = one(&CcSpec::Fixed(5_000.0), None, Some(2.0), &link(0.0, 0.1), 9, 60.0);
        assert!(r.sent.completed, "{:?}", r.sent);
        // data from the SYNACK (30 ms) to 2 s at 5 Mb/s, 1078-byte frames:
        // 1.97 * 5e6 / 8624 = 1142.2 packets of 1000 B
        let pkts = r.sent.size_bytes as f64 / 1000.0;
        assert!((pkts - 1142.2).abs() < 3.0, "{pkts} {:?}", r.sent);
        assert!(r.recv.as_ref().is_some_and(|rr| rr.completed && rr.verified));
    }

    /// A lost ACK is not a lost packet: the next ACK's cumulative ack or
    /// SACK blocks cover it, so neither loss detection nor the monitor
    /// intervals count it.
    #[test]
    fn lost_acks_are_not_lost_packets() {
        let net = Net {
            loss_back: 0.2,
            ..Net::bottleneck(20_000.0, 64.0)
        };
        let r = one(&CcSpec::Fixed(5_000.0), Some(1_000_000), None, &net, 3, 60.0);
        assert!(r.sent.completed, "{:?}", r.sent);
        assert_eq!(
            (r.sent.packets_lost, r.sent.retransmissions),
            (Some(0), 0),
            "{:?}",
            r.sent
        );
        let mis: Vec<&TraceLine> = r.trace.iter().filter(|l| l.event == "mi").collect();
        assert!(mis.len() > 20 && mis.iter().all(|l| l.mi_loss == 0.0));
    }

    /// The trace's samples and the flow record tell the flow's own loss.
    #[test]
    fn per_flow_loss_is_traced() {
        let net = Net {
            loss: 0.05,
            loss_back: 0.05,
            ..Net::bottleneck(20_000.0, 64.0)
        };
        let r = one(&CcSpec::Fixed(5_000.0), None, Some(20.0), &net, 4, 60.0);
        let lost = r.loss_rate();
        assert!((lost - 0.05).abs() < 0.01, "{lost}");
        let samples: Vec<f64> = r.trace.iter().filter_map(|l| l.loss).collect();
        let mean = samples.iter().sum::<f64>() / samples.len() as f64;
        assert!(
            samples.len() > 150 && (mean - 0.05).abs() < 0.01,
            "{} samples, mean {mean}",
            samples.len()
        );
    }

    /// The bottleneck serves at its rate and drops what does not fit.
    #[test]
    fn bottleneck_serves_at_its_rate_and_drops_the_excess() {
        // 12 Mb/s offered to a 10 Mb/s link with a 20-packet buffer for 5 s
        let net = Net::bottleneck(10_000.0, 20.0);
        let f = FlowSpec::long(CcSpec::Fixed(12_000.0), 0.020, 0.0, 5.0);
        let r = simulate(&net, &[f], 1, 30.0);
        let u = r.utilisation(1.0, 5.0, 10_000.0);
        assert!((u - 1.0).abs() < 0.01, "utilisation {u}");
        // about a sixth of what is offered is dropped
        let sent = r.flows[0].sent.packets_sent as f64;
        let share = r.queue_drops as f64 / sent;
        assert!((share - 1.0 / 6.0).abs() < 0.02, "{} drops of {sent}", r.queue_drops);
    }
}

/// The PCC controllers on the test bed, against the targets of issue 12.
/// Each scenario mirrors a Mininet experiment (`topo/experiments/`): 15 or
/// 12 Mb/s, bmv2's 64-packet queue, 30-40 ms RTTs.
#[cfg(test)]
mod pcc {
    use super::*;
    use crate::cc::allegro::Utility;
    use crate::cc::vivace::Variant;

    const ALLEGRO: CcSpec = CcSpec::Allegro(Utility::Paper);
    const ALLEGRO_REF: CcSpec = CcSpec::Allegro(Utility::Reference);
    const VIVACE: CcSpec = CcSpec::Vivace(Variant::Default);
    const VIVACE_LOSS: CcSpec = CcSpec::Vivace(Variant::Loss);

    /// One flow, 15 Mb/s, 30 ms RTT (the lossy experiment), random loss
    /// `loss` both ways, ACKs up to `ack_jitter_s` late: utilisation from
    /// 5 s to 30 s.
    fn alone(cc: &CcSpec, loss: f64, ack_jitter_s: f64, seed: u64) -> f64 {
        let net = Net {
            loss,
            loss_back: loss,
            ack_jitter_s,
            ..Net::bottleneck(15_000.0, 64.0)
        };
        let r = simulate(&net, &[FlowSpec::long(cc.clone(), 0.030, 0.0, 30.0)], seed, 60.0);
        r.utilisation(5.0, 30.0, 15_000.0)
    }

    /// Four flows, 12 Mb/s, 40 ms RTT, joining 2 s apart (the convergence
    /// experiment, compressed), for `secs` s; data packets up to
    /// `jitter_s` late at the queue. Jain's index over the last 10 s.
    fn four_flows(cc: &CcSpec, jitter_s: f64, secs: f64, seed: u64) -> (f64, SimResult) {
        let net = Net {
            arrival_jitter_s: jitter_s,
            ..Net::bottleneck(12_000.0, 64.0)
        };
        let r = four_flows_on(&net, cc, secs, seed);
        (r.jain(secs - 10.0, secs), r)
    }

    /// The four joining flows of `four_flows` on any network.
    fn four_flows_on(net: &Net, cc: &CcSpec, secs: f64, seed: u64) -> SimResult {
        let flows: Vec<FlowSpec> = (0..4)
            .map(|i| FlowSpec::long(cc.clone(), 0.040, 2.0 * i as f64, secs))
            .collect();
        simulate(net, &flows, seed, 2.0 * secs)
    }

    /// The Allegro paper's buffer for RTT fairness (§4.1.5), one BDP of the
    /// 10 ms flow: 12 Mb/s x 10 ms in 1078-byte frames, as
    /// `topo/experiments/rtt-fairness.toml`.
    const SHORT_FLOW_BDP_PKTS: f64 = 14.0;

    /// Two flows, 12 Mb/s, 10 ms against `long_rtt_s` RTT, the long one
    /// started 5 s earlier (Allegro paper §4.1.5), in bmv2's 64-packet
    /// queue: short-RTT goodput over long-RTT goodput from 10 s to 40 s.
    /// Not the paper's buffer (one BDP of the 10 ms flow, 14 packets): there
    /// Vivace gives the short flow 2.2-2.7x in Mininet over 150-300 s and
    /// about 2x in this model, whose long flow loses 1.4-2x the short one's
    /// share of its packets (2-4x with 64 packets, where seed 1 gives 1.9;
    /// `explore_rtt_fairness`, docs/experiments.md "Results (session 11)").
    fn rtt_ratio(cc: &CcSpec, long_rtt_s: f64, seed: u64) -> f64 {
        let r = rtt_pair(cc, long_rtt_s, &Net::bottleneck(12_000.0, 64.0), 40.0, seed);
        r.flows[0].goodput(10.0, 40.0) / r.flows[1].goodput(10.0, 40.0).max(1.0)
    }

    /// The flows of `rtt_ratio` on `net` until `secs`: the 10 ms flow first.
    fn rtt_pair(cc: &CcSpec, long_rtt_s: f64, net: &Net, secs: f64, seed: u64) -> SimResult {
        let flows = [
            FlowSpec::long(cc.clone(), 0.010, 5.0, secs),
            FlowSpec::long(cc.clone(), long_rtt_s, 0.0, secs),
        ];
        simulate(net, &flows, seed, 2.0 * secs)
    }

    /// Two flows, 12 Mb/s, 40 ms; the rate halves at 10 s and is restored at
    /// 20 s (the bandwidth-change experiment): seconds after each change
    /// until both flows' goodput (0.5 s means) stays within 20% of the new
    /// fair share for 1 s (None: not within 10 s).
    fn bandwidth_change(cc: &CcSpec, jitter_s: f64, seed: u64) -> [Option<f64>; 2] {
        times_to_share(&bandwidth_change_run(cc, jitter_s, seed))
    }

    /// The bottleneck's rate changes of the bandwidth-change scenario: (time, kb/s).
    const RATE_CHANGES: [(f64, f64); 2] = [(10.0, 6_000.0), (20.0, 12_000.0)];

    fn bandwidth_change_run(cc: &CcSpec, jitter_s: f64, seed: u64) -> SimResult {
        let net = Net {
            arrival_jitter_s: jitter_s,
            rate_changes: RATE_CHANGES.to_vec(),
            ..Net::bottleneck(12_000.0, 64.0)
        };
        let flows = [
            FlowSpec::long(cc.clone(), 0.040, 0.0, 30.0),
            FlowSpec::long(cc.clone(), 0.040, 0.0, 30.0),
        ];
        simulate(&net, &flows, seed, 60.0)
    }

    fn times_to_share(r: &SimResult) -> [Option<f64>; 2] {
        RATE_CHANGES.map(|(at, rate)| {
            let fair = rate / 2.0 * 1000.0 / 1078.0;
            let near = |t: f64| {
                r.flows
                    .iter()
                    .all(|f| (f.goodput(t, t + 0.5) / fair - 1.0).abs() <= 0.2)
            };
            (0..90)
                .map(|k| at + 0.1 * k as f64)
                .find(|&t| (0..=10).all(|k| near(t + 0.05 * k as f64)))
                .map(|t| t - at)
        })
    }

    #[test]
    fn pcc_fills_a_lossless_link() {
        for cc in [ALLEGRO, ALLEGRO_REF, VIVACE, VIVACE_LOSS] {
            let u = alone(&cc, 0.0, 0.0, 1);
            assert!(u >= 0.9, "{}: {u:.3}", cc.name());
        }
    }

    /// Allegro paper Fig. 7 (> 95% at 1% loss, 74% at 2%); Vivace-Loss
    /// likewise (Vivace paper Fig. 2): the loss here is both ways.
    #[test]
    fn allegro_and_vivace_loss_keep_their_rate_under_random_loss() {
        for cc in [ALLEGRO, VIVACE_LOSS] {
            let u1 = alone(&cc, 0.01, 0.0, 1);
            let u2 = alone(&cc, 0.02, 0.0, 1);
            assert!(u1 >= 0.9 && u2 >= 0.7, "{}: {u1:.3} at 1%, {u2:.3} at 2%", cc.name());
        }
    }

    #[test]
    fn vivace_ignores_ack_jitter() {
        let u = alone(&VIVACE, 0.0, 0.004, 1);
        assert!(u >= 0.85, "{u:.3}");
    }

    #[test]
    fn four_vivace_flows_converge() {
        for cc in [VIVACE, VIVACE_LOSS] {
            let (j, r) = four_flows(&cc, 0.0, 30.0, 1);
            let u = r.utilisation(20.0, 30.0, 12_000.0);
            assert!(j >= 0.9 && u >= 0.9, "{}: Jain {j:.3}, utilisation {u:.3}", cc.name());
        }
    }

    #[test]
    fn vivace_is_rtt_fair() {
        let q = rtt_ratio(&VIVACE, 0.100, 1);
        assert!((0.5..=2.0).contains(&q), "10 ms / 100 ms goodput {q:.2}");
    }

    /// Issue 12's target (within 20% of the new share <= 5 s after the
    /// halving), and why `vivace` has no emergency stop: with pcc.h's, the
    /// flow whose MIs lost more is halved alone and the two draw together
    /// slowly (vivace.rs, the module documentation).
    #[test]
    fn vivace_reaches_the_halved_share_within_5_s_without_the_emergency_stop() {
        let after_halving = |cc: &CcSpec, seed| bandwidth_change(cc, 0.0, seed)[0];
        for seed in 1..=4 {
            let t = after_halving(&VIVACE, seed);
            assert!(t.is_some_and(|t| t <= 5.0), "seed {seed}: {t:?}");
        }
        let stop = CcSpec::Vivace(Variant::Stop);
        let slow = (1..=4).filter(|&seed| after_halving(&stop, seed).is_none_or(|t| t > 5.0));
        assert!(slow.count() >= 1, "vivace-stop settled in every seed");
    }

    /// Allegro's fairness comes slowly at these rates (tens of packets per
    /// MI near the 5% loss cliff: hosts/README.md, "PCC on the test bed");
    /// the reference's flows share the link within a minute.
    #[test]
    fn four_allegro_ref_flows_converge_within_a_minute() {
        let (j, _) = four_flows(&ALLEGRO_REF, 0.0, 60.0, 1);
        assert!(j >= 0.9, "Jain {j:.3} over 50-60 s");
    }

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
            Err(_) => vec![ALLEGRO, ALLEGRO_REF, VIVACE, VIVACE_LOSS],
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
    /// its MIs until `SIM_SECS` (`SIM_CC`, `SIM_SEEDS`).
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
                eprintln!("{} seed {seed}", cc.name());
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
}

//! A simulated network for tests, in virtual time: several flows, each with
//! its own round-trip time, share one drop-tail bottleneck served at a fixed
//! rate (which may change at given times). Data packets may be lost at
//! random before the queue, reach it late (arrival jitter) or skip the
//! propagation delay (reordering); an optional RCP router stamps a rate into
//! them; ACKs may be lost at random or arrive late (ACK jitter). The real
//! `SenderFlow`s, one `Receiver` and the real controllers run on it.
//! Deterministic for a seed; no sockets, no root.
//!
//! Shared by the integration tests `testbed_*.rs`; [`scenarios`] holds the
//! PCC scenarios that mirror the Mininet experiments.
#![allow(dead_code)]

pub mod scenarios;

use p4rcp_host::cc::CcSpec;
use p4rcp_host::transport::receiver::{Receiver, RECV_WINDOW};
use p4rcp_host::transport::record::{FlowRecord, RecvRecord, TraceLine};
use p4rcp_host::transport::sender::{FlowParams, SenderFlow};
use p4rcp_host::transport::wire::{Packet, PktType, FLAG_ENDING, RCP_HEADER_LEN, RCP_SIZE_OFFSET};
use p4rcp_host::transport::Outbox;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

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
    /// The size field of each DATA packet flagged ENDING that reached the queue.
    pub ending_sizes: Vec<u16>,
    /// REF probes that reached the queue.
    pub refs: u64,
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
    ending_sizes: Vec<u16>,
    refs: u64,
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
            if ty == PktType::Data as u8 || ty == PktType::Syn as u8 || ty == PktType::Ref as u8 {
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
        if d.len() >= RCP_HEADER_LEN && d[0] & 0x0f == PktType::Data as u8 && d[1] & FLAG_ENDING != 0 {
            self.ending_sizes.push(u16::from_be_bytes([d[RCP_SIZE_OFFSET], d[RCP_SIZE_OFFSET + 1]]));
        }
        if d.len() >= RCP_HEADER_LEN && d[0] & 0x0f == PktType::Ref as u8 {
            self.refs += 1;
        }
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
        ending_sizes: Vec::new(),
        refs: 0,
        last_at_queue: vec![0.0; flows.len()],
        last_at_sender: vec![0.0; flows.len()],
    };
    for &(t, r) in &net.rate_changes {
        sim.at(t, Ev::RateChange(r));
    }
    let mut senders: Vec<Option<SenderFlow>> = (0..flows.len()).map(|_| None).collect();
    let mut finished: Vec<Option<FlowResult>> = (0..flows.len()).map(|_| None).collect();
    let mut recv_records: Vec<Option<RecvRecord>> = vec![None; flows.len()];
    let mut rx = Receiver::new(1e9, RECV_WINDOW);
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
                        dscp: 0,
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
        ending_sizes: sim.ending_sizes,
        refs: sim.refs,
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

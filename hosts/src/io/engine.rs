//! The event loops: one thread, one UDP socket, many flows.
//!
//! The sender loop keeps a binary heap of (deadline, flow id). Each flow says
//! when it next needs attention (`next_wake`); the loop sleeps in `ppoll`
//! until the earliest deadline or an incoming datagram, then runs what is
//! due. No flow ever spins: a flow that is early simply is not called.

use crate::cc::RateController;
use crate::io::net;
use crate::io::sink::Sink;
use crate::transport::receiver::{Receiver, RECV_WINDOW};
use crate::transport::sender::{FlowParams, SenderFlow};
use crate::transport::wire::Packet;
use crate::transport::Tx;
use crate::workload::arrivals::Arrivals;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Queues datagrams in a [`net::SendBatch`], flushing it when full.
pub struct BatchTx<'a> {
    pub batch: &'a mut net::SendBatch,
    pub fd: i32,
}

impl Tx for BatchTx<'_> {
    fn send(&mut self, buf: &[u8], dst: SocketAddr) -> bool {
        if self.batch.is_full() {
            self.batch.flush(self.fd);
        }
        self.batch.push(buf, dst);
        true
    }
}

/// Counters of the sender loop.
#[derive(Debug, Default, serde::Serialize)]
pub struct SendStats {
    pub datagrams: u64,
    pub malformed: BTreeMap<&'static str, u64>,
    pub unknown_flow: u64,
    pub send_errors: u64,
    pub flows_started: u64,
    pub flows_completed: u64,
    pub flows_failed: u64,
    pub cpu_s: f64,
    pub wall_s: f64,
}

pub struct SenderEngine {
    sock: UdpSocket,
    t0: Instant,
    flows: HashMap<u32, SenderFlow>,
    armed: HashMap<u32, u64>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    records: Sink,
    trace: Option<Sink>,
    sendq: net::SendBatch,
    recvq: net::RecvBatch,
    pub stats: SendStats,
}

/// Datagrams per recvmmsg / sendmmsg call.
const BATCH: usize = 64;
/// Receive buffer per datagram: the largest MSS (8192) plus headers.
const DGRAM_MAX: usize = 8192 + 64;

fn to_ns(t: f64) -> u64 {
    (t * 1e9).ceil().max(0.0) as u64
}

impl SenderEngine {
    pub fn new(sock: UdpSocket, records: Sink, trace: Option<Sink>) -> SenderEngine {
        SenderEngine {
            sock,
            t0: Instant::now(),
            flows: HashMap::new(),
            armed: HashMap::new(),
            heap: BinaryHeap::new(),
            records,
            trace,
            sendq: net::SendBatch::new(BATCH),
            recvq: net::RecvBatch::new(BATCH, DGRAM_MAX),
            stats: SendStats::default(),
        }
    }

    /// Seconds on the engine clock.
    pub fn now(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }

    fn add_flow(&mut self, p: FlowParams, cc: Box<dyn RateController>, now: f64) {
        let id = p.flow_id;
        if self.flows.contains_key(&id) {
            eprintln!("p4rcp-host: flow id {id} already in use; flow skipped");
            return;
        }
        self.stats.flows_started += 1;
        self.flows.insert(id, SenderFlow::new(p, cc, now, net::unix_now()));
        self.after(id, now);
    }

    /// Write out what the flow produced; remove it if done, else re-arm.
    fn after(&mut self, id: u32, _now: f64) {
        let Some(f) = self.flows.get_mut(&id) else { return };
        if let Some(t) = &self.trace {
            for line in f.take_trace() {
                t.write_noflush(&line);
            }
        }
        if f.is_done() {
            let rec = f.record();
            if rec.completed {
                self.stats.flows_completed += 1;
            } else {
                self.stats.flows_failed += 1;
            }
            self.records.write(&rec);
            self.flows.remove(&id);
            self.armed.remove(&id);
            return;
        }
        let w = f.next_wake();
        if !w.is_finite() {
            return;
        }
        let ns = to_ns(w);
        match self.armed.get(&id) {
            Some(&a) if a <= ns => {}
            _ => {
                self.armed.insert(id, ns);
                self.heap.push(Reverse((ns, id)));
            }
        }
    }

    /// Run until every arrival has been started and every flow has ended
    /// (or SIGINT/SIGTERM).
    pub fn run(&mut self, arrivals: &mut dyn Arrivals) {
        let fd = self.sock.as_raw_fd();
        let cpu0 = net::cpu_seconds();
        loop {
            let now = self.now();
            if net::stopping() {
                let ids: Vec<u32> = self.flows.keys().copied().collect();
                for id in ids {
                    if let Some(f) = self.flows.get_mut(&id) {
                        f.interrupt();
                    }
                    self.after(id, now);
                }
                break;
            }
            while let Some(t) = arrivals.next_time() {
                if t > now {
                    break;
                }
                match arrivals.take(now) {
                    Some((p, cc)) => self.add_flow(p, cc, now),
                    None => break,
                }
            }
            self.run_timers(fd);
            self.receive(fd);
            if arrivals.next_time().is_none() && self.flows.is_empty() {
                break;
            }
            // sleep until the next deadline or a datagram
            let now = self.now();
            let mut next = f64::INFINITY;
            if let Some(Reverse((ns, _))) = self.heap.peek() {
                next = *ns as f64 / 1e9;
            }
            if let Some(t) = arrivals.next_time() {
                next = next.min(t);
            }
            let wait = (next - now).clamp(0.0, 1.0);
            if wait > 0.0 {
                net::wait_readable(fd, Some(Duration::from_secs_f64(wait)));
            }
        }
        if let Some(t) = &self.trace {
            t.flush();
        }
        self.stats.cpu_s = net::cpu_seconds() - cpu0;
        self.stats.wall_s = self.now();
    }

    fn run_timers(&mut self, fd: i32) {
        loop {
            let now = self.now();
            let now_ns = to_ns(now);
            let Some(&Reverse((ns, id))) = self.heap.peek() else {
                break;
            };
            if ns > now_ns {
                break;
            }
            self.heap.pop();
            if self.armed.get(&id) != Some(&ns) {
                continue; // superseded by an earlier deadline
            }
            self.armed.remove(&id);
            let mut tx = BatchTx {
                batch: &mut self.sendq,
                fd,
            };
            if let Some(f) = self.flows.get_mut(&id) {
                f.on_timer(now, &mut tx);
            }
            self.after(id, now);
        }
        self.sendq.flush(fd);
        self.stats.send_errors = self.sendq.errors;
    }

    fn receive(&mut self, fd: i32) {
        for _ in 0..16 {
            let got = self.recvq.recv(fd);
            for i in 0..got {
                let (data, _peer) = self.recvq.get(i);
                self.stats.datagrams += 1;
                let pkt = match Packet::parse(data) {
                    Ok(p) => p,
                    Err(e) => {
                        *self.stats.malformed.entry(e.reason()).or_insert(0) += 1;
                        continue;
                    }
                };
                let id = pkt.common.flow_id;
                let now = self.t0.elapsed().as_secs_f64();
                let mut tx = BatchTx {
                    batch: &mut self.sendq,
                    fd,
                };
                match self.flows.get_mut(&id) {
                    Some(f) => f.on_packet(&pkt, now, &mut tx),
                    None => {
                        self.stats.unknown_flow += 1;
                        continue;
                    }
                }
                self.after(id, now);
            }
            self.sendq.flush(fd);
            if got < BATCH {
                break;
            }
        }
        self.stats.send_errors = self.sendq.errors;
    }
}

/// Run a receiver on `sock` until `until` (engine seconds) or a signal.
pub fn run_receiver(sock: UdpSocket, idle_timeout: f64, until: Option<f64>, out: Option<Sink>) -> Receiver {
    let t0 = Instant::now();
    let fd = sock.as_raw_fd();
    let mut rx = Receiver::new(idle_timeout, RECV_WINDOW);
    let mut recvq = net::RecvBatch::new(BATCH, DGRAM_MAX);
    let mut sendq = net::SendBatch::new(BATCH);
    loop {
        let now = t0.elapsed().as_secs_f64();
        if net::stopping() || until.is_some_and(|u| now >= u) {
            rx.close_all(now);
            break;
        }
        let unix = net::unix_now();
        for _ in 0..16 {
            let got = recvq.recv(fd);
            let now = t0.elapsed().as_secs_f64();
            for i in 0..got {
                let (data, peer) = recvq.get(i);
                let Some(peer) = peer else { continue };
                let mut tx = BatchTx { batch: &mut sendq, fd };
                rx.on_datagram(data, peer, now, unix, &mut tx);
            }
            sendq.flush(fd);
            if got < BATCH {
                break;
            }
        }
        rx.on_timer(now);
        if let Some(o) = &out {
            for r in rx.take_records() {
                o.write(&r);
            }
        } else {
            rx.take_records();
        }
        let mut wait = (rx.next_wake() - t0.elapsed().as_secs_f64()).clamp(0.0, 1.0);
        if let Some(u) = until {
            wait = wait.min((u - now).max(0.0));
        }
        if wait > 0.0 {
            net::wait_readable(fd, Some(Duration::from_secs_f64(wait)));
        }
    }
    if let Some(o) = &out {
        for r in rx.take_records() {
            o.write(&r);
        }
    }
    rx
}

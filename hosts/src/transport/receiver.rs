//! The receiving side: one state per (sender address, flow id). The
//! "application" checks every byte against the flow's pattern once, when it
//! first arrives (its verdict does not depend on the order), and the
//! receiver keeps which bytes it holds above the cumulative ack as ranges,
//! not copies: the cumulative ack advances over them once the hole below is
//! filled. Every DATA packet is acknowledged (duplicates too), echoing the
//! rate the routers stamped into it.
//!
//! Like the sender, this is pure logic: time and a [`Tx`] come from the caller.

use crate::transport::rangeset::RangeSet;
use crate::transport::record::{round, RecvRecord};
use crate::transport::xcp_header::XcpHeader;
use crate::transport::wire::{
    self, Body, Common, Packet, ParseError, RcpHeader, Sacks, MAX_SACKS, SIZE_UNKNOWN, STATUS_VERIFIED,
};
use crate::transport::Tx;
use crate::transport::pattern;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;

/// Bytes beyond the cumulative ack a receiver buffers (announced in SYNACK
/// and every ACK), unless it is given another window.
pub const RECV_WINDOW: u32 = 16 << 20;
/// How long a closed flow is remembered (to answer repeated FINs and drop
/// late duplicates quietly).
const TOMBSTONE_S: f64 = 30.0;
/// How often idle flows and old tombstones are looked for.
const GC_PERIOD_S: f64 = 1.0;

struct RecvFlow {
    flow_id: u32,
    peer: SocketAddr,
    size: Option<u64>,
    cc: u8,
    created: f64,
    created_unix: f64,
    last_active: f64,
    /// Every byte below `cum` arrived.
    cum: u64,
    /// Which bytes above `cum` arrived (each checked when it did).
    have: RangeSet,
    verified: bool,
    data_pkts: u64,
    dup_pkts: u64,
    /// Wall clock when `cum` last advanced: the last byte's arrival once the flow is whole (its size
    /// announced in the SYN, or, for an open-ended flow, in the FIN).
    cum_advanced_unix: Option<f64>,
}

impl RecvFlow {
    /// The application checks `data`, the flow's bytes from `offset` on.
    fn check(&mut self, offset: u64, data: &[u8]) {
        if !pattern::check(self.flow_id, offset, data) {
            self.verified = false;
        }
    }

    /// Accept DATA `[off, off + payload.len())` within `window` bytes of
    /// the cumulative ack; false if nothing was new.
    fn on_data(&mut self, off: u64, payload: &[u8], window: u32) -> bool {
        let end = off + payload.len() as u64;
        if end <= self.cum {
            return false;
        }
        if off == self.cum && self.have.is_empty() {
            self.check(off, payload); // in-order fast path
            self.cum = end;
            return true;
        }
        let from = off.max(self.cum);
        // Data entirely beyond the window leaves nothing to accept (from >= to).
        let to = end.min(self.cum + window as u64).max(from);
        let mut new = false;
        for (s, e) in self.have.missing(from, to) {
            self.check(s, &payload[(s - off) as usize..(e - off) as usize]);
            self.have.insert(s, e);
            new = true;
        }
        self.cum = self.have.run_end(self.cum);
        self.have.trim_below(self.cum);
        new
    }

    /// SACK blocks: first the block holding the latest packet (RFC 2018),
    /// then the lowest others.
    fn sacks(&self, latest: u64) -> Sacks {
        let mut s = Sacks::default();
        let first = self.have.range_of(latest);
        if let Some((a, b)) = first {
            s.push(a, b);
        }
        for (a, b) in self.have.iter() {
            if s.len() >= MAX_SACKS {
                break;
            }
            if Some((a, b)) != first {
                s.push(a, b);
            }
        }
        s
    }

    fn record(&self, now: f64, completed: bool) -> RecvRecord {
        RecvRecord {
            role: "recv",
            flow_id: self.flow_id,
            peer: self.peer.to_string(),
            scheme: wire::cc_name(self.cc).to_string(),
            transport: "udp",
            size_bytes: self.size,
            bytes_delivered: self.cum,
            verified: Some(self.verified),
            completed,
            data_pkts: self.data_pkts,
            duplicate_pkts: self.dup_pkts,
            start_unix_s: round(self.created_unix, 6),
            duration_s: round(now - self.created, 6),
            last_byte_unix_s: if self.size == Some(self.cum) {
                self.cum_advanced_unix.map(|t| round(t, 6))
            } else {
                None
            },
        }
    }
}

/// Counters of what the receiver saw.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RecvStats {
    pub datagrams: u64,
    pub malformed: BTreeMap<&'static str, u64>,
    /// Well-formed datagrams for no known flow, or of a type a receiver
    /// does not take (ACK, SYNACK, FINACK).
    pub unexpected: u64,
    pub flows_opened: u64,
    pub flows_completed: u64,
    pub flows_expired: u64,
}

pub struct Receiver {
    flows: HashMap<(SocketAddr, u32), RecvFlow>,
    /// Closed flows: (when closed, FINACK status, final cum).
    closed: HashMap<(SocketAddr, u32), (f64, u8, u64)>,
    idle_timeout: f64,
    window: u32,
    next_gc: f64,
    pub stats: RecvStats,
    buf: Vec<u8>,
    records: Vec<RecvRecord>,
}

impl Receiver {
    /// A receiver that forgets flows idle for `idle_timeout` seconds and
    /// buffers `window` bytes beyond each flow's cumulative ack
    /// ([`RECV_WINDOW`] on the hosts).
    pub fn new(idle_timeout: f64, window: u32) -> Receiver {
        Receiver {
            flows: HashMap::new(),
            closed: HashMap::new(),
            idle_timeout,
            window,
            next_gc: 0.0,
            stats: RecvStats::default(),
            buf: Vec::with_capacity(256),
            records: Vec::new(),
        }
    }

    /// When the receiver next needs `on_timer` (infinity: never, while it
    /// holds no flow).
    pub fn next_wake(&self) -> f64 {
        if self.flows.is_empty() && self.closed.is_empty() {
            f64::INFINITY
        } else {
            self.next_gc
        }
    }

    /// Do whatever is due at `now`: forget idle flows (recording them as
    /// incomplete) and old tombstones, once per [`GC_PERIOD_S`].
    pub fn on_timer(&mut self, now: f64) {
        if now >= self.next_gc {
            self.gc(now);
            self.next_gc = now + GC_PERIOD_S;
        }
    }

    /// Records of flows that ended since the last call.
    pub fn take_records(&mut self) -> Vec<RecvRecord> {
        std::mem::take(&mut self.records)
    }

    /// Answer a packet: `feedback` is its stamped rate, `xcp` the echo of its
    /// XCP congestion header's feedback (for XCP flows).
    fn reply(&mut self, tx: &mut dyn Tx, peer: SocketAddr, feedback: u32, xcp: Option<XcpHeader>, common: Common,
             body: Body) {
        let mut rcp = RcpHeader::new(body.ptype());
        rcp.feedback_kbps = feedback;
        Packet { rcp, xcp, common, body }.encode(&mut self.buf);
        let _ = tx.send(&self.buf, peer); // a lost ACK is like a lost packet
    }

    /// Handle one UDP payload from `peer`.
    pub fn on_datagram(&mut self, data: &[u8], peer: SocketAddr, now: f64, now_unix: f64, tx: &mut dyn Tx) {
        self.stats.datagrams += 1;
        let pkt = match Packet::parse(data) {
            Ok(p) => p,
            Err(e) => {
                self.count_malformed(e);
                return;
            }
        };
        let key = (peer, pkt.common.flow_id);
        let echo = pkt.common;
        let stamped = pkt.rcp.rate_kbps;
        let xcp_echo = pkt.xcp.map(|x| x.echo());
        match pkt.body {
            Body::Syn { total_size, mss: _, cc } => {
                if let Some(&(_, status, cum)) = self.closed.get(&key) {
                    // a SYN that wandered in after the close: say it is over
                    self.reply(tx, peer, stamped, xcp_echo, echo, Body::FinAck { cum_ack: cum, status });
                    return;
                }
                self.flows.entry(key).or_insert_with(|| {
                    self.stats.flows_opened += 1;
                    RecvFlow {
                        flow_id: echo.flow_id,
                        peer,
                        size: if total_size == SIZE_UNKNOWN {
                            None
                        } else {
                            Some(total_size)
                        },
                        cc,
                        created: now,
                        created_unix: now_unix,
                        last_active: now,
                        cum: 0,
                        have: RangeSet::new(),
                        verified: true,
                        data_pkts: 0,
                        dup_pkts: 0,
                        cum_advanced_unix: None,
                    }
                });
                self.reply(tx, peer, stamped, xcp_echo, echo, Body::SynAck { window: self.window });
            }
            Body::Data { offset, payload } => {
                let Some(f) = self.flows.get_mut(&key) else {
                    if !self.closed.contains_key(&key) {
                        self.stats.unexpected += 1;
                    }
                    return;
                };
                f.last_active = now;
                f.data_pkts += 1;
                if let Some(size) = f.size {
                    if offset + payload.len() as u64 > size {
                        f.verified = false; // data beyond the announced size
                    }
                }
                let cum_before = f.cum;
                if !f.on_data(offset, payload, self.window) {
                    f.dup_pkts += 1;
                }
                if f.cum > cum_before {
                    f.cum_advanced_unix = Some(now_unix);
                }
                let sacks = f.sacks(offset);
                let body = Body::Ack {
                    cum_ack: f.cum,
                    window: self.window,
                    sacks,
                };
                self.reply(tx, peer, stamped, xcp_echo, echo, body);
            }
            Body::Fin { final_size } => {
                if let Some(&(_, status, cum)) = self.closed.get(&key) {
                    self.reply(tx, peer, stamped, xcp_echo, echo, Body::FinAck { cum_ack: cum, status });
                    return;
                }
                let Some(f) = self.flows.get(&key) else {
                    self.stats.unexpected += 1;
                    return;
                };
                if f.cum < final_size {
                    // cannot happen with our sender; answer with what we have
                    let body = Body::Ack {
                        cum_ack: f.cum,
                        window: self.window,
                        sacks: f.sacks(f.cum),
                    };
                    self.reply(tx, peer, stamped, xcp_echo, echo, body);
                    return;
                }
                let ok = f.verified && f.cum == final_size && f.size.is_none_or(|s| s == final_size);
                let status = if ok { STATUS_VERIFIED } else { 0 };
                let mut rec = f.record(now, true);
                rec.verified = Some(ok);
                rec.size_bytes = Some(final_size);
                // An open-ended flow is whole now that the FIN gave its size.
                rec.last_byte_unix_s = f.cum_advanced_unix.map(|t| round(t, 6));
                let cum = f.cum;
                self.records.push(rec);
                self.flows.remove(&key);
                self.closed.insert(key, (now, status, cum));
                self.stats.flows_completed += 1;
                self.reply(tx, peer, stamped, xcp_echo, echo, Body::FinAck { cum_ack: cum, status });
            }
            Body::Ref => {
                // A probe of an open flow: its stamped rate goes back to the sender. Nothing is delivered.
                match self.flows.get_mut(&key) {
                    Some(f) => {
                        f.last_active = now;
                        self.reply(tx, peer, stamped, xcp_echo, echo, Body::RefAck);
                    }
                    None => self.stats.unexpected += 1,
                }
            }
            Body::Ack { .. } | Body::SynAck { .. } | Body::FinAck { .. } | Body::RefAck => self.stats.unexpected += 1,
        }
    }

    fn count_malformed(&mut self, e: ParseError) {
        *self.stats.malformed.entry(e.reason()).or_insert(0) += 1;
    }

    /// Forget idle flows (recording them as incomplete) and old tombstones.
    fn gc(&mut self, now: f64) {
        let idle = self.idle_timeout;
        let expired: Vec<(SocketAddr, u32)> = self
            .flows
            .iter()
            .filter(|(_, f)| now - f.last_active > idle)
            .map(|(k, _)| *k)
            .collect();
        for k in expired {
            if let Some(f) = self.flows.remove(&k) {
                self.records.push(f.record(now, false));
                self.stats.flows_expired += 1;
            }
        }
        self.closed.retain(|_, (t, _, _)| now - *t < TOMBSTONE_S);
    }

    /// Record every open flow as incomplete (at exit).
    pub fn close_all(&mut self, now: f64) {
        let flows: Vec<RecvFlow> = self.flows.drain().map(|(_, f)| f).collect();
        for f in flows {
            self.records.push(f.record(now, false));
        }
    }

    #[cfg(test)]
    pub fn held_bytes(&self) -> u64 {
        self.flows.values().map(|f| f.have.total_bytes()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::wire::PktType;
    use crate::transport::Outbox;

    fn peer() -> SocketAddr {
        SocketAddr::from(([10, 0, 0, 1], 40000))
    }

    fn pkt(body: Body, rate: u32) -> Vec<u8> {
        let mut rcp = RcpHeader::new(body.ptype());
        rcp.rate_kbps = rate;
        let mut out = Vec::new();
        Packet {
            rcp,
            xcp: None,
            common: Common {
                flow_id: 9,
                pkt_seq: 1,
                ts_us: 5,
            },
            body,
        }
        .encode(&mut out);
        out
    }

    fn data(off: u64, len: usize) -> Vec<u8> {
        let mut payload = vec![0u8; len];
        pattern::fill(9, off, &mut payload);
        pkt(
            Body::Data {
                offset: off,
                payload: &payload,
            },
            7_000,
        )
    }

    fn last_ack(tx: &Outbox) -> (u64, Vec<(u64, u64)>, u32) {
        let p = Packet::parse(tx.0.last().map(|(_, v)| v.as_slice()).unwrap_or(&[])).unwrap_or_else(|e| panic!("{e}"));
        match p.body {
            Body::Ack { cum_ack, sacks, .. } => (cum_ack, sacks.as_slice().to_vec(), p.rcp.feedback_kbps),
            b => panic!("not an ACK: {b:?}"),
        }
    }

    fn open(rx: &mut Receiver, tx: &mut Outbox, size: u64) {
        rx.on_datagram(
            &pkt(
                Body::Syn {
                    total_size: size,
                    mss: 1000,
                    cc: 1,
                },
                9_000,
            ),
            peer(),
            0.0,
            0.0,
            tx,
        );
        let p = Packet::parse(&tx.0[0].1).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.body, Body::SynAck { window: rx.window });
        assert_eq!(p.rcp.feedback_kbps, 9_000); // the SYN's stamped rate echoed
        assert_eq!(
            p.common,
            Common {
                flow_id: 9,
                pkt_seq: 1,
                ts_us: 5
            }
        );
    }

    #[test]
    fn an_xcp_packets_feedback_is_echoed_and_a_plain_ones_answer_has_none() {
        let mut rx = Receiver::new(60.0, RECV_WINDOW);
        let mut tx = Outbox::default();
        open(&mut rx, &mut tx, 4000);
        let send = |rx: &mut Receiver, tx: &mut Outbox, xcp: Option<XcpHeader>, offset: u64| {
            let mut out = Vec::new();
            Packet {
                rcp: RcpHeader::new(PktType::Data),
                xcp,
                common: Common {
                    flow_id: 9,
                    pkt_seq: 2,
                    ts_us: 5,
                },
                body: Body::Data {
                    offset,
                    payload: &[0; 1000],
                },
            }
            .encode(&mut out);
            rx.on_datagram(&out, peer(), 0.1, 0.1, tx);
            Packet::parse(&tx.0.last().expect("an answer").1).map(|p| p.xcp).unwrap_or_else(|e| panic!("{e}"))
        };
        let forward = XcpHeader {
            cwnd_bytes: 30_000,
            x_ns: 4_000_000,
            feedback: -777,
        };
        assert_eq!(send(&mut rx, &mut tx, Some(forward), 0), Some(forward.echo()));
        assert_eq!(forward.echo().feedback, -777);
        assert_eq!(send(&mut rx, &mut tx, None, 1000), None);
    }

    #[test]
    fn reassembles_out_of_order_and_sacks() {
        let mut rx = Receiver::new(60.0, RECV_WINDOW);
        let mut tx = Outbox::default();
        open(&mut rx, &mut tx, 4000);
        rx.on_datagram(&data(2000, 1000), peer(), 0.1, 0.0, &mut tx);
        assert_eq!(last_ack(&tx), (0, vec![(2000, 3000)], 7_000));
        rx.on_datagram(&data(0, 1000), peer(), 0.1, 0.0, &mut tx);
        assert_eq!(last_ack(&tx).0, 1000);
        assert_eq!(rx.held_bytes(), 1000);
        // an overlapping retransmission fills the hole
        rx.on_datagram(&data(800, 1200), peer(), 0.1, 0.0, &mut tx);
        assert_eq!(last_ack(&tx), (3000, vec![], 7_000));
        assert_eq!(rx.held_bytes(), 0);
        // a duplicate is acknowledged and counted
        rx.on_datagram(&data(0, 1000), peer(), 0.1, 0.0, &mut tx);
        assert_eq!(last_ack(&tx).0, 3000);
        rx.on_datagram(&data(3000, 1000), peer(), 0.1, 0.0, &mut tx);
        rx.on_datagram(&pkt(Body::Fin { final_size: 4000 }, 1), peer(), 0.2, 0.0, &mut tx);
        let fin_bytes = tx.0.last().map(|(_, v)| v.clone()).unwrap_or_default();
        let fin = Packet::parse(&fin_bytes).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            fin.body,
            Body::FinAck {
                cum_ack: 4000,
                status: STATUS_VERIFIED
            }
        );
        let recs = rx.take_records();
        assert_eq!(recs.len(), 1);
        assert!(recs[0].verified == Some(true) && recs[0].completed);
        assert_eq!(
            (recs[0].bytes_delivered, recs[0].duplicate_pkts, recs[0].data_pkts),
            (4000, 1, 5)
        );
        // a repeated FIN gets the same answer
        rx.on_datagram(&pkt(Body::Fin { final_size: 4000 }, 1), peer(), 0.3, 0.0, &mut tx);
        assert_eq!(
            Packet::parse(tx.0.last().map(|(_, v)| v.as_slice()).unwrap_or(&[]))
                .map(|p| p.body)
                .ok(),
            Some(fin.body)
        );
    }

    #[test]
    fn last_byte_time_is_when_the_flow_became_whole() {
        let mut rx = Receiver::new(60.0, RECV_WINDOW);
        let mut tx = Outbox::default();
        open(&mut rx, &mut tx, 2000);
        // the last packet first: the flow is not whole until the hole fills
        rx.on_datagram(&data(1000, 1000), peer(), 0.1, 100.0, &mut tx);
        rx.on_datagram(&data(0, 1000), peer(), 0.2, 100.5, &mut tx);
        rx.on_datagram(&data(0, 1000), peer(), 0.3, 101.0, &mut tx); // duplicate
        rx.on_datagram(&pkt(Body::Fin { final_size: 2000 }, 1), peer(), 0.4, 102.0, &mut tx);
        let recs = rx.take_records();
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].last_byte_unix_s, Some(100.5));
    }

    #[test]
    fn an_open_ended_flow_has_its_last_byte_time_from_the_fin() {
        let mut rx = Receiver::new(60.0, RECV_WINDOW);
        let mut tx = Outbox::default();
        open(&mut rx, &mut tx, SIZE_UNKNOWN);
        rx.on_datagram(&data(0, 1000), peer(), 0.1, 100.0, &mut tx);
        rx.on_datagram(&data(1000, 1000), peer(), 0.2, 100.5, &mut tx);
        rx.on_datagram(&data(1000, 1000), peer(), 0.3, 101.0, &mut tx); // duplicate
        rx.on_datagram(&pkt(Body::Fin { final_size: 2000 }, 1), peer(), 0.4, 102.0, &mut tx);
        let recs = rx.take_records();
        assert_eq!(
            (recs.len(), recs[0].size_bytes, recs[0].last_byte_unix_s),
            (1, Some(2000), Some(100.5))
        );
    }

    #[test]
    fn an_unfinished_flow_has_no_last_byte_time() {
        let mut rx = Receiver::new(60.0, RECV_WINDOW);
        let mut tx = Outbox::default();
        open(&mut rx, &mut tx, 2000);
        rx.on_datagram(&data(0, 1000), peer(), 0.1, 100.0, &mut tx);
        rx.close_all(1.0);
        let recs = rx.take_records();
        assert_eq!((recs.len(), recs[0].last_byte_unix_s), (1, None));
    }

    #[test]
    fn sack_blocks_put_the_latest_first() {
        let mut rx = Receiver::new(60.0, RECV_WINDOW);
        let mut tx = Outbox::default();
        open(&mut rx, &mut tx, 100_000);
        for off in [2000, 4000, 6000, 8000, 10000] {
            rx.on_datagram(&data(off, 1000), peer(), 0.1, 0.0, &mut tx);
        }
        // latest (10000) first, then the lowest others, 4 at most
        assert_eq!(
            last_ack(&tx).1,
            vec![(10000, 11000), (2000, 3000), (4000, 5000), (6000, 7000)]
        );
    }

    #[test]
    fn corrupt_content_is_reported() {
        let mut rx = Receiver::new(60.0, RECV_WINDOW);
        let mut tx = Outbox::default();
        open(&mut rx, &mut tx, 1000);
        let mut d = data(0, 1000);
        let n = d.len();
        d[n - 1] ^= 0xff;
        rx.on_datagram(&d, peer(), 0.1, 0.0, &mut tx);
        rx.on_datagram(&pkt(Body::Fin { final_size: 1000 }, 1), peer(), 0.2, 0.0, &mut tx);
        let fin = Packet::parse(tx.0.last().map(|(_, v)| v.as_slice()).unwrap_or(&[]))
            .map(|p| p.body)
            .ok();
        assert_eq!(
            fin,
            Some(Body::FinAck {
                cum_ack: 1000,
                status: 0
            })
        );
        assert_eq!(rx.take_records()[0].verified, Some(false));
    }

    #[test]
    fn the_timer_is_due_only_while_the_receiver_holds_flows() {
        let mut rx = Receiver::new(5.0, RECV_WINDOW);
        let mut tx = Outbox::default();
        assert!(rx.next_wake().is_infinite());
        open(&mut rx, &mut tx, 10_000);
        assert_eq!(rx.next_wake(), 0.0);
        rx.on_timer(0.5);
        assert_eq!(rx.next_wake(), 1.5);
        rx.on_timer(1.0); // not due: nothing happens
        assert_eq!(rx.next_wake(), 1.5);
        // idle since 0: expired at the first look after 5 s, then nothing is held
        rx.on_timer(6.0);
        assert_eq!(rx.take_records().len(), 1);
        assert!(rx.next_wake().is_infinite());
    }

    #[test]
    fn data_beyond_the_window_is_not_held() {
        let mut rx = Receiver::new(60.0, 2000);
        let mut tx = Outbox::default();
        open(&mut rx, &mut tx, 10_000);
        rx.on_datagram(&data(1000, 1000), peer(), 0.1, 0.0, &mut tx);
        rx.on_datagram(&data(3000, 1000), peer(), 0.1, 0.0, &mut tx); // beyond cum + 2000
        assert_eq!(last_ack(&tx), (0, vec![(1000, 2000)], 7_000));
        assert_eq!(rx.held_bytes(), 1000);
    }

    #[test]
    fn corrupt_content_out_of_order_is_reported() {
        let mut rx = Receiver::new(60.0, RECV_WINDOW);
        let mut tx = Outbox::default();
        open(&mut rx, &mut tx, 2000);
        let mut late = data(1000, 1000);
        let n = late.len();
        late[n - 1] ^= 0xff;
        rx.on_datagram(&late, peer(), 0.1, 0.0, &mut tx); // held above the hole, checked now
        rx.on_datagram(&data(0, 1000), peer(), 0.2, 0.0, &mut tx);
        assert_eq!(last_ack(&tx).0, 2000);
        rx.on_datagram(&pkt(Body::Fin { final_size: 2000 }, 1), peer(), 0.3, 0.0, &mut tx);
        assert_eq!(rx.take_records()[0].verified, Some(false));
    }

    #[test]
    fn idle_flows_expire_and_strangers_are_counted() {
        let mut rx = Receiver::new(5.0, RECV_WINDOW);
        let mut tx = Outbox::default();
        open(&mut rx, &mut tx, 10_000);
        rx.on_datagram(&data(0, 1000), peer(), 1.0, 0.0, &mut tx);
        // DATA of an unknown flow, an ACK, garbage
        let other = SocketAddr::from(([10, 0, 0, 3], 1));
        rx.on_datagram(&data(0, 1000), other, 1.0, 0.0, &mut tx);
        rx.on_datagram(
            &pkt(
                Body::Ack {
                    cum_ack: 0,
                    window: 0,
                    sacks: Sacks::default(),
                },
                0,
            ),
            peer(),
            1.0,
            0.0,
            &mut tx,
        );
        rx.on_datagram(&[1, 2, 3], peer(), 1.0, 0.0, &mut tx);
        assert_eq!(rx.stats.unexpected, 2);
        assert_eq!(rx.stats.malformed.get("too_short"), Some(&1));
        rx.gc(4.0);
        assert!(rx.take_records().is_empty());
        rx.gc(6.5);
        let recs = rx.take_records();
        assert_eq!(recs.len(), 1);
        assert!(!recs[0].completed);
        assert_eq!(recs[0].bytes_delivered, 1000);
        assert_eq!(rx.stats.flows_expired, 1);
    }
}

//! The host transport (`docs/protocol.md`, "Host transport"): the wire
//! format, one flow's sender, the receiver, the content of a flow's bytes
//! and the records they write. Its parts (handshake, loss detection,
//! monitor intervals, pacing, REF probes, RTT estimation) are private: the
//! sender composes them.
//!
//! Nothing here reads a clock or touches a socket (as quinn-proto): every
//! call gets `now` (seconds on the caller's monotonic clock) and a [`Tx`] to
//! send with, so the same code runs in the event loops of [`crate::io`], on
//! the simulated test bed of the integration tests and in ns-3
//! ([`crate::ffi`]).

mod handshake;
mod loss;
mod monitor;
mod pacer;
pub mod pattern;
mod probe;
mod rangeset;
pub mod receiver;
pub mod record;
mod rtt;
pub mod sender;
pub mod wire;
pub mod xcp_header;

use std::net::SocketAddr;

/// Sends datagrams for a flow.
pub trait Tx {
    /// Send one datagram; false if the socket would block (the flow retries).
    fn send(&mut self, buf: &[u8], dst: SocketAddr) -> bool;
}

/// A [`Tx`] that keeps every datagram with its destination: drives a
/// sender or a receiver without a socket (unit tests, the simulated test
/// bed of the integration tests).
#[derive(Default)]
pub struct Outbox(pub Vec<(SocketAddr, Vec<u8>)>);

impl Tx for Outbox {
    fn send(&mut self, buf: &[u8], dst: SocketAddr) -> bool {
        self.0.push((dst, buf.to_vec()));
        true
    }
}

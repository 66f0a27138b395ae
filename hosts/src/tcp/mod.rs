//! The `tcp` baseline: the kernel's TCP, driven by the same client so that
//! its flow completion time is measured like the UDP schemes'.
//!
//! Client -> server: a 16-byte header (`P4RT`, flow id u32, size u64;
//! size = u64::MAX: until the client half-closes), then the flow's bytes
//! (the same pattern as UDP flows). Server -> client, once it has read all
//! bytes: 16 bytes (`DONE`, status u32 with bit 0 = every byte verified,
//! bytes u64). FCT runs from just before connect() until the client has
//! read that confirmation.

mod client;
mod record;
mod runs;
mod server;

pub use client::{run_flow, TcpFlow};
pub use record::{Confirmation, TcpSent};
pub use runs::{run_at_once, run_traffic, TrafficStats};
pub use server::serve_forever;

pub(crate) const HELLO: &[u8; 4] = b"P4RT";
pub(crate) const DONE: &[u8; 4] = b"DONE";
pub(crate) const CHUNK: usize = 64 * 1024;

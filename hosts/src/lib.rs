//! p4rcp-host: the end hosts of p4rcp (see README.md and docs/protocol.md),
//! as a library under the `p4rcp-host` command line.
//!
//! - [`transport`]: the host transport as a socket-free, clock-free state
//!   machine: wire format, sender, receiver, monitor intervals, records;
//! - [`cc`]: the rate controllers behind one trait;
//! - [`io`]: event loops, sockets and OS helpers, JSON-line sinks;
//! - [`workload`]: flow sizes, flow arrivals, the content pattern;
//! - [`tcp`]: the kernel-TCP baseline;
//! - [`units`]: rates, byte counts and durations of the command line;
//! - [`ffi`]: the transport as a C library (`include/p4rcp_host.h`), which
//!   the ns-3 engine drives.
//!
//! Modules import one way: `units` < `cc` < `transport` < `workload` <
//! `io` < `tcp` < `ffi` (each uses only modules before it; `cli` serves the
//! binaries; `tests/layers.rs` checks it).

pub mod cc;
pub mod cli;
pub mod ffi;
pub mod io;
pub mod tcp;
pub mod transport;
pub mod units;
pub mod workload;

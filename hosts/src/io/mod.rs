//! The I/O around the transport: the event loops on one UDP socket, OS
//! helpers (socket options, precise waits, signals) and the JSON-line sinks.

pub mod engine;
pub mod net;
pub mod sink;

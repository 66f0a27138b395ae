//! The two ends of the link: a TUN device ([`tun`]) or an interface's
//! packet socket ([`packet`]), behind one trait.

pub mod packet;
pub mod tun;

use std::io;
use std::os::fd::RawFd;

/// What one non-blocking read from a port gave.
pub enum Rx {
    /// A packet or frame of this many bytes is in the buffer.
    Packet(usize),
    /// Nothing for the link (e.g. a frame this box sent); read again.
    Skip,
    /// Larger than the buffer: dropped.
    TooBig,
    /// Nothing queued.
    Empty,
    Error(io::Error),
}

/// One end of the emulated link: a TUN device or an interface's packet
/// socket, non-blocking.
pub trait Port {
    fn fd(&self) -> RawFd;
    fn recv(&mut self, buf: &mut [u8]) -> Rx;
    fn send(&mut self, pkt: &[u8]) -> io::Result<()>;
    /// Bytes to add to what `recv` returns to get the Ethernet frame's
    /// length (what `--rate` and `--limit` count).
    fn frame_overhead(&self) -> u64;
    /// Frames whose transport checksum the kernel had left to offload and
    /// this port computed before forwarding them.
    fn checksums_completed(&self) -> u64 {
        0
    }
    /// How long ago (seconds) the packet that `recv` just returned reached
    /// the port, by the kernel's receive timestamp; 0 where there is none.
    /// Arrivals keep the spacing they had on the wire even when linkem
    /// itself was descheduled and reads a batch at once.
    fn rx_age(&self) -> f64 {
        0.0
    }
}

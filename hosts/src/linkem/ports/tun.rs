//! TUN mode: a persistent TUN device, attached in its namespace.

use super::{Port, Rx};
use crate::cli::IFNAMSIZ;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};

/// A persistent TUN device attached in a namespace.
pub struct TunPort(File);

impl TunPort {
    pub fn open(ns: &str, dev: &str) -> io::Result<TunPort> {
        let nsf = File::open(format!("/var/run/netns/{ns}"))?;
        // SAFETY: setns on an open namespace file; affects this thread only.
        if unsafe { libc::setns(nsf.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let f = OpenOptions::new().read(true).write(true).open("/dev/net/tun")?;
        // struct ifreq: name[16], then a short of flags, padded to 40 bytes
        let mut ifr = [0u8; 40];
        ifr[..dev.len()].copy_from_slice(dev.as_bytes());
        let flags = (libc::IFF_TUN | libc::IFF_NO_PI) as i16;
        ifr[IFNAMSIZ..IFNAMSIZ + 2].copy_from_slice(&flags.to_ne_bytes());
        // SAFETY: TUNSETIFF reads/writes a 40-byte ifreq.
        if unsafe { libc::ioctl(f.as_raw_fd(), libc::TUNSETIFF, ifr.as_mut_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fcntl on a valid fd.
        unsafe {
            let fl = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(f.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
        }
        Ok(TunPort(f))
    }
}

impl Port for TunPort {
    fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
    fn recv(&mut self, buf: &mut [u8]) -> Rx {
        match self.0.read(buf) {
            Ok(0) => Rx::Empty,
            Ok(n) => Rx::Packet(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => Rx::Empty,
            Err(e) => Rx::Error(e),
        }
    }
    fn send(&mut self, pkt: &[u8]) -> io::Result<()> {
        self.0.write(pkt).map(|_| ())
    }
    fn frame_overhead(&self) -> u64 {
        14
    }
}

//! `linkem`: a user-space emulated link, for test beds whose kernel has no
//! `sch_netem` (this project's CI VMs ship `tbf` and `htb` but not `netem`).
//!
//! Two modes, one emulation core ([`emulate`]) behind a small [`Port`]
//! trait:
//!
//! - **TUN** (`--ns-a NS --dev-a TUN --ns-b NS --dev-b TUN`): two TUN
//!   devices, each in its own network namespace, created by the caller
//!   (`ip -n NS tuntap add dev NAME mode tun`, addresses, routes, up);
//!   `linkem` attaches to both and moves IP packets between them.
//! - **Ethernet** (`--if-a IFACE --if-b IFACE`): two existing interfaces of
//!   the namespace `linkem` runs in (e.g. the two veth ends of a Mininet
//!   node between a host and a bmv2 switch), each read and written through
//!   an `AF_PACKET`/`SOCK_RAW` socket (`ETH_P_ALL`, bound to the interface,
//!   promiscuous, outgoing frames ignored); whole Ethernet frames are
//!   forwarded byte for byte (a VLAN tag the kernel moved out of the frame
//!   is put back; a transport checksum the sender's kernel left to offload
//!   is computed, as the NIC would have done).
//!
//! Treatment, in both modes:
//!
//! - A -> B (the data direction): random loss (`--loss`), then a drop-tail
//!   bottleneck queue served at `--rate` (frame bytes: IP length + 14 in TUN
//!   mode, the frame's length in Ethernet mode) holding at most `--limit`
//!   bytes, then the one-way `--delay`; with probability `--reorder` a
//!   packet skips the delay (as netem's `reorder`), overtaking earlier ones.
//! - B -> A: `--loss-back`, then `--delay`.
//!
//! One thread, ppoll on both ports, a heap of delivery times; no spinning.
//! SIGINT/SIGTERM end it; the per-direction counters are printed as one JSON
//! line on stderr (and written to `--stats FILE`).

use clap::Args;
use p4rcp_host::io::net;
use p4rcp_host::units;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct LinkemArgs {
    /// TUN mode: namespace of side A (the sender side).
    #[arg(long)]
    ns_a: Option<String>,
    /// TUN mode: TUN device of side A.
    #[arg(long)]
    dev_a: Option<String>,
    /// TUN mode: namespace of side B.
    #[arg(long)]
    ns_b: Option<String>,
    /// TUN mode: TUN device of side B.
    #[arg(long)]
    dev_b: Option<String>,
    /// Ethernet mode: interface of side A (in the current namespace).
    #[arg(long)]
    if_a: Option<String>,
    /// Ethernet mode: interface of side B (in the current namespace).
    #[arg(long)]
    if_b: Option<String>,
    /// One-way delay, applied in each direction.
    #[arg(long, default_value = "0", value_parser = units::parse_duration)]
    delay: Duration,
    /// Loss A->B in percent.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Loss B->A in percent.
    #[arg(long, default_value_t = 0.0)]
    loss_back: f64,
    /// Percent of A->B packets that skip the delay (reordering).
    #[arg(long, default_value_t = 0.0)]
    reorder: f64,
    /// Bottleneck rate A->B (e.g. 20mbit; default: unlimited).
    #[arg(long, value_parser = units::parse_rate_kbps)]
    rate: Option<f64>,
    /// Bottleneck queue A->B in bytes (with --rate).
    #[arg(long, default_value = "75k", value_parser = units::parse_bytes)]
    limit: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also write the final counters (one JSON line) to FILE.
    #[arg(long)]
    stats: Option<String>,
}

const IFNAMSIZ: usize = 16;

/// Which pair of ports to join.
#[derive(Debug, PartialEq)]
enum Mode {
    Tun {
        ns_a: String,
        dev_a: String,
        ns_b: String,
        dev_b: String,
    },
    Ethernet {
        if_a: String,
        if_b: String,
    },
}

/// The link's treatment, common to both modes.
#[derive(Debug, Clone)]
struct Params {
    /// One-way delay, seconds, each direction.
    delay: f64,
    loss: f64,
    loss_back: f64,
    reorder: f64,
    rate_kbps: Option<f64>,
    limit: u64,
    seed: u64,
}

/// Check the arguments: exactly one complete mode, sane percentages.
fn validate(a: &LinkemArgs) -> Result<(Mode, Params), String> {
    let tun = [
        ("--ns-a", &a.ns_a),
        ("--dev-a", &a.dev_a),
        ("--ns-b", &a.ns_b),
        ("--dev-b", &a.dev_b),
    ];
    let eth = [("--if-a", &a.if_a), ("--if-b", &a.if_b)];
    let given = |v: &[(&str, &Option<String>)]| v.iter().filter(|(_, x)| x.is_some()).count();
    let missing = |v: &[(&str, &Option<String>)]| {
        v.iter()
            .filter(|(_, x)| x.is_none())
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mode = match (given(&tun), given(&eth)) {
        (0, 0) => {
            return Err(
                "linkem needs exactly one mode: TUN (--ns-a NS --dev-a TUN --ns-b NS --dev-b TUN) \
                        or Ethernet (--if-a IFACE --if-b IFACE)"
                    .into(),
            )
        }
        (t, e) if t > 0 && e > 0 => {
            return Err(
                "linkem: choose one mode, TUN (--ns-a/--dev-a/--ns-b/--dev-b) or Ethernet \
                        (--if-a/--if-b), not both"
                    .into(),
            )
        }
        (4, 0) => Mode::Tun {
            ns_a: a.ns_a.clone().unwrap_or_default(),
            dev_a: a.dev_a.clone().unwrap_or_default(),
            ns_b: a.ns_b.clone().unwrap_or_default(),
            dev_b: a.dev_b.clone().unwrap_or_default(),
        },
        (_, 0) => {
            return Err(format!(
                "linkem TUN mode needs --ns-a, --dev-a, --ns-b and --dev-b (missing {})",
                missing(&tun)
            ))
        }
        (0, 2) => Mode::Ethernet {
            if_a: a.if_a.clone().unwrap_or_default(),
            if_b: a.if_b.clone().unwrap_or_default(),
        },
        _ => {
            return Err(format!(
                "linkem Ethernet mode needs --if-a and --if-b (missing {})",
                missing(&eth)
            ))
        }
    };
    let names: Vec<&String> = match &mode {
        Mode::Tun { dev_a, dev_b, .. } => vec![dev_a, dev_b],
        Mode::Ethernet { if_a, if_b } => {
            if if_a == if_b {
                return Err(format!(
                    "--if-a and --if-b must be two different interfaces (both {if_a})"
                ));
            }
            vec![if_a, if_b]
        }
    };
    for n in names {
        if n.is_empty() || n.len() >= IFNAMSIZ {
            return Err(format!("bad interface name '{n}' (1 to {} characters)", IFNAMSIZ - 1));
        }
    }
    for (name, p) in [
        ("--loss", a.loss),
        ("--loss-back", a.loss_back),
        ("--reorder", a.reorder),
    ] {
        if !(0.0..=100.0).contains(&p) {
            return Err(format!("{name} must be a percentage in [0, 100], got {p}"));
        }
    }
    Ok((
        mode,
        Params {
            delay: a.delay.as_secs_f64(),
            loss: a.loss,
            loss_back: a.loss_back,
            reorder: a.reorder,
            rate_kbps: a.rate,
            limit: a.limit,
            seed: a.seed,
        },
    ))
}

// ---------------------------------------------------------------- ports

/// What one non-blocking read from a port gave.
enum Rx {
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
trait Port {
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

/// A persistent TUN device attached in a namespace.
struct TunPort(File);

impl TunPort {
    fn open(ns: &str, dev: &str) -> io::Result<TunPort> {
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

/// `struct tpacket_auxdata` (linux/if_packet.h).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct TpacketAuxdata {
    tp_status: u32,
    tp_len: u32,
    tp_snaplen: u32,
    tp_mac: u16,
    tp_net: u16,
    tp_vlan_tci: u16,
    tp_vlan_tpid: u16,
}
const PACKET_AUXDATA: i32 = 8;
const PACKET_VNET_HDR: i32 = 15;
const PACKET_IGNORE_OUTGOING: i32 = 23;
const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;

/// `struct virtio_net_hdr` (linux/virtio_net.h), which precedes every
/// frame read or written with `PACKET_VNET_HDR`; fields in host order.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct VnetHdr {
    flags: u8,
    gso_type: u8,
    hdr_len: u16,
    gso_size: u16,
    csum_start: u16,
    csum_offset: u16,
}
const VNET_HDR_LEN: usize = std::mem::size_of::<VnetHdr>();
const VIRTIO_NET_HDR_F_NEEDS_CSUM: u8 = 1;

/// Finish a checksum the sender's kernel left to the NIC (what the NIC
/// would have put on the wire): the field at `start + offset` holds the
/// pseudo-header sum; the Internet checksum of `frame[start..]` replaces
/// it. False if the offsets do not fit the frame.
fn complete_checksum(frame: &mut [u8], start: usize, offset: usize) -> bool {
    let field = start + offset;
    if field + 2 > frame.len() {
        return false;
    }
    let mut sum: u64 = 0;
    let mut words = frame[start..].chunks_exact(2);
    for w in &mut words {
        sum += u16::from_be_bytes([w[0], w[1]]) as u64;
    }
    if let [last] = words.remainder() {
        sum += (*last as u64) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let c = !(sum as u16);
    // as the kernel's skb_checksum_help: 0 is sent as 0xffff (UDP: "none")
    frame[field..field + 2].copy_from_slice(&(if c == 0 { 0xffff } else { c }).to_be_bytes());
    true
}

/// An `AF_PACKET`/`SOCK_RAW` socket bound to one interface: every frame
/// received from the wire, whole (Ethernet header included).
struct PacketPort {
    fd: OwnedFd,
    completed: u64,
    rx_age: f64,
}

impl PacketPort {
    fn open(ifname: &str) -> io::Result<PacketPort> {
        let cname = CString::new(ifname).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in name"))?;
        // SAFETY: a valid C string.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "no such interface in this network namespace",
            ));
        }
        // Protocol 0 at creation: no frame is queued before the bind below
        // restricts the socket to this interface.
        // SAFETY: plain socket(2).
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh fd we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // Frames this socket (or anyone) sends on the interface are not
        // wanted (Linux >= 4.20; recv also checks sll_pkttype).
        let _ = net::setsockopt_int(raw, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1);
        // VLAN tags the driver stripped come as auxdata
        net::setsockopt_int(raw, libc::SOL_PACKET, PACKET_AUXDATA, 1)?;
        // a virtio_net_hdr before each frame says where a checksum left to
        // offload lies, so that we can complete it
        net::setsockopt_int(raw, libc::SOL_PACKET, PACKET_VNET_HDR, 1)?;
        // receive timestamps (CLOCK_REALTIME), for Port::rx_age
        net::setsockopt_int(raw, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
        let size = 4 << 20;
        if net::setsockopt_int(raw, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, size).is_err() {
            let _ = net::setsockopt_int(raw, libc::SOL_SOCKET, libc::SO_RCVBUF, size);
        }
        if net::setsockopt_int(raw, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, size).is_err() {
            let _ = net::setsockopt_int(raw, libc::SOL_SOCKET, libc::SO_SNDBUF, size);
        }
        // SAFETY: zero is a valid sockaddr_ll.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: bind with a sockaddr_ll of the right size.
        let r = unsafe {
            libc::bind(
                raw,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        // Promiscuous while the socket lives (the kernel undoes it on close).
        // SAFETY: zero is a valid packet_mreq.
        let mut mr: libc::packet_mreq = unsafe { std::mem::zeroed() };
        mr.mr_ifindex = ifindex as i32;
        mr.mr_type = libc::PACKET_MR_PROMISC as u16;
        // SAFETY: setsockopt with a packet_mreq and its size.
        let r = unsafe {
            libc::setsockopt(
                raw,
                libc::SOL_PACKET,
                libc::PACKET_ADD_MEMBERSHIP,
                &mr as *const libc::packet_mreq as *const libc::c_void,
                std::mem::size_of::<libc::packet_mreq>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(PacketPort {
            fd,
            completed: 0,
            rx_age: 0.0,
        })
    }
}

impl Port for PacketPort {
    fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn recv(&mut self, buf: &mut [u8]) -> Rx {
        // SAFETY: zero is a valid sockaddr_ll / msghdr.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let mut cbuf = [0u64; 16]; // 128 bytes, aligned for cmsghdr
        let mut vh = VnetHdr::default();
        let mut iov = [
            libc::iovec {
                iov_base: &mut vh as *mut VnetHdr as *mut libc::c_void,
                iov_len: VNET_HDR_LEN,
            },
            libc::iovec {
                iov_base: buf.as_mut_ptr() as *mut libc::c_void,
                iov_len: buf.len(),
            },
        ];
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = &mut sll as *mut libc::sockaddr_ll as *mut libc::c_void;
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = 2;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
        // MSG_TRUNC: the return value is the frame's real length (plus the
        // virtio_net_hdr).
        // SAFETY: msghdr points at live buffers for this call.
        let r = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, libc::MSG_TRUNC | libc::MSG_DONTWAIT) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Rx::Empty,
                _ => Rx::Error(e),
            };
        }
        if sll.sll_pkttype == libc::PACKET_OUTGOING {
            return Rx::Skip;
        }
        let Some(mut n) = (r as usize).checked_sub(VNET_HDR_LEN) else {
            return Rx::Skip;
        };
        if n > buf.len() {
            return Rx::TooBig;
        }
        let mut aux = None;
        let mut stamp = None;
        // SAFETY: walking the control messages the kernel wrote into cbuf.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_PACKET && (*c).cmsg_type == PACKET_AUXDATA {
                    aux = Some(std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const TpacketAuxdata));
                } else if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    stamp = Some(std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec));
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        self.rx_age = stamp.map_or(0.0, age_s);
        if let Some(aux) = aux {
            // put back a VLAN tag the driver took out of the frame
            if aux.tp_status & TP_STATUS_VLAN_VALID != 0 && n >= 12 {
                if n + 4 > buf.len() {
                    return Rx::TooBig;
                }
                let tpid = if aux.tp_status & TP_STATUS_VLAN_TPID_VALID != 0 && aux.tp_vlan_tpid != 0 {
                    aux.tp_vlan_tpid
                } else {
                    0x8100
                };
                buf.copy_within(12..n, 16);
                buf[12..14].copy_from_slice(&tpid.to_be_bytes());
                buf[14..16].copy_from_slice(&aux.tp_vlan_tci.to_be_bytes());
                n += 4;
            }
        }
        // (csum_start counts a VLAN tag the driver stripped: the offsets
        // fit the frame as rebuilt above)
        if vh.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM != 0
            && complete_checksum(&mut buf[..n], vh.csum_start as usize, vh.csum_offset as usize)
        {
            self.completed += 1;
        }
        Rx::Packet(n)
    }

    fn send(&mut self, pkt: &[u8]) -> io::Result<()> {
        // an all-zero virtio_net_hdr (no offload: the frame is final), then
        // the frame; the socket is bound, so it leaves by its interface
        let vh = VnetHdr::default();
        let iov = [
            libc::iovec {
                iov_base: &vh as *const VnetHdr as *mut libc::c_void,
                iov_len: VNET_HDR_LEN,
            },
            libc::iovec {
                iov_base: pkt.as_ptr() as *mut libc::c_void,
                iov_len: pkt.len(),
            },
        ];
        // SAFETY: zero is a valid msghdr.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov.as_ptr() as *mut libc::iovec;
        msg.msg_iovlen = 2;
        // SAFETY: the msghdr points at live buffers for this call; the
        // kernel only reads them.
        let r = unsafe { libc::sendmsg(self.fd.as_raw_fd(), &msg, libc::MSG_DONTWAIT) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    fn frame_overhead(&self) -> u64 {
        0
    }

    fn checksums_completed(&self) -> u64 {
        self.completed
    }

    fn rx_age(&self) -> f64 {
        self.rx_age
    }
}

/// Seconds from a CLOCK_REALTIME timestamp to now, within [0, 1 s]: a
/// clock step must not move packets far in time.
fn age_s(stamp: libc::timespec) -> f64 {
    // SAFETY: zero is a valid timespec; clock_gettime fills it.
    let mut now: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) };
    let age = (now.tv_sec - stamp.tv_sec) as f64 + (now.tv_nsec - stamp.tv_nsec) as f64 * 1e-9;
    age.clamp(0.0, 1.0)
}

// ---------------------------------------------------------------- core

#[derive(Default, Debug, serde::Serialize)]
struct DirStats {
    /// Packets (frames) received from the ingress port.
    packets: u64,
    /// Dropped by random loss.
    lost: u64,
    /// Dropped by the full bottleneck queue.
    queue_drops: u64,
    /// Skipped the delay (--reorder).
    reordered: u64,
    /// Forwarded: written to the egress port.
    delivered: u64,
    /// Larger than the 64 KiB buffer, or than the egress port's MTU (a
    /// TSO/GSO super-frame): dropped.
    too_big: u64,
    /// The egress port refused them for another reason.
    send_errors: u64,
    recv_errors: u64,
    /// Ethernet mode: frames whose checksum the sender's kernel left to
    /// offload, completed by linkem.
    checksums_completed: u64,
}

/// A packet waiting for its delivery time; ordered by (time, arrival).
struct Pending {
    at_ns: u64,
    seq: u64,
    to_b: bool,
    pkt: Vec<u8>,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.at_ns, self.seq) == (o.at_ns, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.at_ns, self.seq).cmp(&(o.at_ns, o.seq))
    }
}

/// The next packet from `port`: Some(len), or None when nothing is left
/// for now. Counts what is dropped on the way in.
fn next_packet(port: &mut dyn Port, buf: &mut [u8], st: &mut DirStats, side: &str) -> Option<usize> {
    // bounded, so that a flood of skipped frames cannot starve the timers
    for _ in 0..1024 {
        match port.recv(buf) {
            Rx::Packet(n) => return Some(n),
            Rx::Skip => continue,
            Rx::TooBig => {
                st.packets += 1;
                st.too_big += 1;
            }
            Rx::Empty => return None,
            Rx::Error(e) => {
                if st.recv_errors == 0 {
                    eprintln!("p4rcp-host linkem: reading side {side}: {e}");
                }
                st.recv_errors += 1;
                return None;
            }
        }
    }
    None
}

/// Move packets between `a` and `b` with the link's treatment until
/// `stop()` (SIGINT/SIGTERM); returns the counters (A->B, B->A).
fn emulate(a: &mut dyn Port, b: &mut dyn Port, p: &Params, stop: &dyn Fn() -> bool) -> (DirStats, DirStats) {
    let mut rng = SmallRng::seed_from_u64(p.seed);
    let t0 = Instant::now();
    let now_s = || t0.elapsed().as_secs_f64();
    let to_ns = |t: f64| (t * 1e9) as u64;
    let mut heap: BinaryHeap<Reverse<Pending>> = BinaryHeap::new();
    let mut seq = 0u64;
    // bottleneck A->B: packets waiting for the line, bytes queued, line free at
    let mut queue: VecDeque<(f64, Vec<u8>)> = VecDeque::new();
    let mut queued_bytes = 0u64;
    let mut line_free = 0.0f64;
    let oh_a = a.frame_overhead();
    let tx_time = |len: usize, rate: f64| (len as u64 + oh_a) as f64 * 8.0 / (rate * 1000.0);
    let mut ab = DirStats::default();
    let mut ba = DirStats::default();
    let mut buf = vec![0u8; 65_536];
    let mut pfds = [
        libc::pollfd {
            fd: a.fd(),
            events: libc::POLLIN,
            revents: libc::POLLIN, // read both at the start
        },
        libc::pollfd {
            fd: b.fd(),
            events: libc::POLLIN,
            revents: libc::POLLIN,
        },
    ];
    while !stop() {
        let now = now_s();
        // A -> B arrivals (only from a port ppoll found ready: no empty reads)
        let ready = |p: &libc::pollfd| p.fd < 0 || p.revents != 0;
        for _ in 0..if ready(&pfds[0]) { 256 } else { 0 } {
            let Some(n) = next_packet(a, &mut buf, &mut ab, "A") else {
                break;
            };
            let arrived = now_s() - a.rx_age();
            ab.packets += 1;
            if rng.gen::<f64>() * 100.0 < p.loss {
                ab.lost += 1;
                continue;
            }
            if p.rate_kbps.is_some() {
                let frame = n as u64 + oh_a;
                if queued_bytes + frame > p.limit {
                    ab.queue_drops += 1;
                    continue;
                }
                queued_bytes += frame;
                queue.push_back((arrived, buf[..n].to_vec()));
            } else {
                let skip = rng.gen::<f64>() * 100.0 < p.reorder;
                ab.reordered += skip as u64;
                let at = arrived + if skip { 0.0 } else { p.delay };
                seq += 1;
                heap.push(Reverse(Pending {
                    at_ns: to_ns(at),
                    seq,
                    to_b: true,
                    pkt: buf[..n].to_vec(),
                }));
            }
        }
        // B -> A arrivals
        for _ in 0..if ready(&pfds[1]) { 256 } else { 0 } {
            let Some(n) = next_packet(b, &mut buf, &mut ba, "B") else {
                break;
            };
            let arrived = now_s() - b.rx_age();
            ba.packets += 1;
            if rng.gen::<f64>() * 100.0 < p.loss_back {
                ba.lost += 1;
                continue;
            }
            seq += 1;
            heap.push(Reverse(Pending {
                at_ns: to_ns(arrived + p.delay),
                seq,
                to_b: false,
                pkt: buf[..n].to_vec(),
            }));
        }
        // serve the bottleneck: each packet leaves the line after its
        // transmission time, then propagates
        if let Some(rate) = p.rate_kbps {
            while let Some((arrived, pkt)) = queue.front() {
                let done = line_free.max(*arrived) + tx_time(pkt.len(), rate);
                if done > now {
                    break;
                }
                line_free = done;
                let Some((_, pkt)) = queue.pop_front() else { break };
                queued_bytes -= pkt.len() as u64 + oh_a;
                let skip = rng.gen::<f64>() * 100.0 < p.reorder;
                ab.reordered += skip as u64;
                let at = done + if skip { 0.0 } else { p.delay };
                seq += 1;
                heap.push(Reverse(Pending {
                    at_ns: to_ns(at),
                    seq,
                    to_b: true,
                    pkt,
                }));
            }
        }
        // deliveries that are due
        let now_ns = to_ns(now_s());
        while heap.peek().is_some_and(|Reverse(x)| x.at_ns <= now_ns) {
            let Some(Reverse(x)) = heap.pop() else { break };
            let (sent, st) = if x.to_b {
                (b.send(&x.pkt), &mut ab)
            } else {
                (a.send(&x.pkt), &mut ba)
            };
            match sent {
                Ok(()) => st.delivered += 1,
                Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => {
                    if st.too_big == 0 {
                        eprintln!(
                            "p4rcp-host linkem: dropping {}-byte frames larger than the MTU of side {} \
                             (counted in too_big; TSO/GSO left on upstream? ethtool --offload IF tso off gso off)",
                            x.pkt.len(),
                            if x.to_b { "B" } else { "A" }
                        );
                    }
                    st.too_big += 1;
                }
                Err(e) => {
                    if st.send_errors == 0 {
                        let side = if x.to_b { "B" } else { "A" };
                        eprintln!(
                            "p4rcp-host linkem: sending {} bytes on side {side}: {e} (counted in send_errors)",
                            x.pkt.len()
                        );
                    }
                    st.send_errors += 1;
                }
            }
        }
        // sleep until the next event
        let now = now_s();
        let mut next = now + 0.5;
        if let Some(Reverse(x)) = heap.peek() {
            next = next.min(x.at_ns as f64 / 1e9);
        }
        if let (Some(rate), Some((arrived, pkt))) = (p.rate_kbps, queue.front()) {
            next = next.min(line_free.max(*arrived) + tx_time(pkt.len(), rate));
        }
        let wait = (next - now).max(0.0);
        let ts = libc::timespec {
            tv_sec: wait as libc::time_t,
            tv_nsec: (wait.fract() * 1e9) as libc::c_long,
        };
        for pfd in pfds.iter_mut() {
            pfd.revents = 0;
        }
        // SAFETY: two valid pollfds and a timespec.
        unsafe {
            libc::ppoll(pfds.as_mut_ptr(), 2, &ts, std::ptr::null());
        }
    }
    ab.checksums_completed = a.checksums_completed();
    ba.checksums_completed = b.checksums_completed();
    (ab, ba)
}

pub fn run(args: LinkemArgs) -> Result<ExitCode, String> {
    let (mode, params) = validate(&args)?;
    let (mut pa, mut pb, kind): (Box<dyn Port>, Box<dyn Port>, &str) = match &mode {
        Mode::Tun {
            ns_a,
            dev_a,
            ns_b,
            dev_b,
        } => (
            Box::new(TunPort::open(ns_a, dev_a).map_err(|e| format!("TUN {dev_a} in {ns_a}: {e}"))?),
            Box::new(TunPort::open(ns_b, dev_b).map_err(|e| format!("TUN {dev_b} in {ns_b}: {e}"))?),
            "tun",
        ),
        Mode::Ethernet { if_a, if_b } => (
            Box::new(PacketPort::open(if_a).map_err(|e| format!("interface {if_a} (--if-a): {e}"))?),
            Box::new(PacketPort::open(if_b).map_err(|e| format!("interface {if_b} (--if-b): {e}"))?),
            "ethernet",
        ),
    };
    net::install_signal_handlers();
    net::tighten_timer_slack();
    let (ab, ba) = emulate(pa.as_mut(), pb.as_mut(), &params, &net::stopping);
    let line = serde_json::json!({"event": "linkem_stats", "mode": kind, "a_to_b": ab, "b_to_a": ba}).to_string();
    eprintln!("{line}");
    if let Some(path) = &args.stats {
        std::fs::write(path, format!("{line}\n")).map_err(|e| format!("--stats {path}: {e}"))?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        a: LinkemArgs,
    }

    fn check(args: &[&str]) -> Result<(Mode, Params), String> {
        let cli = Cli::try_parse_from(std::iter::once("linkem").chain(args.iter().copied()))
            .map_err(|e| format!("clap: {e}"))?;
        validate(&cli.a)
    }

    fn err(args: &[&str], needle: &str) {
        match check(args) {
            Ok((m, _)) => panic!("{args:?} accepted as {m:?}"),
            Err(e) => assert!(e.contains(needle), "{args:?}: {e:?} does not mention {needle:?}"),
        }
    }

    #[test]
    fn exactly_one_mode() {
        let tun = ["--ns-a", "x", "--dev-a", "t", "--ns-b", "y", "--dev-b", "t"];
        let (m, _) = check(&tun).unwrap();
        assert_eq!(
            m,
            Mode::Tun {
                ns_a: "x".into(),
                dev_a: "t".into(),
                ns_b: "y".into(),
                dev_b: "t".into()
            }
        );
        let (m, p) = check(&[
            "--if-a", "d1-eth0", "--if-b", "d1-eth1", "--delay", "20ms", "--loss", "1",
        ])
        .unwrap();
        assert_eq!(
            m,
            Mode::Ethernet {
                if_a: "d1-eth0".into(),
                if_b: "d1-eth1".into()
            }
        );
        assert!((p.delay - 0.020).abs() < 1e-12);
        assert_eq!(p.loss, 1.0);
        assert_eq!(p.loss_back, 0.0);
        assert!(p.rate_kbps.is_none());

        err(&[], "exactly one mode");
        err(&["--delay", "20ms"], "exactly one mode");
        let mut both: Vec<&str> = tun.to_vec();
        both.extend(["--if-a", "e0", "--if-b", "e1"]);
        err(&both, "not both");
        err(&["--ns-a", "x", "--if-a", "e0"], "not both");
        err(&["--ns-a", "x", "--dev-a", "t", "--ns-b", "y"], "missing --dev-b");
        err(&["--if-a", "e0"], "missing --if-b");
        err(&["--if-b", "e0"], "missing --if-a");
        err(&["--if-a", "e0", "--if-b", "e0"], "different");
        err(
            &["--if-a", "an-interface-name-too-long", "--if-b", "e0"],
            "bad interface name",
        );
        err(&["--if-a", "e0", "--if-b", "e1", "--loss", "150"], "percentage");
        err(&["--if-a", "e0", "--if-b", "e1", "--loss-back=-1"], "percentage");
        err(&["--if-a", "e0", "--if-b", "e1", "--reorder", "101"], "percentage");
        err(&["--if-a", "e0", "--if-b", "e1", "--rate", "20"], "needs a unit");
    }

    /// A UDP/IPv4 datagram as the sending kernel leaves it with offload on:
    /// the checksum field holds the folded pseudo-header sum.
    #[test]
    fn completes_an_offloaded_udp_checksum() {
        fn fold(mut s: u32) -> u16 {
            while s > 0xffff {
                s = (s & 0xffff) + (s >> 16);
            }
            s as u16
        }
        fn sum(b: &[u8]) -> u32 {
            b.chunks(2)
                .map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32)
                .sum()
        }
        let payload: Vec<u8> = (0..101u32).map(|i| (i * 7) as u8).collect(); // odd length
        let udp_len = 8 + payload.len();
        let (src, dst) = ([10u8, 99, 0, 1], [10u8, 99, 0, 2]);
        let mut f = vec![0u8; 14 + 20];
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        f[14] = 0x45;
        f[14 + 9] = 17;
        f[14 + 12..14 + 16].copy_from_slice(&src);
        f[14 + 16..14 + 20].copy_from_slice(&dst);
        f.extend_from_slice(&6577u16.to_be_bytes());
        f.extend_from_slice(&6577u16.to_be_bytes());
        f.extend_from_slice(&(udp_len as u16).to_be_bytes());
        f.extend_from_slice(&[0, 0]);
        f.extend_from_slice(&payload);
        let pseudo = sum(&src) + sum(&dst) + 17 + udp_len as u32;
        // the reference: complement of the sum over pseudo header + datagram
        let want = !fold(pseudo + sum(&f[34..]));
        f[40..42].copy_from_slice(&fold(pseudo).to_be_bytes());
        assert!(complete_checksum(&mut f, 34, 6));
        assert_eq!(u16::from_be_bytes([f[40], f[41]]), want);
        // and it verifies: the sum over everything folds to 0xffff
        assert_eq!(fold(pseudo + sum(&f[34..])), 0xffff);
        assert!(!complete_checksum(&mut f, 200, 6), "offsets beyond the frame");
    }

    /// A port fed from a list, recording what is sent to it.
    struct Mem {
        inbox: VecDeque<Vec<u8>>,
        sent: Vec<(Instant, Vec<u8>)>,
    }
    impl Port for Mem {
        fn fd(&self) -> RawFd {
            -1 // ppoll ignores negative fds: it only sleeps
        }
        fn recv(&mut self, buf: &mut [u8]) -> Rx {
            match self.inbox.pop_front() {
                Some(p) => {
                    buf[..p.len()].copy_from_slice(&p);
                    Rx::Packet(p.len())
                }
                None => Rx::Empty,
            }
        }
        fn send(&mut self, pkt: &[u8]) -> io::Result<()> {
            self.sent.push((Instant::now(), pkt.to_vec()));
            Ok(())
        }
        fn frame_overhead(&self) -> u64 {
            0
        }
    }

    fn mem(tag: u8, n: usize) -> Mem {
        Mem {
            inbox: (0..n).map(|i| [tag, i as u8, 0xee, 0x55].repeat(100)).collect(),
            sent: Vec::new(),
        }
    }

    fn params(delay: f64, loss: f64, loss_back: f64) -> Params {
        Params {
            delay,
            loss,
            loss_back,
            reorder: 0.0,
            rate_kbps: None,
            limit: 75_000,
            seed: 7,
        }
    }

    #[test]
    fn core_forwards_both_ways_after_the_delay() {
        let (mut a, mut b) = (mem(0xa, 40), mem(0xb, 30));
        let (want_b, want_a) = (a.inbox.clone(), b.inbox.clone());
        let t0 = Instant::now();
        let stop = || t0.elapsed() > Duration::from_millis(150);
        let (ab, ba) = emulate(&mut a, &mut b, &params(0.030, 0.0, 0.0), &stop);
        assert_eq!((ab.packets, ab.delivered, ba.packets, ba.delivered), (40, 40, 30, 30));
        let got_b: Vec<_> = b.sent.iter().map(|(_, p)| p.clone()).collect();
        let got_a: Vec<_> = a.sent.iter().map(|(_, p)| p.clone()).collect();
        assert_eq!(got_b, Vec::from(want_b), "A->B byte for byte, in order");
        assert_eq!(got_a, Vec::from(want_a), "B->A byte for byte, in order");
        for (t, _) in a.sent.iter().chain(b.sent.iter()) {
            assert!(
                t.duration_since(t0) >= Duration::from_millis(30),
                "delivered before the delay"
            );
        }
    }

    #[test]
    fn core_loss_per_direction_and_rate() {
        let (mut a, mut b) = (mem(1, 50), mem(2, 50));
        let t0 = Instant::now();
        let stop = || t0.elapsed() > Duration::from_millis(50);
        let (ab, ba) = emulate(&mut a, &mut b, &params(0.0, 100.0, 0.0), &stop);
        assert_eq!((ab.lost, ab.delivered, ba.lost, ba.delivered), (50, 0, 0, 50));
        // 400-byte frames at 8 Mb/s: 0.4 ms each; a 2000-byte queue holds 5
        let (mut a, mut b) = (mem(1, 20), mem(2, 0));
        let mut p = params(0.0, 0.0, 0.0);
        p.rate_kbps = Some(8000.0);
        p.limit = 2000;
        let t0 = Instant::now();
        let stop = || t0.elapsed() > Duration::from_millis(50);
        let (ab, _) = emulate(&mut a, &mut b, &p, &stop);
        assert_eq!((ab.packets, ab.queue_drops, ab.delivered), (20, 15, 5));
        let last = b.sent.last().map(|(t, _)| t.duration_since(t0)).unwrap_or_default();
        assert!(
            last >= Duration::from_micros(2000),
            "5 frames of 0.4 ms left after {last:?}"
        );
    }
}

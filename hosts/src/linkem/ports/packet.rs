//! Ethernet mode: an `AF_PACKET`/`SOCK_RAW` socket bound to one interface.

use super::{Port, Rx};
use p4rcp_host::io::net;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

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
pub struct PacketPort {
    fd: OwnedFd,
    completed: u64,
    rx_age: f64,
}

impl PacketPort {
    pub fn open(ifname: &str) -> io::Result<PacketPort> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}

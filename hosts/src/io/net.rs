//! Thin OS helpers: addresses, socket options, waiting with a precise
//! timeout, signals.

use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// SIGINT and SIGTERM set a flag (see [`stopping`]) instead of killing the
/// process, so that loops can write their records before exiting.
pub fn install_signal_handlers() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: installing a handler that only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

pub fn stopping() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Ask the kernel for 1 µs timer slack (default 50 µs): sleeps end closer
/// to their deadline, which is what pacing needs.
pub fn tighten_timer_slack() {
    // SAFETY: prctl with integer arguments only.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

pub fn setsockopt_int(fd: i32, level: i32, opt: i32, val: i32) -> io::Result<()> {
    // SAFETY: passing a pointer to a local int with its size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            &val as *const i32 as *const libc::c_void,
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// An address of the command line: `IP`, `IP:PORT`, `NAME` or `NAME:PORT`
/// (`default_port` when none is given); names are looked up.
pub fn resolve(to: &str, default_port: u16) -> Result<SocketAddr, String> {
    if let Ok(ip) = to.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, default_port));
    }
    if let Ok(sa) = to.parse::<SocketAddr>() {
        return Ok(sa);
    }
    let with_port = if to.contains(':') {
        to.to_string()
    } else {
        format!("{to}:{default_port}")
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| format!("bad address '{to}': {e}"))?
        .next()
        .ok_or_else(|| format!("'{to}' resolves to no address"))
}

/// What [`resolve`] would accept, without a lookup (`--check`): an IP
/// address or socket address, or a well-formed host name (letters, digits,
/// hyphens, dot-separated labels of 1-63 characters, the last not all
/// digits) with an optional port.
pub fn check_address(to: &str) -> Result<(), String> {
    if to.parse::<IpAddr>().is_ok() || to.parse::<SocketAddr>().is_ok() {
        return Ok(());
    }
    let (host, port) = match to.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (to, None),
    };
    let label_ok = |l: &str| {
        (1..=63).contains(&l.len())
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let labels: Vec<&str> = host.strip_suffix('.').unwrap_or(host).split('.').collect();
    let name_ok = host.len() <= 253
        && labels.iter().all(|l| label_ok(l))
        && labels.last().is_some_and(|l| !l.chars().all(|c| c.is_ascii_digit()));
    let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok());
    if name_ok && port_ok {
        Ok(())
    } else {
        Err(format!(
            "bad address '{to}': not an IP address or a host name (with an optional :PORT)"
        ))
    }
}

/// Bind a non-blocking UDP socket with large buffers (many flows share it).
pub fn udp_socket(bind: SocketAddr) -> io::Result<UdpSocket> {
    let s = UdpSocket::bind(bind)?;
    s.set_nonblocking(true)?;
    let fd = s.as_raw_fd();
    let size = 8 << 20;
    // FORCE variants ignore net.core.[rw]mem_max when running as root.
    if setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, size).is_err() {
        let _ = setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, size);
    }
    if setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, size).is_err() {
        let _ = setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, size);
    }
    Ok(s)
}

/// The DSCP (0-63) a socket's packets carry: the IP TOS byte's upper six
/// bits (routers may map it to a weight class, docs/protocol.md).
pub fn set_dscp(fd: i32, dscp: u8) -> io::Result<()> {
    setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_TOS, i32::from(dscp) << 2)
}

/// Wait until `fd` is readable or `timeout` passed (None: forever).
/// Returns true if readable. Uses ppoll, whose timeout has nanosecond
/// resolution (hrtimers), unlike SO_RCVTIMEO.
pub fn wait_readable(fd: i32, timeout: Option<Duration>) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ts;
    let tsp = match timeout {
        Some(d) => {
            ts = libc::timespec {
                tv_sec: d.as_secs() as libc::time_t,
                tv_nsec: d.subsec_nanos() as libc::c_long,
            };
            &ts as *const libc::timespec
        }
        None => std::ptr::null(),
    };
    // SAFETY: one valid pollfd, a valid or null timespec, no signal mask.
    let r = unsafe { libc::ppoll(&mut pfd, 1, tsp, std::ptr::null()) };
    r > 0 && (pfd.revents & libc::POLLIN) != 0
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// CPU seconds (user + system) this process has used.
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills a zeroed struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if r != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn to_sockaddr(a: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data; we write a sockaddr_in/in6 into it.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match a {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(*v4.ip()).to_be(),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_in fits in sockaddr_storage.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in, sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: sockaddr_in6 fits in sockaddr_storage.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in6, sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

fn from_sockaddr(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match ss.ss_family as i32 {
        libc::AF_INET => {
            // SAFETY: the family says this is a sockaddr_in.
            let sin = unsafe { &*(ss as *const _ as *const libc::sockaddr_in) };
            let ip = std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            Some(SocketAddr::from((ip, u16::from_be(sin.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this is a sockaddr_in6.
            let sin6 = unsafe { &*(ss as *const _ as *const libc::sockaddr_in6) };
            let ip = std::net::Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                ip,
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Receive up to `n` datagrams per system call (recvmmsg).
pub struct RecvBatch {
    bufs: Vec<Vec<u8>>,
    names: Vec<libc::sockaddr_storage>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    got: usize,
}

impl RecvBatch {
    /// `n` buffers of `size` bytes (longer datagrams are truncated, and
    /// then fail to parse).
    pub fn new(n: usize, size: usize) -> RecvBatch {
        RecvBatch {
            bufs: (0..n).map(|_| vec![0u8; size]).collect(),
            // SAFETY: plain data, zero is a valid value.
            names: (0..n).map(|_| unsafe { std::mem::zeroed() }).collect(),
            iovs: (0..n)
                .map(|_| libc::iovec {
                    iov_base: std::ptr::null_mut(),
                    iov_len: 0,
                })
                .collect(),
            // SAFETY: plain data, zero is a valid value.
            hdrs: (0..n).map(|_| unsafe { std::mem::zeroed() }).collect(),
            got: 0,
        }
    }

    /// Read what is queued (without blocking); returns how many datagrams.
    pub fn recv(&mut self, fd: i32) -> usize {
        let n = self.bufs.len();
        for i in 0..n {
            self.iovs[i] = libc::iovec {
                iov_base: self.bufs[i].as_mut_ptr() as *mut libc::c_void,
                iov_len: self.bufs[i].len(),
            };
            let h = &mut self.hdrs[i];
            h.msg_hdr.msg_name = &mut self.names[i] as *mut _ as *mut libc::c_void;
            h.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            h.msg_hdr.msg_iov = &mut self.iovs[i];
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_control = std::ptr::null_mut();
            h.msg_hdr.msg_controllen = 0;
            h.msg_hdr.msg_flags = 0;
            h.msg_len = 0;
        }
        // SAFETY: n initialised headers pointing at live buffers we own.
        let r = unsafe {
            libc::recvmmsg(
                fd,
                self.hdrs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        self.got = if r > 0 { r as usize } else { 0 };
        self.got
    }

    /// Datagram `i` of the last `recv` and its sender.
    pub fn get(&self, i: usize) -> (&[u8], Option<SocketAddr>) {
        if i >= self.got {
            return (&[], None);
        }
        let len = (self.hdrs[i].msg_len as usize).min(self.bufs[i].len());
        (&self.bufs[i][..len], from_sockaddr(&self.names[i]))
    }
}

/// Datagrams queued for one sendmmsg call.
pub struct SendBatch {
    bufs: Vec<Vec<u8>>,
    dsts: Vec<SocketAddr>,
    n: usize,
    /// Datagrams the kernel refused (counted, dropped like losses).
    pub errors: u64,
}

impl SendBatch {
    pub fn new(cap: usize) -> SendBatch {
        SendBatch {
            bufs: (0..cap).map(|_| Vec::with_capacity(2048)).collect(),
            dsts: vec![SocketAddr::from(([0, 0, 0, 0], 0)); cap],
            n: 0,
            errors: 0,
        }
    }

    pub fn is_full(&self) -> bool {
        self.n == self.bufs.len()
    }

    /// Queue a copy of `data` for `dst`; the caller flushes when full.
    pub fn push(&mut self, data: &[u8], dst: SocketAddr) {
        if self.is_full() {
            self.errors += 1;
            return;
        }
        let b = &mut self.bufs[self.n];
        b.clear();
        b.extend_from_slice(data);
        self.dsts[self.n] = dst;
        self.n += 1;
    }

    /// Send everything queued.
    pub fn flush(&mut self, fd: i32) {
        let n = self.n;
        if n == 0 {
            return;
        }
        let mut names: Vec<(libc::sockaddr_storage, libc::socklen_t)> =
            self.dsts[..n].iter().map(to_sockaddr).collect();
        let mut iovs: Vec<libc::iovec> = self.bufs[..n]
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: plain data, zero is a valid value.
        let mut hdrs: Vec<libc::mmsghdr> = (0..n).map(|_| unsafe { std::mem::zeroed() }).collect();
        for i in 0..n {
            hdrs[i].msg_hdr.msg_name = &mut names[i].0 as *mut _ as *mut libc::c_void;
            hdrs[i].msg_hdr.msg_namelen = names[i].1;
            hdrs[i].msg_hdr.msg_iov = &mut iovs[i];
            hdrs[i].msg_hdr.msg_iovlen = 1;
        }
        let mut done = 0;
        while done < n {
            // SAFETY: headers point at live buffers and addresses for this call.
            let r = unsafe { libc::sendmmsg(fd, hdrs[done..].as_mut_ptr(), (n - done) as libc::c_uint, 0) };
            if r > 0 {
                done += r as usize;
                continue;
            }
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if e.raw_os_error() == Some(libc::EAGAIN) || e.raw_os_error() == Some(libc::ENOBUFS) {
                // socket buffer full: wait briefly for room rather than drop
                let mut pfd = libc::pollfd {
                    fd,
                    events: libc::POLLOUT,
                    revents: 0,
                };
                // SAFETY: one pollfd, 10 ms.
                if unsafe { libc::poll(&mut pfd, 1, 10) } > 0 {
                    continue;
                }
                self.errors += (n - done) as u64;
                break;
            }
            // e.g. unreachable destination: that datagram is lost
            self.errors += 1;
            done += 1;
        }
        self.n = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_addresses_resolve_without_a_lookup() {
        assert_eq!(resolve("10.0.0.2", 6577), Ok(SocketAddr::from(([10, 0, 0, 2], 6577))));
        assert_eq!(resolve("10.0.0.2:9", 6577), Ok(SocketAddr::from(([10, 0, 0, 2], 9))));
    }

    #[test]
    fn addresses_are_checked_without_a_lookup() {
        for ok in [
            "10.0.0.2",
            "10.0.0.2:6577",
            "0.0.0.0:0",
            "::1",
            "[::1]:6577",
            "h2",
            "receiver.example:80",
            "localhost.",
        ] {
            assert_eq!(check_address(ok), Ok(()), "{ok}");
        }
        for bad in [
            "not an address",
            "300.1.1.1:5",
            "10.0.0.2:99999",
            "h2:port",
            "-h2",
            "a..b",
            "",
        ] {
            let e = check_address(bad).err().unwrap_or_default();
            assert!(e.contains("bad address"), "{bad}: {e:?}");
        }
    }

    #[test]
    fn a_dscp_is_the_tos_bytes_upper_six_bits() {
        let sock = udp_socket("127.0.0.1:0".parse().unwrap_or_else(|e| panic!("{e}")))
            .unwrap_or_else(|e| panic!("{e}"));
        let fd = std::os::fd::AsRawFd::as_raw_fd(&sock);
        set_dscp(fd, 10).unwrap_or_else(|e| panic!("{e}"));
        let mut tos: i32 = 0;
        let mut len = std::mem::size_of::<i32>() as libc::socklen_t;
        // SAFETY: reading an int option into a local int of that size.
        let r = unsafe {
            libc::getsockopt(fd, libc::IPPROTO_IP, libc::IP_TOS, &mut tos as *mut i32 as *mut libc::c_void, &mut len)
        };
        assert_eq!((r, tos), (0, 10 << 2));
    }
}

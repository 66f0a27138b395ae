//! Thin OS helpers: socket options, waiting with a precise timeout, signals.

use std::io;
use std::net::{SocketAddr, UdpSocket};
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

fn setsockopt_int(fd: i32, level: i32, opt: i32, val: i32) -> io::Result<()> {
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

/// Would this error go away if we tried again later?
pub fn is_transient(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::ENOBUFS)
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

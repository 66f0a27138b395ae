//! The client: one flow over the kernel's TCP, timed and sampled like the
//! UDP schemes.

use super::{CHUNK, DONE, HELLO};
use crate::io::net;
use crate::io::sink::Sink;
use super::record::{Confirmation, TcpSent};
use crate::transport::record::{FlowRecord, TraceLine};
use crate::transport::pattern;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// One TCP flow to run.
#[derive(Clone)]
pub struct TcpFlow {
    pub flow_id: u32,
    pub index: Option<u64>,
    pub dst: SocketAddr,
    /// Kernel congestion control name; CUBIC when None.
    pub algo: Option<String>,
    pub size: Option<u64>,
    pub duration: Option<f64>,
    pub timeout_s: f64,
    /// Periodic "sample" lines (goodput from TCP_INFO), as the UDP
    /// schemes write them; None or a period of 0: none.
    pub trace: Option<Sink>,
    pub sample_interval_s: f64,
    /// DSCP of its data (set after connect: the SYN carries 0).
    pub dscp: u8,
}

/// Goodput samples of a TCP flow: bytes the peer acknowledged
/// (`tcpi_bytes_acked`) per period, the kernel's view of what the UDP
/// senders count from their acknowledgements.
struct Sampler {
    sink: Sink,
    flow_id: u32,
    period_s: f64,
    next_s: f64,
    last_s: f64,
    acked: u64,
}

impl Sampler {
    fn poll(&mut self, s: &TcpStream, t_s: f64) {
        if t_s < self.next_s {
            return;
        }
        let Some(ti) = raw_tcp_info(s) else { return };
        let dt = t_s - self.last_s;
        let goodput_kbps = ti.tcpi_bytes_acked.saturating_sub(self.acked) as f64 * 8.0 / dt / 1000.0;
        self.acked = ti.tcpi_bytes_acked;
        self.last_s = t_s;
        // on the period's schedule, as the UDP senders sample
        self.next_s += self.period_s;
        if self.next_s <= t_s {
            self.next_s = t_s + self.period_s;
        }
        let srtt_s = ti.tcpi_rtt as f64 / 1e6;
        // TCP's rate: a window per RTT
        let cwnd_kbps = if srtt_s > 0.0 {
            ti.tcpi_snd_cwnd as f64 * ti.tcpi_snd_mss as f64 * 8.0 / srtt_s / 1000.0
        } else {
            0.0
        };
        self.sink
            .write(&TraceLine::tcp_sample(self.flow_id, t_s, cwnd_kbps, srtt_s, goodput_kbps));
    }
}

fn set_congestion(s: &TcpStream, algo: &str) -> io::Result<()> {
    let fd = s.as_raw_fd();
    // SAFETY: pointer and length of a byte slice.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            algo.as_ptr() as *const libc::c_void,
            algo.len() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "kernel refused TCP congestion control '{algo}' ({}); available: {}",
                io::Error::last_os_error(),
                std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
                    .unwrap_or_default()
                    .trim()
            ),
        ));
    }
    // check that it took effect
    let mut name = [0u8; 16];
    let mut len = name.len() as libc::socklen_t;
    // SAFETY: buffer and its length.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_mut_ptr() as *mut libc::c_void,
            &mut len,
        )
    };
    let got = String::from_utf8_lossy(&name[..(len as usize).min(16)])
        .trim_end_matches('\0')
        .to_string();
    if r != 0 || got != algo {
        return Err(io::Error::other(format!(
            "TCP congestion control is '{got}', not '{algo}'"
        )));
    }
    Ok(())
}

fn raw_tcp_info(s: &TcpStream) -> Option<libc::tcp_info> {
    // SAFETY: zeroed plain-data struct filled by getsockopt.
    let mut ti: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            &mut ti as *mut libc::tcp_info as *mut libc::c_void,
            &mut len,
        )
    };
    (r == 0).then_some(ti)
}

/// (total retransmitted segments, segments sent, smoothed RTT ms) from
/// TCP_INFO.
fn tcp_info(s: &TcpStream) -> Option<(u64, u64, f64)> {
    let ti = raw_tcp_info(s)?;
    Some((
        ti.tcpi_total_retrans as u64,
        ti.tcpi_segs_out as u64,
        ti.tcpi_rtt as f64 / 1000.0,
    ))
}

/// A timed-out or interrupted socket call: try again (the deadline decides).
fn retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

fn remaining(deadline: Instant) -> io::Result<Duration> {
    let now = Instant::now();
    if now >= deadline {
        Err(io::Error::new(io::ErrorKind::TimedOut, "flow timeout"))
    } else {
        Ok((deadline - now).max(Duration::from_millis(1)))
    }
}

/// Run one flow to completion (or its timeout) and return its record.
pub fn run_flow(f: &TcpFlow) -> FlowRecord {
    let algo = f.algo.clone().unwrap_or_else(|| "cubic".to_string());
    let scheme = match &f.algo {
        None => "tcp".to_string(),
        Some(a) => format!("tcp:{a}"),
    };
    let start_unix_s = net::unix_now();
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs_f64(f.timeout_s);
    let mut sent: u64 = 0;
    let mut stream: Option<TcpStream> = None;
    let result = (|| -> io::Result<(u32, u64)> {
        let s = TcpStream::connect_timeout(&f.dst, remaining(deadline)?)?;
        stream = Some(s.try_clone()?);
        set_congestion(&s, &algo)?;
        if f.dscp != 0 {
            crate::io::net::set_dscp(std::os::fd::AsRawFd::as_raw_fd(&s), f.dscp)?;
        }
        let mut s = s;
        let mut hello = Vec::with_capacity(16);
        hello.extend_from_slice(HELLO);
        hello.extend_from_slice(&f.flow_id.to_be_bytes());
        hello.extend_from_slice(&f.size.unwrap_or(u64::MAX).to_be_bytes());
        s.set_write_timeout(Some(remaining(deadline)?))?;
        s.write_all(&hello)?;
        let stop_at = f.duration.map(|d| t0 + Duration::from_secs_f64(d));
        let mut sampler = f
            .trace
            .clone()
            .filter(|_| f.sample_interval_s > 0.0)
            .map(|sink| Sampler {
                sink,
                flow_id: f.flow_id,
                period_s: f.sample_interval_s,
                next_s: f.sample_interval_s,
                last_s: 0.0,
                acked: 0,
            });
        // Every blocking write and read waits at most half a sample period
        // (when sampling), so that samples keep their schedule whatever the
        // socket buffer does, also while it drains after the last write.
        let wait = |sampler: &Option<Sampler>| -> io::Result<Duration> {
            let left = remaining(deadline)?;
            Ok(match sampler {
                Some(sm) => left.min(Duration::from_secs_f64(sm.period_s / 2.0)),
                None => left,
            })
        };
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = match f.size {
                Some(size) => (size - sent).min(CHUNK as u64) as usize,
                None => {
                    if stop_at.is_some_and(|t| Instant::now() >= t) {
                        0
                    } else {
                        CHUNK
                    }
                }
            };
            if n == 0 {
                break;
            }
            pattern::fill(f.flow_id, sent, &mut buf[..n]);
            let mut written = 0;
            while written < n {
                s.set_write_timeout(Some(wait(&sampler)?))?;
                match s.write(&buf[written..n]) {
                    Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "connection closed")),
                    Ok(k) => written += k,
                    Err(e) if retry(&e) => {}
                    Err(e) => return Err(e),
                }
                if let Some(sm) = sampler.as_mut() {
                    sm.poll(&s, t0.elapsed().as_secs_f64());
                }
            }
            sent += n as u64;
        }
        s.shutdown(Shutdown::Write)?;
        let mut done = [0u8; 16];
        let mut got = 0;
        while got < done.len() {
            s.set_read_timeout(Some(wait(&sampler)?))?;
            match s.read(&mut done[got..]) {
                Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "no confirmation")),
                Ok(n) => got += n,
                Err(e) if retry(&e) => {}
                Err(e) => return Err(e),
            }
            if let Some(sm) = sampler.as_mut() {
                sm.poll(&s, t0.elapsed().as_secs_f64());
            }
        }
        if &done[..4] != DONE {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "bad confirmation"));
        }
        let status = u32::from_be_bytes([done[4], done[5], done[6], done[7]]);
        let mut b = [0u8; 8];
        b.copy_from_slice(&done[8..16]);
        Ok((status, u64::from_be_bytes(b)))
    })();
    let fct_s = t0.elapsed().as_secs_f64();
    let mut out = TcpSent {
        flow_id: f.flow_id,
        index: f.index,
        scheme,
        dst: f.dst.to_string(),
        dscp: f.dscp,
        start_unix_s,
        size_bytes: f.size.unwrap_or(sent),
        ..Default::default()
    };
    if let Some((retransmissions, segments, rtt_ms)) = stream.as_ref().and_then(tcp_info) {
        out.retransmissions = retransmissions;
        out.segments = segments;
        out.srtt_s = Some(rtt_ms / 1e3);
    }
    match result {
        Ok((status, bytes)) => {
            out.confirmation = Some(Confirmation {
                fct_s,
                bytes,
                verified: Some(status & 1 == 1),
            })
        }
        Err(e) => out.error = Some(format!("tcp: {e}")),
    }
    out.record()
}

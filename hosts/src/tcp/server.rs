//! The server: reads and checks a flow's bytes, confirms, records.

use super::{CHUNK, DONE, HELLO};
use crate::io::net;
use crate::io::sink::Sink;
use crate::transport::record::{round, RecvRecord};
use crate::transport::pattern;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Serve one connection: read the header and the bytes, check them,
/// confirm. Returns the receiver's record.
fn serve(mut s: TcpStream, peer: SocketAddr, idle: Duration) -> RecvRecord {
    let t0 = Instant::now();
    let mut rec = RecvRecord::tcp(peer.to_string(), net::unix_now());
    let mut verified = false;
    let r = (|| -> io::Result<()> {
        s.set_read_timeout(Some(idle))?;
        let mut hello = [0u8; 16];
        s.read_exact(&mut hello)?;
        if &hello[..4] != HELLO {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "not a p4rcp TCP flow"));
        }
        rec.flow_id = u32::from_be_bytes([hello[4], hello[5], hello[6], hello[7]]);
        let mut b = [0u8; 8];
        b.copy_from_slice(&hello[8..16]);
        let size = u64::from_be_bytes(b);
        rec.size_bytes = if size == u64::MAX { None } else { Some(size) };
        verified = true;
        let mut buf = vec![0u8; CHUNK];
        let mut got: u64 = 0;
        let mut last_read_unix = None;
        loop {
            let want = match rec.size_bytes {
                Some(sz) => (sz - got).min(CHUNK as u64) as usize,
                None => CHUNK,
            };
            if want == 0 {
                break;
            }
            let n = s.read(&mut buf[..want])?;
            if n == 0 {
                break; // EOF
            }
            if !pattern::check(rec.flow_id, got, &buf[..n]) {
                verified = false;
            }
            got += n as u64;
            last_read_unix = Some(net::unix_now());
        }
        rec.bytes_delivered = got;
        rec.completed = rec.size_bytes.is_none_or(|sz| got == sz);
        // The last byte arrived with the last read that returned data (an open-ended flow: before the EOF).
        if rec.completed {
            rec.last_byte_unix_s = last_read_unix.map(|t| round(t, 6));
        }
        let mut done = Vec::with_capacity(16);
        done.extend_from_slice(DONE);
        let status: u32 = if verified && rec.completed { 1 } else { 0 };
        done.extend_from_slice(&status.to_be_bytes());
        done.extend_from_slice(&got.to_be_bytes());
        s.write_all(&done)?;
        // let the client read the confirmation before the socket closes
        s.shutdown(Shutdown::Write)?;
        let mut sink = [0u8; 64];
        while let Ok(n) = s.read(&mut sink) {
            if n == 0 {
                break;
            }
        }
        Ok(())
    })();
    if r.is_err() {
        rec.completed = false;
    }
    rec.verified = Some(verified && rec.completed);
    rec.duration_s = round(t0.elapsed().as_secs_f64(), 6);
    rec
}

/// Accept TCP flows on `listener` forever, one thread per connection.
pub fn serve_forever(listener: TcpListener, out: Option<Sink>, idle: Duration) {
    for conn in listener.incoming() {
        let Ok(s) = conn else { continue };
        let peer = s.peer_addr().unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        let out = out.clone();
        let spawned = std::thread::Builder::new().stack_size(256 * 1024).spawn(move || {
            let rec = serve(s, peer, idle);
            if let Some(o) = out {
                o.write(&rec);
            }
        });
        if spawned.is_err() {
            eprintln!("p4rcp-host: cannot start a thread for a TCP flow from {peer}");
        }
    }
}

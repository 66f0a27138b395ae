//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_p4rcp-host")
}

/// The link emulator.
pub fn linkem_bin() -> &'static str {
    env!("CARGO_BIN_EXE_p4rcp-linkem")
}

/// The rate-based UDP schemes that the delivery tests run from end to end,
/// each test adding a fixed rate its link carries and TCP.
pub const RATE_SCHEMES: [&str; 6] = [
    "rcp",
    "allegro",
    "allegro-ref",
    "vivace",
    "vivace-loss",
    "vivace-latency",
];

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("p4rcp-host-test-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("mkdir {p:?}: {e}"));
        TempDir(p)
    }
    pub fn file(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process killed (SIGKILL) and reaped on drop.
pub struct Proc(pub Option<Child>);

impl Proc {
    pub fn spawn(cmd: &mut Command) -> Proc {
        let c = cmd.spawn().unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
        Proc(Some(c))
    }
    pub fn pid(&self) -> i32 {
        self.0.as_ref().map(|c| c.id() as i32).unwrap_or(-1)
    }
    /// SIGTERM, then wait up to `secs` for exit; returns stderr.
    pub fn terminate(&mut self, secs: f64) -> String {
        let Some(mut c) = self.0.take() else {
            return String::new();
        };
        // SAFETY: signalling our own child by pid.
        unsafe {
            libc::kill(c.id() as i32, libc::SIGTERM);
        }
        let t0 = Instant::now();
        while t0.elapsed().as_secs_f64() < secs {
            if let Ok(Some(_)) = c.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = c.kill();
        let _ = c.wait();
        let mut s = String::new();
        if let Some(mut e) = c.stderr.take() {
            let _ = e.read_to_string(&mut s);
        }
        s
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Run `cmd` to completion, killing it after `secs`.
pub fn run_with_timeout(cmd: &mut Command, secs: f64) -> Output {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let t_out = std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(o) = out.as_mut() {
            let _ = o.read_to_end(&mut s);
        }
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_end(&mut s);
        }
        s
    });
    let t0 = Instant::now();
    let status = loop {
        if let Ok(Some(st)) = child.try_wait() {
            break st;
        }
        if t0.elapsed().as_secs_f64() > secs {
            let _ = child.kill();
            let st = child.wait().unwrap_or_else(|e| panic!("wait: {e}"));
            let stderr = String::from_utf8_lossy(&t_err.join().unwrap_or_default()).into_owned();
            panic!("{cmd:?} did not finish within {secs} s (status {st}); stderr:\n{stderr}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
    }
}

/// Parse JSON lines.
pub fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .filter(|l| l.trim_start().starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
        .collect()
}

pub fn read_json_lines(path: &str) -> Vec<serde_json::Value> {
    json_lines(&std::fs::read_to_string(path).unwrap_or_default())
}

/// A free UDP port on 127.0.0.1 whose TCP twin is also free.
pub fn free_port() -> u16 {
    for _ in 0..100 {
        let u = std::net::UdpSocket::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
        let p = u.local_addr().map(|a| a.port()).unwrap_or(0);
        if p != 0 && p < 65535 && std::net::TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
            return p;
        }
    }
    panic!("no free port");
}

/// Wait until `path` holds at least `n` JSON lines (or `secs` passed).
pub fn wait_for_lines(path: &str, n: usize, secs: f64) -> Vec<serde_json::Value> {
    let t0 = Instant::now();
    loop {
        let v = read_json_lines(path);
        if v.len() >= n || t0.elapsed().as_secs_f64() > secs {
            return v;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

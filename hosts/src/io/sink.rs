//! Where JSON lines go: stdout or a file opened for appending.

use serde::Serialize;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

/// Where JSON lines go: stdout or a file opened for appending. Cloneable
/// and shareable between threads; every line is flushed.
#[derive(Clone)]
pub struct Sink {
    inner: Arc<Mutex<Box<dyn Write + Send>>>,
}

impl Sink {
    pub fn stdout() -> Sink {
        Sink {
            inner: Arc::new(Mutex::new(Box::new(io::stdout()))),
        }
    }
    pub fn append(path: &str) -> io::Result<Sink> {
        let f = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Sink {
            inner: Arc::new(Mutex::new(Box::new(io::BufWriter::new(f)))),
        })
    }
    pub fn open(path: Option<&str>) -> Result<Sink, String> {
        match path {
            None | Some("-") => Ok(Sink::stdout()),
            Some(p) => Sink::append(p).map_err(|e| format!("cannot open {p}: {e}")),
        }
    }
    pub fn write<T: Serialize>(&self, v: &T) {
        let line = match serde_json::to_string(v) {
            Ok(l) => l,
            Err(e) => format!("{{\"error\":\"record not serialisable: {e}\"}}"),
        };
        let mut w = match self.inner.lock() {
            Ok(w) => w,
            Err(p) => p.into_inner(),
        };
        let _ = writeln!(w, "{line}");
        let _ = w.flush();
    }
    /// Like `write` without flushing (traces: many lines).
    pub fn write_noflush<T: Serialize>(&self, v: &T) {
        if let Ok(line) = serde_json::to_string(v) {
            let mut w = match self.inner.lock() {
                Ok(w) => w,
                Err(p) => p.into_inner(),
            };
            let _ = writeln!(w, "{line}");
        }
    }
    pub fn flush(&self) {
        let mut w = match self.inner.lock() {
            Ok(w) => w,
            Err(p) => p.into_inner(),
        };
        let _ = w.flush();
    }
}

//! Records of TCP flows that another engine's TCP carried (ns-3's), made
//! by the code that makes the hosts' own ([`crate::tcp::TcpSent`],
//! [`RecvRecord::tcp`], [`TraceLine::tcp_sample`]), so that each record
//! has one definition.

use super::{guard, write_str, Failure, P4rcpAddr, P4rcpStr};
use crate::tcp::{Confirmation, TcpSent};
use crate::transport::record::{round, RecvRecord, TraceLine};
use crate::transport::wire::SIZE_UNKNOWN;
use std::cell::RefCell;
use std::ffi::{c_char, CStr};

thread_local! {
    /// The text the last `p4rcp_tcp_*` call on this thread returned.
    static TEXT: RefCell<String> = const { RefCell::new(String::new()) };
}

/// What a TCP flow's sender measured (`p4rcp_tcp_flow`).
#[repr(C)]
pub struct P4rcpTcpFlow {
    pub flow_id: u32,
    /// Position in a traffic generator's workload; negative: none.
    pub index: i64,
    /// The scheme as records name it (`tcp`, `tcp:reno`); NUL-terminated.
    pub scheme: *const c_char,
    pub dst: P4rcpAddr,
    pub dscp: u8,
    /// When the flow started (just before connect()).
    pub start_unix_s: f64,
    pub size_bytes: u64,
    /// Whether the receiver's confirmation was read: then `fct_s` (from
    /// `start_unix_s` until it was read) and the bytes it confirmed.
    pub confirmed: bool,
    pub fct_s: f64,
    pub confirmed_bytes: u64,
    /// Why the flow has no confirmation; null or empty: no error.
    pub error: *const c_char,
    pub retransmissions: u64,
    pub segments: u64,
    /// Smoothed and minimum RTT in seconds; not > 0: never measured.
    pub srtt_s: f64,
    pub min_rtt_s: f64,
}

/// What a TCP flow's receiver saw (`p4rcp_tcp_recv`).
#[repr(C)]
pub struct P4rcpTcpRecv {
    pub flow_id: u32,
    pub peer: P4rcpAddr,
    /// The size the sender announced, or `P4RCP_SIZE_UNKNOWN`.
    pub size: u64,
    pub bytes_delivered: u64,
    pub completed: bool,
    pub start_unix_s: f64,
    pub duration_s: f64,
    /// When the last byte arrived; negative: never (not completed).
    pub last_byte_unix_s: f64,
}

unsafe fn text(p: *const c_char, what: &str) -> Result<Option<String>, Failure> {
    if p.is_null() {
        return Ok(None);
    }
    let s = CStr::from_ptr(p)
        .to_str()
        .map_err(|_| Failure::argument(format!("{what} is not UTF-8")))?;
    Ok((!s.is_empty()).then(|| s.to_string()))
}

fn measured(s: f64) -> Option<f64> {
    (s > 0.0 && s.is_finite()).then_some(s)
}

fn put<T: serde::Serialize>(item: &T, out: *mut P4rcpStr) -> Result<(), Failure> {
    if out.is_null() {
        return Err(Failure::argument("null out"));
    }
    TEXT.with(|t| {
        let mut t = t.borrow_mut();
        *t = serde_json::to_string(item).expect("a record serializes");
        write_str(&t, out)
    })
}

/// The flow record (one JSON object) of a TCP flow `f`, valid until the
/// next `p4rcp_tcp_*` call on this thread.
///
/// # Safety
/// `f` points to a valid `P4rcpTcpFlow` whose strings are null or
/// NUL-terminated; `json` points to writable memory.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_tcp_flow_record(f: *const P4rcpTcpFlow, json: *mut P4rcpStr) -> i32 {
    guard(|| {
        let f = f.as_ref().ok_or_else(|| Failure::argument("null flow"))?;
        let scheme = text(f.scheme, "scheme")?.ok_or_else(|| Failure::argument("no scheme"))?;
        let sent = TcpSent {
            flow_id: f.flow_id,
            index: u64::try_from(f.index).ok(),
            scheme,
            dst: f.dst.socket_addr().to_string(),
            dscp: f.dscp,
            start_unix_s: f.start_unix_s,
            size_bytes: f.size_bytes,
            confirmation: f.confirmed.then_some(Confirmation {
                fct_s: f.fct_s,
                bytes: f.confirmed_bytes,
                verified: None, // ns-3's TCP carries no content
            }),
            error: text(f.error, "error")?,
            retransmissions: f.retransmissions,
            segments: f.segments,
            srtt_s: measured(f.srtt_s),
            min_rtt_s: measured(f.min_rtt_s),
        };
        put(&sent.record(), json)
    })
}

/// The receiver's record (one JSON object) of a TCP flow `r`, valid until
/// the next `p4rcp_tcp_*` call on this thread.
///
/// # Safety
/// `r` points to a valid `P4rcpTcpRecv`; `json` points to writable memory.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_tcp_recv_record(r: *const P4rcpTcpRecv, json: *mut P4rcpStr) -> i32 {
    guard(|| {
        let r = r.as_ref().ok_or_else(|| Failure::argument("null flow"))?;
        let mut rec = RecvRecord::tcp(r.peer.socket_addr().to_string(), r.start_unix_s);
        rec.flow_id = r.flow_id;
        rec.size_bytes = (r.size != SIZE_UNKNOWN).then_some(r.size);
        rec.bytes_delivered = r.bytes_delivered;
        rec.completed = r.completed;
        rec.duration_s = round(r.duration_s, 6);
        rec.last_byte_unix_s = (r.last_byte_unix_s >= 0.0).then(|| round(r.last_byte_unix_s, 6));
        put(&rec, json)
    })
}

/// A TCP flow's periodic trace sample (one JSON object) at `t_s` seconds
/// after its start, valid until the next `p4rcp_tcp_*` call on this thread.
///
/// # Safety
/// `json` points to writable memory.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_tcp_sample_line(
    flow_id: u32,
    t_s: f64,
    cwnd_kbps: f64,
    srtt_s: f64,
    goodput_kbps: f64,
    json: *mut P4rcpStr,
) -> i32 {
    guard(|| {
        if ![t_s, cwnd_kbps, srtt_s, goodput_kbps].iter().all(|v| v.is_finite()) {
            return Err(Failure::argument("a sample's values must be finite"));
        }
        put(
            &TraceLine::tcp_sample(flow_id, t_s, cwnd_kbps, srtt_s, goodput_kbps),
            json,
        )
    })
}

//! The host transport as a C library (`include/p4rcp_host.h`), so that
//! other engines drive the same state machine as the hosts' event loops:
//! the ns-3 engine's applications (`topo/ns3/model/host-sender.*`, `host-receiver.*`) hand it
//! datagrams and timers in simulated time and send what it returns.
//!
//! The interface is small and defensive: opaque handles with an explicit
//! free, every pointer checked, errors as return codes with a message
//! ([`p4rcp_last_error`]), no panic across the boundary (a panic is caught,
//! reported as `P4RCP_ERR_INTERNAL`, and poisons the handle: every later
//! call on it fails the same way). Datagrams are byte buffers with an IPv4
//! address, left in an outbox the caller owns and hands to every call (one
//! for all its flows: its buffer is reused, not grown again per flow); time
//! is seconds of the caller's clock (`now`), and wall-clock times in records
//! are `epoch_unix + now`.
//!
//! The wire constants that other languages need are generated from
//! [`crate::transport::wire`] into `include/p4rcp_wire.h` by a test
//! (`wire_header.rs`), which fails while the committed file differs.

mod tcp;
#[cfg(test)]
mod wire_header;

pub use tcp::{p4rcp_tcp_flow_record, p4rcp_tcp_recv_record, p4rcp_tcp_sample_line, P4rcpTcpFlow, P4rcpTcpRecv};

use crate::cc::CcSpec;
use crate::transport::receiver::Receiver;
use crate::transport::sender::{FlowParams, SenderFlow};
use crate::transport::wire::{self, Packet, SIZE_UNKNOWN};
use crate::transport::Tx;
use crate::workload::arrivals;
use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Return codes.
pub const P4RCP_OK: i32 = 0;
/// An argument is invalid (a null pointer, a value out of range, an
/// unknown scheme): nothing changed.
pub const P4RCP_ERR_ARGUMENT: i32 = 1;
/// A datagram is not a well-formed p4rcp datagram: dropped.
pub const P4RCP_ERR_MALFORMED: i32 = 2;
/// The library failed (a bug): the handle is unusable from now on.
pub const P4RCP_ERR_INTERNAL: i32 = 3;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// What a failed call tells its caller.
struct Failure {
    code: i32,
    message: String,
}

impl Failure {
    fn argument(message: impl Into<String>) -> Failure {
        Failure {
            code: P4RCP_ERR_ARGUMENT,
            message: message.into(),
        }
    }
}

fn set_last_error(message: &str) {
    let c = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

/// Runs `f`, turning its failure or panic into a return code and the
/// thread's last error.
fn guard(f: impl FnOnce() -> Result<(), Failure>) -> i32 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => P4RCP_OK,
        Ok(Err(failure)) => {
            set_last_error(&failure.message);
            failure.code
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_string());
            set_last_error(&format!("internal error: {what}"));
            P4RCP_ERR_INTERNAL
        }
    }
}

/// The message of the last call on this thread that did not return
/// `P4RCP_OK` (empty if none did). Valid until the next failing call on
/// this thread.
#[no_mangle]
pub extern "C" fn p4rcp_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// An IPv4 address and a UDP port, both in host byte order.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct P4rcpAddr {
    pub ip: u32,
    pub port: u16,
}

impl P4rcpAddr {
    fn socket_addr(self) -> SocketAddr {
        SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::from(self.ip), self.port))
    }

    fn of(addr: SocketAddr) -> P4rcpAddr {
        match addr {
            SocketAddr::V4(a) => P4rcpAddr {
                ip: u32::from(*a.ip()),
                port: a.port(),
            },
            // The transport only answers the addresses it was given.
            SocketAddr::V6(_) => unreachable!("the transport was given no IPv6 address"),
        }
    }
}

/// A byte string the library owns (not NUL-terminated).
#[repr(C)]
pub struct P4rcpStr {
    pub ptr: *const c_char,
    pub len: usize,
}

/// One datagram the transport wants sent, owned by the library.
#[repr(C)]
pub struct P4rcpDatagram {
    pub data: *const u8,
    pub len: usize,
    pub dst: P4rcpAddr,
}

/// Everything that describes one flow to send (`p4rcp-host send`'s
/// arguments, `hosts/README.md`).
#[repr(C)]
pub struct P4rcpFlowParams {
    pub flow_id: u32,
    /// Position in a traffic generator's workload; negative: none.
    pub index: i64,
    /// The scheme as `--cc` takes it (`rcp`, `allegro`, `vivace-loss`,
    /// `fixed:10mbit`, ...); NUL-terminated. TCP is not this transport's.
    pub scheme: *const c_char,
    /// Application bytes, or `P4RCP_SIZE_UNKNOWN`: new data for `duration_s`.
    pub size: u64,
    pub duration_s: f64,
    pub mss: u32,
    pub max_rate_kbps: f64,
    pub min_rate_kbps: f64,
    pub timeout_s: f64,
    /// Trace lines (rate changes, monitor intervals, samples every
    /// `sample_interval_s`; 0: no samples), taken with
    /// [`p4rcp_sender_take_trace`].
    pub trace: bool,
    pub sample_interval_s: f64,
    pub dscp: u8,
    /// Seeds the controller's randomness (PCC's trial order, MI lengths).
    pub seed: u64,
    pub dst: P4rcpAddr,
}

/// Datagrams a call left to send, in order.
#[derive(Default)]
pub struct P4rcpOutbox {
    bytes: Vec<u8>,
    items: Vec<(usize, usize, SocketAddr)>,
}

impl P4rcpOutbox {
    fn clear(&mut self) {
        self.bytes.clear();
        self.items.clear();
    }
}

impl Tx for P4rcpOutbox {
    fn send(&mut self, buf: &[u8], dst: SocketAddr) -> bool {
        self.items.push((self.bytes.len(), buf.len(), dst));
        self.bytes.extend_from_slice(buf);
        true
    }
}

/// An empty outbox, which [`p4rcp_outbox_free`] frees.
#[no_mangle]
pub extern "C" fn p4rcp_outbox_new() -> *mut P4rcpOutbox {
    Box::into_raw(Box::default())
}

/// Frees an outbox (null: nothing).
///
/// # Safety
/// `outbox` is null or an outbox of [`p4rcp_outbox_new`] not freed before.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_outbox_free(outbox: *mut P4rcpOutbox) {
    if !outbox.is_null() {
        drop(Box::from_raw(outbox));
    }
}

/// How many datagrams `outbox` holds.
///
/// # Safety
/// `outbox` is null or a live outbox.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_outbox_len(outbox: *const P4rcpOutbox) -> usize {
    outbox.as_ref().map_or(0, |o| o.items.len())
}

/// Datagram `i` of `outbox`; an empty datagram if `i` is out of range.
/// Valid until the outbox is next handed to a call.
///
/// # Safety
/// As [`p4rcp_outbox_len`].
#[no_mangle]
pub unsafe extern "C" fn p4rcp_outbox_get(outbox: *const P4rcpOutbox, i: usize) -> P4rcpDatagram {
    match outbox.as_ref().and_then(|o| o.items.get(i).map(|item| (o, item))) {
        Some((o, &(start, len, dst))) => P4rcpDatagram {
            data: o.bytes[start..].as_ptr(),
            len,
            dst: P4rcpAddr::of(dst),
        },
        None => P4rcpDatagram {
            data: std::ptr::null(),
            len: 0,
            dst: P4rcpAddr { ip: 0, port: 0 },
        },
    }
}

/// A handle's state; poisoned once a call on it panicked.
trait Handle {
    fn poisoned(&mut self) -> &mut bool;
}

/// The outbox a call fills, emptied first.
unsafe fn outbox<'a>(out: *mut P4rcpOutbox) -> Result<&'a mut P4rcpOutbox, Failure> {
    let out = out.as_mut().ok_or_else(|| Failure::argument("null outbox"))?;
    out.clear();
    Ok(out)
}

/// Runs `f` on the handle behind `h`; a panic poisons it.
unsafe fn with<H: Handle>(h: *mut H, f: impl FnOnce(&mut H) -> Result<(), Failure>) -> i32 {
    let Some(h) = h.as_mut() else {
        set_last_error("null handle");
        return P4RCP_ERR_ARGUMENT;
    };
    if *h.poisoned() {
        set_last_error("the handle failed earlier and is unusable");
        return P4RCP_ERR_INTERNAL;
    }
    let code = guard(|| f(h));
    if code == P4RCP_ERR_INTERNAL {
        *h.poisoned() = true;
    }
    code
}

fn finite_time(now: f64) -> Result<(), Failure> {
    if now.is_finite() {
        Ok(())
    } else {
        Err(Failure::argument(format!("now must be a finite time, got {now}")))
    }
}

unsafe fn bytes<'a>(data: *const u8, len: usize) -> Result<&'a [u8], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if data.is_null() {
        return Err(Failure::argument("null datagram"));
    }
    Ok(std::slice::from_raw_parts(data, len))
}

fn write_str(text: &str, out: *mut P4rcpStr) -> Result<(), Failure> {
    // SAFETY: the callers checked `out` for null; it points to a P4rcpStr.
    unsafe {
        *out = P4rcpStr {
            ptr: text.as_ptr().cast(),
            len: text.len(),
        };
    }
    Ok(())
}

fn json_lines<T: serde::Serialize>(items: &[T], text: &mut String) {
    text.clear();
    for item in items {
        // Records and trace lines hold numbers, strings and options only.
        text.push_str(&serde_json::to_string(item).expect("a record serializes"));
        text.push('\n');
    }
}

// ------------------------------------------------------------------ sender

/// One flow's sender.
pub struct P4rcpSender {
    flow: SenderFlow,
    text: String,
    poisoned: bool,
}

impl Handle for P4rcpSender {
    fn poisoned(&mut self) -> &mut bool {
        &mut self.poisoned
    }
}

/// The flow `p` describes, checked as `p4rcp-host send` checks its
/// arguments.
unsafe fn flow_params(p: &P4rcpFlowParams) -> Result<(FlowParams, CcSpec), Failure> {
    if p.scheme.is_null() {
        return Err(Failure::argument("null scheme"));
    }
    let scheme = CStr::from_ptr(p.scheme)
        .to_str()
        .map_err(|_| Failure::argument("scheme is not UTF-8"))?;
    let cc = CcSpec::parse(scheme).map_err(Failure::argument)?;
    if let CcSpec::Tcp(_) = cc {
        return Err(Failure::argument(format!("{scheme} is TCP, not this transport's")));
    }
    let positive = |what: &str, v: f64| {
        if v > 0.0 && v.is_finite() {
            Ok(v)
        } else {
            Err(Failure::argument(format!("{what} must be > 0 and finite, got {v}")))
        }
    };
    let max_rate = positive("max_rate_kbps", p.max_rate_kbps)?;
    let min_rate = positive("min_rate_kbps", p.min_rate_kbps)?;
    if min_rate > max_rate {
        return Err(Failure::argument(format!(
            "min_rate_kbps ({min_rate}) exceeds max_rate_kbps ({max_rate})"
        )));
    }
    let timeout = positive("timeout_s", p.timeout_s)?;
    if p.mss == 0 || p.mss > u16::MAX as u32 {
        return Err(Failure::argument(format!(
            "mss must be 1..=65535 (a SYN's u16), got {}",
            p.mss
        )));
    }
    let (size, duration) = if p.size == SIZE_UNKNOWN {
        (None, Some(positive("duration_s of an open-ended flow", p.duration_s)?))
    } else {
        (Some(p.size), None)
    };
    if !(p.sample_interval_s >= 0.0 && p.sample_interval_s.is_finite()) {
        return Err(Failure::argument(format!(
            "sample_interval_s must be >= 0, got {}",
            p.sample_interval_s
        )));
    }
    if p.dscp > 63 {
        return Err(Failure::argument(format!("dscp must be 0..=63, got {}", p.dscp)));
    }
    let params = FlowParams {
        flow_id: p.flow_id,
        index: u64::try_from(p.index).ok(),
        dst: p.dst.socket_addr(),
        scheme: cc.name(),
        size,
        duration,
        mss: p.mss as usize,
        max_rate_kbps: max_rate,
        min_rate_kbps: min_rate,
        timeout_s: timeout,
        trace: p.trace,
        sample_interval_s: p.sample_interval_s,
        dscp: p.dscp,
    };
    Ok((params, cc))
}

/// A flow that sends its SYN at its first [`p4rcp_sender_on_timer`]; its
/// record's start is `epoch_unix + now`. On success `*out` holds the
/// handle, which [`p4rcp_sender_free`] frees.
///
/// # Safety
/// `p` points to a valid `P4rcpFlowParams` whose `scheme` is a
/// NUL-terminated string; `out` points to writable memory.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_sender_new(
    p: *const P4rcpFlowParams,
    now: f64,
    epoch_unix: f64,
    out: *mut *mut P4rcpSender,
) -> i32 {
    guard(|| {
        let (Some(p), false) = (p.as_ref(), out.is_null()) else {
            return Err(Failure::argument("null params or out"));
        };
        finite_time(now)?;
        finite_time(epoch_unix)?;
        let (params, cc) = flow_params(p)?;
        let controller = cc
            .build(p.seed, params.max_rate_kbps)
            .ok_or_else(|| Failure::argument("no controller for this scheme"))?;
        let sender = P4rcpSender {
            flow: SenderFlow::new(params, controller, now, epoch_unix + now),
            text: String::new(),
            poisoned: false,
        };
        *out = Box::into_raw(Box::new(sender));
        Ok(())
    })
}

/// Frees a sender (null: nothing).
///
/// # Safety
/// `h` is null or a handle of [`p4rcp_sender_new`] not freed before.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_sender_free(h: *mut P4rcpSender) {
    if !h.is_null() {
        drop(Box::from_raw(h));
    }
}

/// Does what is due at `now`, leaving the datagrams to send in `out`.
///
/// # Safety
/// `h` is null or a live sender handle; `out` is null or a live outbox.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_sender_on_timer(h: *mut P4rcpSender, now: f64, out: *mut P4rcpOutbox) -> i32 {
    with(h, |s| {
        finite_time(now)?;
        s.flow.on_timer(now, outbox(out)?);
        Ok(())
    })
}

/// A datagram for this flow arrived at `now` (its flow id is the flow's:
/// [`p4rcp_datagram_flow_id`]), leaving the datagrams to send in `out`.
/// `P4RCP_ERR_MALFORMED` if it is not a p4rcp datagram.
///
/// # Safety
/// `h` is null or a live sender handle; `data` holds `len` bytes; `out` is
/// null or a live outbox.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_sender_on_datagram(
    h: *mut P4rcpSender,
    now: f64,
    data: *const u8,
    len: usize,
    out: *mut P4rcpOutbox,
) -> i32 {
    with(h, |s| {
        finite_time(now)?;
        let buf = bytes(data, len)?;
        let out = outbox(out)?;
        let pkt = Packet::parse(buf).map_err(|e| Failure {
            code: P4RCP_ERR_MALFORMED,
            message: format!("malformed datagram: {e}"),
        })?;
        s.flow.on_packet(&pkt, now, out);
        Ok(())
    })
}

/// The run is over: the flow ends now (a flow not done is recorded as
/// interrupted).
///
/// # Safety
/// `h` is null or a live sender handle.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_sender_interrupt(h: *mut P4rcpSender) -> i32 {
    with(h, |s| {
        s.flow.interrupt();
        Ok(())
    })
}

/// When the flow next needs [`p4rcp_sender_on_timer`]; infinity: never
/// (done, or the handle is unusable).
///
/// # Safety
/// `h` is null or a live sender handle.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_sender_next_wake(h: *const P4rcpSender) -> f64 {
    match h.as_ref() {
        Some(s) if !s.poisoned => s.flow.next_wake(),
        _ => f64::INFINITY,
    }
}

/// Whether the flow is over (completed, failed or interrupted); an
/// unusable handle is over.
///
/// # Safety
/// `h` is null or a live sender handle.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_sender_is_done(h: *const P4rcpSender) -> bool {
    h.as_ref().is_none_or(|s| s.poisoned || s.flow.is_done())
}

/// The flow's record as the hosts write it (one JSON object, no newline),
/// valid until the next call on the sender.
///
/// # Safety
/// `h` is null or a live sender handle; `json` points to writable memory.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_sender_record(h: *mut P4rcpSender, json: *mut P4rcpStr) -> i32 {
    with(h, |s| {
        if json.is_null() {
            return Err(Failure::argument("null out"));
        }
        s.text = serde_json::to_string(&s.flow.record()).expect("a record serializes");
        write_str(&s.text, json)
    })
}

/// The flow's trace lines since the last call, as the hosts write them
/// (JSON lines, each ending in a newline), valid until the next call on
/// the sender.
///
/// # Safety
/// `h` is null or a live sender handle; `lines` points to writable memory.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_sender_take_trace(h: *mut P4rcpSender, lines: *mut P4rcpStr) -> i32 {
    with(h, |s| {
        if lines.is_null() {
            return Err(Failure::argument("null out"));
        }
        let trace = s.flow.take_trace();
        json_lines(&trace, &mut s.text);
        write_str(&s.text, lines)
    })
}

// ---------------------------------------------------------------- receiver

/// The receiver of a host: every flow sent to its address.
pub struct P4rcpReceiver {
    rx: Receiver,
    epoch_unix: f64,
    text: String,
    poisoned: bool,
}

impl Handle for P4rcpReceiver {
    fn poisoned(&mut self) -> &mut bool {
        &mut self.poisoned
    }
}

/// A receiver that forgets flows idle for `idle_timeout_s` and buffers
/// `window` bytes beyond each flow's cumulative ack; its records' times are
/// `epoch_unix + now`.
///
/// # Safety
/// `out` points to writable memory.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_receiver_new(
    idle_timeout_s: f64,
    window: u32,
    epoch_unix: f64,
    out: *mut *mut P4rcpReceiver,
) -> i32 {
    guard(|| {
        if out.is_null() {
            return Err(Failure::argument("null out"));
        }
        if !(idle_timeout_s > 0.0) {
            return Err(Failure::argument(format!(
                "idle_timeout_s must be > 0, got {idle_timeout_s}"
            )));
        }
        if window == 0 {
            return Err(Failure::argument("window must be > 0"));
        }
        finite_time(epoch_unix)?;
        let receiver = P4rcpReceiver {
            rx: Receiver::new(idle_timeout_s, window),
            epoch_unix,
            text: String::new(),
            poisoned: false,
        };
        *out = Box::into_raw(Box::new(receiver));
        Ok(())
    })
}

/// Frees a receiver (null: nothing).
///
/// # Safety
/// `h` is null or a handle of [`p4rcp_receiver_new`] not freed before.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_receiver_free(h: *mut P4rcpReceiver) {
    if !h.is_null() {
        drop(Box::from_raw(h));
    }
}

/// A datagram from `from` arrived at `now`, leaving the answers in `out`.
/// Malformed and unexpected datagrams are counted and dropped, as the
/// hosts' receiver does.
///
/// # Safety
/// `h` is null or a live receiver handle; `data` holds `len` bytes; `out` is
/// null or a live outbox.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_receiver_on_datagram(
    h: *mut P4rcpReceiver,
    now: f64,
    data: *const u8,
    len: usize,
    from: P4rcpAddr,
    out: *mut P4rcpOutbox,
) -> i32 {
    with(h, |r| {
        finite_time(now)?;
        let buf = bytes(data, len)?;
        let unix = r.epoch_unix + now;
        r.rx.on_datagram(buf, from.socket_addr(), now, unix, outbox(out)?);
        Ok(())
    })
}

/// Does what is due at `now` (forgets idle flows, recording them).
///
/// # Safety
/// `h` is null or a live receiver handle.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_receiver_on_timer(h: *mut P4rcpReceiver, now: f64) -> i32 {
    with(h, |r| {
        finite_time(now)?;
        r.rx.on_timer(now);
        Ok(())
    })
}

/// When the receiver next needs [`p4rcp_receiver_on_timer`]; infinity:
/// never.
///
/// # Safety
/// `h` is null or a live receiver handle.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_receiver_next_wake(h: *const P4rcpReceiver) -> f64 {
    match h.as_ref() {
        Some(r) if !r.poisoned => r.rx.next_wake(),
        _ => f64::INFINITY,
    }
}

/// The run is over: every open flow is recorded as incomplete.
///
/// # Safety
/// `h` is null or a live receiver handle.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_receiver_close_all(h: *mut P4rcpReceiver, now: f64) -> i32 {
    with(h, |r| {
        finite_time(now)?;
        r.rx.close_all(now);
        Ok(())
    })
}

/// The records of the flows that ended since the last call, as the hosts
/// write them (JSON lines), valid until the next call on the receiver.
///
/// # Safety
/// `h` is null or a live receiver handle; `lines` points to writable memory.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_receiver_take_records(h: *mut P4rcpReceiver, lines: *mut P4rcpStr) -> i32 {
    with(h, |r| {
        if lines.is_null() {
            return Err(Failure::argument("null out"));
        }
        let records = r.rx.take_records();
        json_lines(&records, &mut r.text);
        write_str(&r.text, lines)
    })
}

// ------------------------------------------------------------------- misc

/// The flow id of a p4rcp datagram, to find its flow's sender (read from
/// its headers; the sender checks the rest); `P4RCP_ERR_MALFORMED` (and the
/// reason) if its headers are not a p4rcp datagram's.
///
/// # Safety
/// `data` holds `len` bytes; `flow_id` points to writable memory.
#[no_mangle]
pub unsafe extern "C" fn p4rcp_datagram_flow_id(data: *const u8, len: usize, flow_id: *mut u32) -> i32 {
    guard(|| {
        if flow_id.is_null() {
            return Err(Failure::argument("null out"));
        }
        *flow_id = wire::flow_id(bytes(data, len)?).map_err(|e| Failure {
            code: P4RCP_ERR_MALFORMED,
            message: format!("malformed datagram: {e}"),
        })?;
        Ok(())
    })
}

/// The controller seed of flow `index` of a traffic generator started with
/// `--seed seed`, as `p4rcp-host traffic` seeds it.
#[no_mangle]
pub extern "C" fn p4rcp_traffic_flow_seed(seed: u64, index: u64) -> u64 {
    arrivals::flow_seed(seed, index)
}

#[cfg(test)]
mod tests;

//! The C interface driven as a C caller drives it: senders and a receiver
//! exchanging datagrams in simulated time, through nothing but the
//! `extern "C"` functions.

use super::*;
use crate::tcp::{Confirmation, TcpSent};
use crate::transport::record::TraceLine;
use crate::transport::wire::{Body, RCP_UDP_PORT};
use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::CString;

const SENDER: P4rcpAddr = P4rcpAddr {
    ip: 0x0a00_0001,
    port: 40_000,
};
const RECEIVER: P4rcpAddr = P4rcpAddr {
    ip: 0x0a00_0002,
    port: RCP_UDP_PORT,
};
const EPOCH: f64 = 1_000_000.0;

fn last_error() -> String {
    // SAFETY: p4rcp_last_error returns a NUL-terminated string of this thread.
    unsafe { CStr::from_ptr(p4rcp_last_error()) }
        .to_string_lossy()
        .into_owned()
}

fn text(s: &P4rcpStr) -> String {
    // SAFETY: the library's string of `len` bytes, read before the next call.
    let bytes = unsafe { std::slice::from_raw_parts(s.ptr as *const u8, s.len) };
    String::from_utf8(bytes.to_vec()).unwrap_or_else(|e| panic!("{e}"))
}

fn params(scheme: &CString, flow_id: u32, size: u64) -> P4rcpFlowParams {
    P4rcpFlowParams {
        flow_id,
        index: -1,
        scheme: scheme.as_ptr(),
        size,
        duration_s: 0.0,
        mss: 1000,
        max_rate_kbps: 20_000.0,
        min_rate_kbps: 10.0,
        timeout_s: 30.0,
        trace: true,
        sample_interval_s: 0.1,
        dscp: 0,
        seed: flow_id as u64,
        dst: RECEIVER,
    }
}

/// The datagrams in an outbox, copied.
unsafe fn drain(outbox: *const P4rcpOutbox) -> Vec<(Vec<u8>, P4rcpAddr)> {
    (0..p4rcp_outbox_len(outbox))
        .map(|i| {
            let d = p4rcp_outbox_get(outbox, i);
            (std::slice::from_raw_parts(d.data, d.len).to_vec(), d.dst)
        })
        .collect()
}

/// A path of `one_way_s` each way through a bottleneck of `rate_kbps`
/// that stamps RCP's rate `stamp_kbps` into forward packets, and drops
/// every `drop_every`-th DATA packet (0: none).
struct Path {
    one_way_s: f64,
    rate_kbps: f64,
    stamp_kbps: u32,
    drop_every: u64,
}

enum To {
    Receiver,
    Sender(usize),
}

/// Runs the flows (scheme, size) from one sender address to one receiver
/// until every sender is done; returns the senders' records, the
/// receiver's, and the trace lines.
fn run(flows: &[(&str, u64)], path: &Path) -> (Vec<Value>, Vec<Value>, Vec<Value>) {
    let schemes: Vec<CString> = flows
        .iter()
        .map(|(s, _)| CString::new(*s).unwrap_or_default())
        .collect();
    let mut senders: Vec<*mut P4rcpSender> = Vec::new();
    let mut rx: *mut P4rcpReceiver = std::ptr::null_mut();
    let ob = p4rcp_outbox_new();
    // SAFETY: every pointer below comes from the library and is freed once, at the end.
    unsafe {
        assert_eq!(p4rcp_receiver_new(60.0, 16 << 20, EPOCH, &mut rx), P4RCP_OK);
        for (k, (scheme, (_, size))) in schemes.iter().zip(flows).enumerate() {
            let mut s = std::ptr::null_mut();
            let p = params(scheme, 100 + k as u32, *size);
            assert_eq!(p4rcp_sender_new(&p, 0.0, EPOCH, &mut s), P4RCP_OK, "{}", last_error());
            senders.push(s);
        }
        let by_id: BTreeMap<u32, usize> = (0..senders.len()).map(|k| (100 + k as u32, k)).collect();
        // (time, order) -> datagram in flight
        let mut in_flight: BTreeMap<(u64, u64), (To, Vec<u8>)> = BTreeMap::new();
        let mut order = 0u64;
        let mut bottleneck_free = 0.0f64;
        let mut data_seen = 0u64;
        let mut traces = Vec::new();
        let mut now = 0.0f64;
        let at = |t: f64| (t * 1e9).round() as u64;
        while !senders.iter().all(|s| p4rcp_sender_is_done(*s)) {
            assert!(now < 60.0, "the flows did not end");
            let mut out: Vec<(To, Vec<u8>, f64)> = Vec::new();
            // what is due now
            for (k, s) in senders.iter().enumerate() {
                if p4rcp_sender_next_wake(*s) <= now {
                    assert_eq!(p4rcp_sender_on_timer(*s, now, ob), P4RCP_OK, "{}", last_error());
                    out.extend(drain(ob).into_iter().map(|(d, a)| {
                        assert_eq!(a, RECEIVER);
                        let _ = k;
                        (To::Receiver, d, now)
                    }));
                }
            }
            if p4rcp_receiver_next_wake(rx) <= now {
                assert_eq!(p4rcp_receiver_on_timer(rx, now), P4RCP_OK);
            }
            while let Some(entry) = in_flight.first_entry() {
                if entry.key().0 > at(now) {
                    break;
                }
                let (to, data) = entry.remove();
                match to {
                    To::Receiver => {
                        assert_eq!(
                            p4rcp_receiver_on_datagram(rx, now, data.as_ptr(), data.len(), SENDER, ob),
                            P4RCP_OK
                        );
                        for (d, a) in drain(ob) {
                            assert_eq!(a, SENDER);
                            let mut id = 0;
                            assert_eq!(p4rcp_datagram_flow_id(d.as_ptr(), d.len(), &mut id), P4RCP_OK);
                            out.push((To::Sender(by_id[&id]), d, now));
                        }
                    }
                    To::Sender(k) => {
                        let s = senders[k];
                        assert_eq!(
                            p4rcp_sender_on_datagram(s, now, data.as_ptr(), data.len(), ob),
                            P4RCP_OK
                        );
                        out.extend(drain(ob).into_iter().map(|(d, _)| (To::Receiver, d, now)));
                    }
                }
            }
            // the network: forward packets through the bottleneck, answers straight back
            for (to, mut d, t) in out {
                let arrive = match to {
                    To::Receiver => {
                        let pkt = Packet::parse(&d).unwrap_or_else(|e| panic!("{e}"));
                        if let Body::Data { .. } = pkt.body {
                            data_seen += 1;
                            if path.drop_every > 0 && data_seen % path.drop_every == 0 {
                                continue;
                            }
                        }
                        if pkt.rcp.ptype.is_forward() && pkt.rcp.rate_kbps > path.stamp_kbps {
                            d[4..8].copy_from_slice(&path.stamp_kbps.to_be_bytes());
                        }
                        let start = bottleneck_free.max(t);
                        bottleneck_free = start + (d.len() + 42) as f64 * 8.0 / (path.rate_kbps * 1000.0);
                        bottleneck_free + path.one_way_s
                    }
                    To::Sender(_) => t + path.one_way_s,
                };
                order += 1;
                in_flight.insert((at(arrive), order), (to, d));
            }
            let mut next = in_flight.keys().next().map_or(f64::INFINITY, |k| k.0 as f64 / 1e9);
            for s in &senders {
                next = next.min(p4rcp_sender_next_wake(*s));
            }
            next = next.min(p4rcp_receiver_next_wake(rx));
            now = next.max(now);
        }
        let mut records = Vec::new();
        for s in &senders {
            let mut json = P4rcpStr {
                ptr: std::ptr::null(),
                len: 0,
            };
            assert_eq!(p4rcp_sender_record(*s, &mut json), P4RCP_OK);
            records.push(serde_json::from_str(&text(&json)).unwrap_or_else(|e| panic!("{e}")));
            assert_eq!(p4rcp_sender_take_trace(*s, &mut json), P4RCP_OK);
            traces.extend(
                text(&json)
                    .lines()
                    .map(|l| serde_json::from_str::<Value>(l).unwrap_or(Value::Null)),
            );
            p4rcp_sender_free(*s);
        }
        // let the receiver's FINACKs settle, then collect its records
        let mut lines = P4rcpStr {
            ptr: std::ptr::null(),
            len: 0,
        };
        assert_eq!(p4rcp_receiver_close_all(rx, now + 1.0), P4RCP_OK);
        assert_eq!(p4rcp_receiver_take_records(rx, &mut lines), P4RCP_OK);
        let received = text(&lines)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        p4rcp_receiver_free(rx);
        p4rcp_outbox_free(ob);
        (records, received, traces)
    }
}

fn clean_path() -> Path {
    Path {
        one_way_s: 0.010,
        rate_kbps: 10_000.0,
        stamp_kbps: 5_000,
        drop_every: 0,
    }
}

#[test]
fn an_rcp_flow_is_delivered_through_the_c_interface_and_recorded_as_the_hosts_record_it() {
    let (sent, received, trace) = run(&[("rcp", 200_000)], &clean_path());
    let (s, r) = (&sent[0], &received[0]);
    assert_eq!(s["completed"], true, "{s}");
    assert_eq!(s["verified"], true, "{s}");
    assert_eq!(
        (s["scheme"].as_str(), s["dst"].as_str()),
        (Some("rcp"), Some("10.0.0.2:6577"))
    );
    assert_eq!(s["size_bytes"], 200_000);
    // the router's stamp came back as the flow's rate
    assert_eq!(s["synack_rate_kbps"], 5_000);
    assert!(s["start_unix_s"].as_f64().is_some_and(|t| t == EPOCH), "{s}");
    // 200 kB at 5 Mb/s of frames (1078 per 1000 bytes): about 0.35 s after the handshake
    let fct = s["fct_s"].as_f64().unwrap_or(0.0);
    assert!((0.35..0.45).contains(&fct), "{fct}");
    assert_eq!(
        (r["completed"].as_bool(), r["verified"].as_bool()),
        (Some(true), Some(true)),
        "{r}"
    );
    assert_eq!(
        (r["bytes_delivered"].as_u64(), r["peer"].as_str()),
        (Some(200_000), Some("10.0.0.1:40000"))
    );
    assert_eq!(r["scheme"], "rcp");
    assert!(trace.iter().any(|l| l["event"] == "sample"));
    assert!(trace.iter().all(|l| l["flow_id"] == 100));
}

#[test]
fn every_udp_scheme_of_the_hosts_runs_through_it_and_recovers_losses() {
    let path = Path {
        drop_every: 50,
        stamp_kbps: u32::MAX,
        ..clean_path()
    };
    for scheme in crate::cc::UDP_SCHEMES {
        let (sent, received, _) = run(&[(scheme, 300_000)], &path);
        let (s, r) = (&sent[0], &received[0]);
        assert_eq!(
            (s["completed"].as_bool(), s["verified"].as_bool()),
            (Some(true), Some(true)),
            "{scheme}: {s}"
        );
        assert!(s["retransmissions"].as_u64().is_some_and(|n| n > 0), "{scheme}: {s}");
        assert_eq!(r["bytes_delivered"], 300_000, "{scheme}: {r}");
        let name = if scheme.starts_with("fixed") { "fixed" } else { scheme };
        assert_eq!((s["scheme"].as_str(), r["scheme"].as_str()), (Some(name), Some(name)));
    }
}

#[test]
fn flows_sharing_a_receiver_are_told_apart() {
    let (sent, received, _) = run(&[("rcp", 50_000), ("vivace", 80_000), ("rcp", 1)], &clean_path());
    let ids: Vec<u64> = sent.iter().filter_map(|s| s["flow_id"].as_u64()).collect();
    assert_eq!(ids, [100, 101, 102]);
    assert!(sent.iter().all(|s| s["completed"] == true));
    let mut delivered: Vec<(u64, u64)> = received
        .iter()
        .map(|r| {
            (
                r["flow_id"].as_u64().unwrap_or(0),
                r["bytes_delivered"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    delivered.sort();
    assert_eq!(delivered, [(100, 50_000), (101, 80_000), (102, 1)]);
}

#[test]
fn bad_arguments_are_refused_with_their_reason() {
    let mut s = std::ptr::null_mut();
    // SAFETY: the pointers are valid or null, as each case says.
    unsafe {
        let good = CString::new("rcp").unwrap_or_default();
        let cases: Vec<(CString, Box<dyn Fn(&mut P4rcpFlowParams)>, &str)> = vec![
            (
                CString::new("reno").unwrap_or_default(),
                Box::new(|_| {}),
                "unknown --cc 'reno'",
            ),
            (CString::new("tcp").unwrap_or_default(), Box::new(|_| {}), "tcp is TCP"),
            (good.clone(), Box::new(|p| p.mss = 0), "mss must be"),
            (
                good.clone(),
                Box::new(|p| p.min_rate_kbps = 1e9),
                "exceeds max_rate_kbps",
            ),
            (
                good.clone(),
                Box::new(|p| p.timeout_s = f64::NAN),
                "timeout_s must be > 0",
            ),
            (
                good.clone(),
                Box::new(|p| p.size = SIZE_UNKNOWN),
                "duration_s of an open-ended flow",
            ),
            (good.clone(), Box::new(|p| p.dscp = 64), "dscp must be"),
        ];
        for (scheme, change, says) in cases {
            let mut p = params(&scheme, 1, 1000);
            change(&mut p);
            assert_eq!(p4rcp_sender_new(&p, 0.0, EPOCH, &mut s), P4RCP_ERR_ARGUMENT, "{says}");
            assert!(last_error().contains(says), "{}: {says}", last_error());
            assert!(s.is_null());
        }
        let mut p = params(&good, 1, 1000);
        p.scheme = std::ptr::null();
        assert_eq!(p4rcp_sender_new(&p, 0.0, EPOCH, &mut s), P4RCP_ERR_ARGUMENT);
        assert_eq!(
            p4rcp_sender_new(std::ptr::null(), 0.0, EPOCH, &mut s),
            P4RCP_ERR_ARGUMENT
        );
        let ob = p4rcp_outbox_new();
        assert_eq!(p4rcp_sender_on_timer(std::ptr::null_mut(), 0.0, ob), P4RCP_ERR_ARGUMENT);
        assert_eq!(last_error(), "null handle");
        assert!(p4rcp_sender_is_done(std::ptr::null()));
        assert_eq!(p4rcp_outbox_len(std::ptr::null()), 0);
        assert!(p4rcp_outbox_get(ob, 0).data.is_null());
        let mut rx = std::ptr::null_mut();
        assert_eq!(p4rcp_receiver_new(0.0, 1, EPOCH, &mut rx), P4RCP_ERR_ARGUMENT);
        assert!(last_error().contains("idle_timeout_s"));

        // a sender refuses garbage and a bad time, and stays usable
        let p = params(&good, 7, 1000);
        assert_eq!(p4rcp_sender_new(&p, 0.0, EPOCH, &mut s), P4RCP_OK);
        assert_eq!(
            p4rcp_sender_on_datagram(s, 0.1, [1u8, 2, 3].as_ptr(), 3, ob),
            P4RCP_ERR_MALFORMED
        );
        assert_eq!(last_error(), "malformed datagram: too_short");
        assert_eq!(p4rcp_sender_on_timer(s, f64::NAN, ob), P4RCP_ERR_ARGUMENT);
        assert_eq!(p4rcp_sender_on_timer(s, 0.0, std::ptr::null_mut()), P4RCP_ERR_ARGUMENT);
        assert_eq!(last_error(), "null outbox");
        assert_eq!(p4rcp_sender_on_timer(s, 0.0, ob), P4RCP_OK);
        let syn = drain(ob);
        assert_eq!(syn.len(), 1);
        let mut id = 0;
        assert_eq!(
            p4rcp_datagram_flow_id(syn[0].0.as_ptr(), syn[0].0.len(), &mut id),
            P4RCP_OK
        );
        assert_eq!(id, 7);
        assert_eq!(
            p4rcp_datagram_flow_id([0x10u8; 20].as_ptr(), 20, &mut id),
            P4RCP_ERR_MALFORMED
        );
        assert_eq!(p4rcp_sender_interrupt(s), P4RCP_OK);
        assert!(p4rcp_sender_is_done(s) && p4rcp_sender_next_wake(s).is_infinite());
        let mut json = P4rcpStr {
            ptr: std::ptr::null(),
            len: 0,
        };
        assert_eq!(p4rcp_sender_record(s, &mut json), P4RCP_OK);
        let rec: Value = serde_json::from_str(&text(&json)).unwrap_or(Value::Null);
        assert_eq!(
            (rec["completed"].as_bool(), rec["error"].as_str()),
            (Some(false), Some("interrupted"))
        );
        p4rcp_sender_free(s);
        p4rcp_outbox_free(ob);
    }
}

struct Fragile {
    poisoned: bool,
}

impl Handle for Fragile {
    fn poisoned(&mut self) -> &mut bool {
        &mut self.poisoned
    }
}

#[test]
fn a_panic_stays_inside_and_poisons_its_handle() {
    let mut h = Fragile { poisoned: false };
    // SAFETY: a pointer to a live local.
    unsafe {
        let code = with(&mut h, |_| panic!("the transport's bug"));
        assert_eq!(code, P4RCP_ERR_INTERNAL);
        assert_eq!(last_error(), "internal error: the transport's bug");
        assert_eq!(with(&mut h, |_| Ok(())), P4RCP_ERR_INTERNAL);
        assert!(last_error().contains("unusable"));
    }
}

#[test]
fn tcp_records_are_the_hosts_tcp_records() {
    let scheme = CString::new("tcp:reno").unwrap_or_default();
    let error = CString::new("").unwrap_or_default();
    let flow = P4rcpTcpFlow {
        flow_id: 9,
        index: 3,
        scheme: scheme.as_ptr(),
        dst: P4rcpAddr {
            ip: 0x0a00_0002,
            port: 6578,
        },
        dscp: 0,
        start_unix_s: 10.5,
        size_bytes: 5000,
        confirmed: true,
        fct_s: 0.25,
        confirmed_bytes: 5000,
        error: error.as_ptr(),
        retransmissions: 1,
        segments: 6,
        srtt_s: 0.04,
        min_rtt_s: 0.0,
    };
    let mut json = P4rcpStr {
        ptr: std::ptr::null(),
        len: 0,
    };
    // SAFETY: valid structs and out pointers.
    unsafe {
        assert_eq!(p4rcp_tcp_flow_record(&flow, &mut json), P4RCP_OK);
        let expected = TcpSent {
            flow_id: 9,
            index: Some(3),
            scheme: "tcp:reno".into(),
            dst: "10.0.0.2:6578".into(),
            start_unix_s: 10.5,
            size_bytes: 5000,
            confirmation: Some(Confirmation {
                fct_s: 0.25,
                bytes: 5000,
                verified: None,
            }),
            retransmissions: 1,
            segments: 6,
            srtt_s: Some(0.04),
            ..Default::default()
        };
        assert_eq!(
            text(&json),
            serde_json::to_string(&expected.record()).unwrap_or_default()
        );
        let recv = P4rcpTcpRecv {
            flow_id: 9,
            peer: SENDER,
            size: SIZE_UNKNOWN,
            bytes_delivered: 5000,
            completed: true,
            start_unix_s: 10.6,
            duration_s: 0.2,
            last_byte_unix_s: 10.75,
        };
        assert_eq!(p4rcp_tcp_recv_record(&recv, &mut json), P4RCP_OK);
        let r: Value = serde_json::from_str(&text(&json)).unwrap_or(Value::Null);
        assert_eq!(
            (r["role"].as_str(), r["transport"].as_str(), r["peer"].as_str()),
            (Some("recv"), Some("tcp"), Some("10.0.0.1:40000"))
        );
        assert!(r["size_bytes"].is_null() && r["verified"].is_null());
        assert_eq!(r["last_byte_unix_s"], 10.75);
        assert_eq!(p4rcp_tcp_sample_line(9, 1.0, 800.0, 0.04, 700.0, &mut json), P4RCP_OK);
        assert_eq!(
            text(&json),
            serde_json::to_string(&TraceLine::tcp_sample(9, 1.0, 800.0, 0.04, 700.0)).unwrap_or_default()
        );
        assert_eq!(
            p4rcp_tcp_sample_line(9, f64::NAN, 0.0, 0.0, 0.0, &mut json),
            P4RCP_ERR_ARGUMENT
        );
    }
}

#[test]
fn traffic_seeds_are_the_generators() {
    assert_eq!(p4rcp_traffic_flow_seed(1, 0), arrivals::flow_seed(1, 0));
    assert_ne!(p4rcp_traffic_flow_seed(1, 0), p4rcp_traffic_flow_seed(1, 1));
}

/// Each `extern "C"` function of `text` (Rust or C) with its number of
/// parameters.
fn functions(text: &str, rust: bool) -> BTreeMap<String, usize> {
    let flat: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ");
    let mut found = BTreeMap::new();
    let mut rest = flat.as_str();
    while let Some(at) = rest.find("p4rcp_") {
        let tail = &rest[at..];
        let name: String = tail.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        rest = &tail[name.len()..];
        let declared = if rust {
            flat[..flat.len() - tail.len()].trim_end().ends_with("fn")
        } else {
            rest.starts_with('(') && !flat[..flat.len() - tail.len()].trim_end().ends_with(['=', '(', ','])
        };
        if declared && rest.starts_with('(') {
            let args = &rest[1..rest.find(')').unwrap_or(1)];
            let n = args
                .split(',')
                .filter(|a| !a.trim().is_empty() && a.trim() != "void")
                .count();
            found.insert(name, n);
        }
    }
    found
}

#[test]
fn the_c_header_declares_every_function_with_its_parameters() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| std::fs::read_to_string(dir.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
    let rust: BTreeMap<String, usize> = [
        functions(&read("src/ffi/mod.rs"), true),
        functions(&read("src/ffi/tcp.rs"), true),
    ]
    .into_iter()
    .flatten()
    .collect();
    let header = functions(&read("include/p4rcp_host.h"), false);
    assert!(rust.len() >= 20, "{rust:?}");
    assert_eq!(header, rust);
}

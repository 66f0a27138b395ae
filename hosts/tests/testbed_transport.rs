//! The test bed itself and the transport on it (`testbed/mod.rs`): the
//! bottleneck's rate and drops, byte-exact delivery of every scheme under
//! loss and reordering, reordering detection, `rcp` at a stamped rate,
//! open-ended flows, lost ACKs, per-flow loss in the trace.

mod testbed;

use p4rcp_host::cc::VivaceVariant as Variant;
use p4rcp_host::cc::CcSpec;
use p4rcp_host::transport::record::TraceLine;
use p4rcp_host::transport::wire::{FRAME_OVERHEAD, REF_LEN};
use testbed::{jain, simulate, FlowResult, FlowSpec, Net};

/// 20 Mb/s, 30 ms, 75 KB of buffer: the single-flow transport tests.
fn link(loss: f64, reorder: f64) -> Net {
    Net {
        loss,
        loss_back: loss,
        reorder,
        buffer_bytes: 75_000.0,
        ..Net::bottleneck(20_000.0, 0.0)
    }
}

fn one(cc: &CcSpec, size: Option<u64>, duration: Option<f64>, net: &Net, seed: u64, max: f64) -> FlowResult {
    let f = FlowSpec {
        cc: cc.clone(),
        rtt_s: 0.030,
        start_s: 0.0,
        size,
        duration,
    };
    let mut r = simulate(net, &[f], seed, max);
    r.flows.remove(0)
}

fn schemes() -> Vec<CcSpec> {
    vec![
        CcSpec::Rcp,
        CcSpec::Allegro(p4rcp_host::cc::AllegroUtility::Paper),
        CcSpec::Vivace(Variant::Default),
        CcSpec::Vivace(Variant::Loss),
        CcSpec::Vivace(Variant::Latency),
        CcSpec::Fixed(10_000.0),
    ]
}

#[test]
fn jain_index() {
    assert_eq!(jain(&[3.0, 3.0, 3.0, 3.0]), 1.0);
    assert_eq!(jain(&[4.0, 0.0, 0.0, 0.0]), 0.25);
    // (1 + 2 + 3)^2 / (3 * (1 + 4 + 9)) = 36 / 42
    assert!((jain(&[1.0, 2.0, 3.0]) - 36.0 / 42.0).abs() < 1e-12);
}

/// Every scheme delivers every byte exactly once, in order, at 0, 1, 5
/// and 10% loss both ways with 25% reordering.
#[test]
fn byte_exact_delivery_under_loss_and_reordering() {
    for cc in schemes() {
        for (i, loss) in [0.0, 0.01, 0.05, 0.10].iter().enumerate() {
            let mut l = link(*loss, 0.25);
            if cc == CcSpec::Rcp {
                l.stamp_kbps = 15_000; // a router; rcp follows it
            }
            let r = one(&cc, Some(200_000), None, &l, 100 + i as u64, 120.0);
            let what = format!("{} at {}% loss", cc.name(), loss * 100.0);
            assert!(r.sent.completed, "{what}: sender did not complete: {:?}", r.sent);
            assert_eq!(r.sent.verified, Some(true), "{what}");
            let Some(rr) = &r.recv else {
                panic!("{what}: no receiver record");
            };
            assert!(rr.completed && rr.verified == Some(true), "{what}: {rr:?}");
            assert_eq!(rr.bytes_delivered, 200_000, "{what}");
            if *loss > 0.0 {
                assert!(r.sent.retransmissions > 0, "{what}: no retransmissions?");
            }
        }
    }
}

/// Heavy reordering makes the sender declare packets lost that then
/// arrive: it notices (spurious losses) and widens its reordering window.
#[test]
fn reordering_is_detected_as_spurious_loss() {
    let r = one(&CcSpec::Fixed(10_000.0), Some(500_000), None, &link(0.0, 0.3), 4, 60.0);
    assert!(r.sent.completed && r.recv.as_ref().is_some_and(|rr| rr.verified == Some(true)));
    assert!(r.spurious > 0, "no spurious loss detected");
}

#[test]
fn rcp_paces_at_the_stamped_rate() {
    let mut l = link(0.0, 0.0);
    l.stamp_kbps = 8_000;
    let r = one(&CcSpec::Rcp, Some(1_000_000), None, &l, 5, 60.0);
    assert_eq!(r.sent.synack_rate_kbps, Some(8_000));
    let s = r.sent.send_rate_kbps.unwrap_or(0.0);
    assert!((s / 8_000.0 - 1.0).abs() < 0.01, "send rate {s}");
    assert_eq!(r.sent.retransmissions, 0);
}

#[test]
fn open_ended_flow_stops_after_its_duration() {
    let r = one(&CcSpec::Fixed(5_000.0), None, Some(2.0), &link(0.0, 0.1), 9, 60.0);
    assert!(r.sent.completed, "{:?}", r.sent);
    // data from the SYNACK (30 ms) to 2 s at 5 Mb/s, 1078-byte frames:
    // 1.97 * 5e6 / 8624 = 1142.2 packets of 1000 B
    let pkts = r.sent.size_bytes as f64 / 1000.0;
    assert!((pkts - 1142.2).abs() < 3.0, "{pkts} {:?}", r.sent);
    assert!(r.recv.as_ref().is_some_and(|rr| rr.completed && rr.verified == Some(true)));
}

/// A lost ACK is not a lost packet: the next ACK's cumulative ack or
/// SACK blocks cover it, so neither loss detection nor the monitor
/// intervals count it.
#[test]
fn lost_acks_are_not_lost_packets() {
    let net = Net {
        loss_back: 0.2,
        ..Net::bottleneck(20_000.0, 64.0)
    };
    let r = one(&CcSpec::Fixed(5_000.0), Some(1_000_000), None, &net, 3, 60.0);
    assert!(r.sent.completed, "{:?}", r.sent);
    assert_eq!(
        (r.sent.packets_lost, r.sent.retransmissions),
        (Some(0), 0),
        "{:?}",
        r.sent
    );
    let mis: Vec<&TraceLine> = r.trace.iter().filter(|l| l.event == "mi").collect();
    assert!(mis.len() > 20 && mis.iter().all(|l| l.mi_loss == 0.0));
}

/// The trace's samples and the flow record tell the flow's own loss.
#[test]
fn per_flow_loss_is_traced() {
    let net = Net {
        loss: 0.05,
        loss_back: 0.05,
        ..Net::bottleneck(20_000.0, 64.0)
    };
    let r = one(&CcSpec::Fixed(5_000.0), None, Some(20.0), &net, 4, 60.0);
    let lost = r.loss_rate();
    assert!((lost - 0.05).abs() < 0.01, "{lost}");
    let samples: Vec<f64> = r.trace.iter().filter_map(|l| l.loss).collect();
    let mean = samples.iter().sum::<f64>() / samples.len() as f64;
    assert!(
        samples.len() > 150 && (mean - 0.05).abs() < 0.01,
        "{} samples, mean {mean}",
        samples.len()
    );
}

/// The bottleneck serves at its rate and drops what does not fit.
#[test]
fn bottleneck_serves_at_its_rate_and_drops_the_excess() {
    // 12 Mb/s offered to a 10 Mb/s link with a 20-packet buffer for 5 s
    let net = Net::bottleneck(10_000.0, 20.0);
    let f = FlowSpec::long(CcSpec::Fixed(12_000.0), 0.020, 0.0, 5.0);
    let r = simulate(&net, &[f], 1, 30.0);
    let u = r.utilisation(1.0, 5.0, 10_000.0);
    assert!((u - 1.0).abs() < 0.01, "utilisation {u}");
    // about a sixth of what is offered is dropped
    let sent = r.flows[0].sent.packets_sent as f64;
    let share = r.queue_drops as f64 / sent;
    assert!((share - 1.0 / 6.0).abs() < 0.02, "{} drops of {sent}", r.queue_drops);
}

/// Routers count a flow's departure by its ENDING flag, one round trip
/// before its data ends, weighed by the size the packet carries
/// (docs/protocol.md): once per flow, sized or open-ended, retransmissions
/// never flagged, even under loss and reordering.
#[test]
fn each_flow_flags_its_ending_once_with_its_size() {
    let flows: Vec<FlowSpec> = (0..4)
        .map(|i| FlowSpec {
            cc: CcSpec::Rcp,
            rtt_s: 0.030,
            start_s: 0.1 * i as f64,
            size: if i % 2 == 0 { Some(300_000) } else { None },
            duration: if i % 2 == 0 { None } else { Some(1.5) },
        })
        .collect();
    let stamped = |loss, reorder| Net {
        stamp_kbps: 4_000,
        ..link(loss, reorder)
    };
    let r = simulate(&stamped(0.0, 0.0), &flows, 1, 30.0);
    assert!(r.flows.iter().all(|f| f.sent.completed), "every flow completes");
    // 300 kB in 1000-byte packets: 300 packets; an open-ended flow announces an unknown size
    let mut sizes = r.ending_sizes.clone();
    sizes.sort();
    assert_eq!(sizes, vec![300, 300, u16::MAX, u16::MAX]);
    // under loss a flagged packet lost before the router is flagged again when retransmitted: every flow's
    // ending reaches it
    let lossy = simulate(&stamped(0.05, 0.25), &flows, 2, 60.0);
    assert!(lossy.ending_sizes.len() >= 4, "{:?}", lossy.ending_sizes);
    assert!(lossy.ending_sizes.iter().all(|&s| s == 300 || s == u16::MAX), "{:?}", lossy.ending_sizes);
}

/// At a rate so low that a round trip carries less than a packet the unsent data never fits one round
/// trip: the flow's last packet is its ENDING, so that routers still count it leaving.
#[test]
fn a_flow_too_slow_for_a_packet_per_round_trip_flags_its_last_packet_ending() {
    let flows = vec![FlowSpec {
        cc: CcSpec::Rcp,
        rtt_s: 0.030,
        start_s: 0.0,
        size: Some(20_000),
        duration: None,
    }];
    let slow = Net {
        stamp_kbps: 50,
        ..link(0.0, 0.0)
    };
    let r = simulate(&slow, &flows, 1, 30.0);
    assert!(r.flows[0].sent.completed);
    assert_eq!(r.ending_sizes, vec![20]);
}

/// A flow slower than a packet per RTT may probe (REF) to hear the routers'
/// R between its packets, but its REFs take at most a sixteenth of its rate
/// (`transport/probe.rs`): at 50 kb/s over 30 ms, one REF per min RTT would
/// take half of it. A faster flow sends none.
#[test]
fn a_slow_rcp_flow_spends_at_most_a_sixteenth_of_its_rate_on_refs() {
    let slow = Net {
        stamp_kbps: 50,
        ..link(0.0, 0.0)
    };
    let flow = FlowSpec {
        cc: CcSpec::Rcp,
        rtt_s: 0.030,
        start_s: 0.0,
        size: None,
        duration: Some(3.0),
    };
    let r = simulate(&slow, std::slice::from_ref(&flow), 1, 20.0);
    assert!(r.flows[0].sent.completed);
    let ref_frame_bits = ((FRAME_OVERHEAD + REF_LEN) * 8) as f64;
    let ref_bits = r.refs as f64 * ref_frame_bits;
    assert!(ref_bits <= 50_000.0 * 3.0 / 16.0 + ref_frame_bits, "{} REFs in 3 s", r.refs);
    let fast = Net {
        stamp_kbps: 4_000,
        ..link(0.0, 0.0)
    };
    assert_eq!(simulate(&fast, &[flow], 1, 20.0).refs, 0);
}

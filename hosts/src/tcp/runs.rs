//! Many TCP flows from one command, a thread each: `send --flows N` (all at
//! once) and `traffic` (at the arrivals of a workload).

use super::{run_flow, TcpFlow};
use crate::io::net;
use crate::io::sink::Sink;
use crate::workload::traffic::Workload;
use std::time::Duration;

/// Run `template` once per id, all at once; each record goes to `out`.
/// Returns how many flows completed without a failed verification.
pub fn run_at_once(template: &TcpFlow, ids: &[u32], out: &Sink) -> usize {
    let handles: Vec<_> = ids
        .iter()
        .map(|&flow_id| {
            let flow = TcpFlow {
                flow_id,
                ..template.clone()
            };
            let out = out.clone();
            std::thread::spawn(move || {
                let rec = run_flow(&flow);
                out.write(&rec);
                rec.completed && rec.verified != Some(false)
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().unwrap_or(false))
        .filter(|x| *x)
        .count()
}

/// Counters of [`run_traffic`].
pub struct TrafficStats {
    pub started: u64,
    pub spawn_failures: u64,
    pub wall_s: f64,
}

/// Start flow k of `w` at its arrival time as `template` with id
/// `base_id + k`, index k and the drawn size, until the workload ends (or
/// SIGINT/SIGTERM); then wait for the flows still running.
pub fn run_traffic(mut w: Workload, template: &TcpFlow, base_id: u32, out: &Sink) -> TrafficStats {
    let t0 = std::time::Instant::now();
    let mut handles = Vec::new();
    let (mut started, mut failed_spawn) = (0u64, 0u64);
    while let Some(t) = w.peek() {
        if net::stopping() {
            break;
        }
        let now = t0.elapsed().as_secs_f64();
        if t > now {
            std::thread::sleep(Duration::from_secs_f64((t - now).min(0.5)));
            continue;
        }
        let index = w.count;
        let Some((_, size)) = w.pop() else { break };
        let flow = TcpFlow {
            flow_id: base_id.wrapping_add(index as u32),
            index: Some(index),
            size: Some(size),
            duration: None,
            ..template.clone()
        };
        let out = out.clone();
        match std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || out.write(&run_flow(&flow)))
        {
            Ok(h) => {
                handles.push(h);
                started += 1;
            }
            Err(_) => failed_spawn += 1,
        }
        handles.retain(|h| !h.is_finished());
    }
    for h in handles {
        let _ = h.join();
    }
    TrafficStats {
        started,
        spawn_failures: failed_spawn,
        wall_s: t0.elapsed().as_secs_f64(),
    }
}

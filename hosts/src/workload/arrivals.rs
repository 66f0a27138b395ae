//! Flows to start, in time order, for the sender's event loop
//! ([`crate::io::engine::SenderEngine::run`]): all at once (`send`), or at
//! the arrivals of a [`Workload`] (`traffic`).

use super::traffic::Workload;
use crate::cc::{CcSpec, RateController};
use crate::transport::sender::FlowParams;

/// Flows to start, in time order (engine seconds).
pub trait Arrivals {
    fn next_time(&self) -> Option<f64>;
    fn take(&mut self, now: f64) -> Option<(FlowParams, Box<dyn RateController>)>;
}

/// Arrivals of `send`: all flows at time 0.
pub struct AtOnce(pub Vec<(FlowParams, Box<dyn RateController>)>);

impl Arrivals for AtOnce {
    fn next_time(&self) -> Option<f64> {
        if self.0.is_empty() {
            None
        } else {
            Some(0.0)
        }
    }
    fn take(&mut self, _now: f64) -> Option<(FlowParams, Box<dyn RateController>)> {
        self.0.pop()
    }
}

/// The controller seed of flow `index` of a workload drawn with `seed`.
pub fn flow_seed(seed: u64, index: u64) -> u64 {
    seed ^ ((index + 1) * 0x9E37_79B9)
}

/// Arrivals of `traffic` over UDP: flow k of the workload is `template`
/// with id `base_id + k`, index k and the drawn size; its controller is
/// seeded by [`flow_seed`].
pub struct WorkloadArrivals {
    pub w: Workload,
    pub template: FlowParams,
    pub cc: CcSpec,
    pub base_id: u32,
    pub seed: u64,
}

impl Arrivals for WorkloadArrivals {
    fn next_time(&self) -> Option<f64> {
        self.w.peek()
    }
    fn take(&mut self, _now: f64) -> Option<(FlowParams, Box<dyn RateController>)> {
        let index = self.w.count;
        let (_, size) = self.w.pop()?;
        let p = FlowParams {
            flow_id: self.base_id.wrapping_add(index as u32),
            index: Some(index),
            size: Some(size),
            duration: None,
            ..self.template.clone()
        };
        let cc = self.cc.build(flow_seed(self.seed, index), self.template.max_rate_kbps)?;
        Some((p, cc))
    }
}

//! What the application sends: flow sizes and flow arrivals for a
//! target load. (What every byte of a flow holds is the transport's
//! pattern, [`crate::transport::pattern`].)

pub mod arrivals;
pub mod sizes;
pub mod traffic;

//! What the application sends: flow sizes, Poisson arrivals for a target
//! load, and the content pattern every byte of a flow is checked against.

pub mod arrivals;
pub mod pattern;
pub mod sizes;
pub mod traffic;

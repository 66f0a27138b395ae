mod cc;
mod pattern;
mod rangeset;
mod units;
mod wire;

fn main() {}

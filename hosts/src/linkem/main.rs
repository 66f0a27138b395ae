//! `p4rcp-linkem`: a user-space emulated link, for test beds whose kernel has no
//! `sch_netem` (this project's CI VMs ship `tbf` and `htb` but not `netem`).
//!
//! Two modes, one emulation core ([`emulate`]) behind a small [`Port`]
//! trait:
//!
//! - **TUN** (`--ns-a NS --dev-a TUN --ns-b NS --dev-b TUN`): two TUN
//!   devices, each in its own network namespace, created by the caller
//!   (`ip -n NS tuntap add dev NAME mode tun`, addresses, routes, up);
//!   `linkem` attaches to both and moves IP packets between them.
//! - **Ethernet** (`--if-a IFACE --if-b IFACE`): two existing interfaces of
//!   the namespace `linkem` runs in (e.g. the two veth ends of a Mininet
//!   node between a host and a bmv2 switch), each read and written through
//!   an `AF_PACKET`/`SOCK_RAW` socket (`ETH_P_ALL`, bound to the interface,
//!   promiscuous, outgoing frames ignored); whole Ethernet frames are
//!   forwarded byte for byte (a VLAN tag the kernel moved out of the frame
//!   is put back; a transport checksum the sender's kernel left to offload
//!   is computed, as the NIC would have done).
//!
//! Treatment, in both modes:
//!
//! - A -> B (the data direction): random loss (`--loss`), then a drop-tail
//!   bottleneck queue served at `--rate` (frame bytes: IP length + 14 in TUN
//!   mode, the frame's length in Ethernet mode) holding at most `--limit`
//!   bytes, then the one-way `--delay`; with probability `--reorder` a
//!   packet skips the delay (as netem's `reorder`), overtaking earlier ones.
//! - B -> A: `--loss-back`, then `--delay`.
//!
//! One thread, ppoll on both ports, a heap of delivery times; no spinning.
//! SIGINT/SIGTERM end it; the per-direction counters are printed as one JSON
//! line on stderr (and written to `--stats FILE`).

mod cli;
mod emulation;
mod ports;

use cli::{LinkemArgs, Mode};
use p4rcp_host::io::net;
use ports::{packet::PacketPort, tun::TunPort, Port};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: LinkemArgs = p4rcp_host::cli::parse_or_exit("p4rcp-linkem");
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("p4rcp-linkem: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(args: LinkemArgs) -> Result<ExitCode, String> {
    let (mode, params) = cli::validate(&args)?;
    if args.check {
        return Ok(ExitCode::SUCCESS);
    }
    let (mut pa, mut pb, kind): (Box<dyn Port>, Box<dyn Port>, &str) = match &mode {
        Mode::Tun {
            ns_a,
            dev_a,
            ns_b,
            dev_b,
        } => (
            Box::new(TunPort::open(ns_a, dev_a).map_err(|e| format!("TUN {dev_a} in {ns_a}: {e}"))?),
            Box::new(TunPort::open(ns_b, dev_b).map_err(|e| format!("TUN {dev_b} in {ns_b}: {e}"))?),
            "tun",
        ),
        Mode::Ethernet { if_a, if_b } => (
            Box::new(PacketPort::open(if_a).map_err(|e| format!("interface {if_a} (--if-a): {e}"))?),
            Box::new(PacketPort::open(if_b).map_err(|e| format!("interface {if_b} (--if-b): {e}"))?),
            "ethernet",
        ),
    };
    net::install_signal_handlers();
    net::tighten_timer_slack();
    let (ab, ba) = emulation::emulate(pa.as_mut(), pb.as_mut(), &params, &net::stopping);
    let line = serde_json::json!({"event": "linkem_stats", "mode": kind, "a_to_b": ab, "b_to_a": ba}).to_string();
    eprintln!("{line}");
    if let Some(path) = &args.stats {
        std::fs::write(path, format!("{line}\n")).map_err(|e| format!("--stats {path}: {e}"))?;
    }
    Ok(ExitCode::SUCCESS)
}

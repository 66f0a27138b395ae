//! p4rcp-host: the command line of the end hosts (README.md), a thin layer
//! over the `p4rcp_host` library: it parses and checks the arguments,
//! opens the sinks and sockets, runs the library's loops and prints their
//! counters.

use clap::{Args, Parser, Subcommand};
use p4rcp_host::cc::CcSpec;
use p4rcp_host::io::engine::{self, SenderEngine};
use p4rcp_host::io::net;
use p4rcp_host::io::sink::Sink;
use p4rcp_host::transport::record;
use p4rcp_host::transport::sender::{FlowParams, DEFAULT_MAX_RATE};
use p4rcp_host::transport::wire::{RCP_MIN_RATE_KBPS, RCP_UDP_PORT};
use p4rcp_host::workload::arrivals::{AtOnce, WorkloadArrivals};
use p4rcp_host::workload::sizes::SizeDist;
use clap::ValueEnum;
use p4rcp_host::workload::traffic::{ArrivalProcess, LoadUnit, Workload};
use p4rcp_host::{cli, tcp, units};
use std::net::{SocketAddr, TcpListener};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "p4rcp-host",
    version,
    about = "p4rcp end hosts: RCP, PCC Allegro/Vivace, fixed-rate and TCP flows"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve flows: UDP (RCP header, port 6577) and TCP (--tcp-port).
    Recv(RecvArgs),
    /// Send one flow and print its record.
    Send(SendArgs),
    /// Flow arrivals (Poisson, or Pareto gaps) for a target load; one record per flow.
    Traffic(TrafficArgs),
}

#[derive(Args)]
struct RecvArgs {
    /// UDP address to serve.
    #[arg(long, default_value = "0.0.0.0:6577")]
    bind: String,
    /// TCP port for the `tcp` scheme (0: no TCP).
    #[arg(long, default_value_t = 6578)]
    tcp_port: u16,
    /// Append one JSON line per received flow to FILE ("-": stdout).
    #[arg(long)]
    out: Option<String>,
    /// Forget a flow after this long without packets (seconds).
    #[arg(long, default_value = "60", value_parser = units::parse_duration)]
    idle_timeout: Duration,
    /// Exit after this long (default: run until SIGINT/SIGTERM).
    #[arg(long, value_parser = units::parse_duration)]
    duration: Option<Duration>,
    /// Check the arguments as a start would, then exit (0: good, 2: the
    /// message a start would print); opens no socket or file.
    #[arg(long)]
    check: bool,
}

#[derive(Args, Clone)]
struct FlowArgs {
    /// Receiver: IP or IP:PORT (UDP port default 6577; TCP uses --tcp-port).
    #[arg(long)]
    to: String,
    /// rcp | xcp | allegro | allegro-ref | vivace | vivace-loss | vivace-latency | vivace-stop | vivace-loss-p4rcp | fixed:RATE | tcp | tcp:ALGO
    #[arg(long, value_parser = CcSpec::parse)]
    cc: CcSpec,
    /// Application bytes per DATA packet.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u16).range(1..=8192))]
    mss: u16,
    /// Rate asked for in the SYN (and by rcp in every packet); upper bound
    /// of every scheme's rate.
    #[arg(long, default_value = DEFAULT_MAX_RATE, value_parser = units::parse_rate_kbps)]
    max_rate: f64,
    /// Lower bound of every UDP scheme's rate [default: the protocol's floor,
    /// RCP_MIN_RATE_KBPS, 10kbit: the lowest R a router gives].
    #[arg(long, value_parser = units::parse_rate_kbps)]
    min_rate: Option<f64>,
    /// A flow not finished this long after its SYN gives up (completed=false).
    #[arg(long, default_value = "60", value_parser = units::parse_duration)]
    timeout: Duration,
    /// Append rate changes and periodic samples (JSON lines) to FILE.
    #[arg(long)]
    trace: Option<String>,
    /// Period of the trace's "sample" lines (0: none).
    #[arg(long, default_value = "0.1", value_parser = units::parse_duration)]
    sample_interval: Duration,
    /// Append flow records to FILE instead of stdout.
    #[arg(long)]
    out: Option<String>,
    /// Receiver's TCP port for the tcp scheme.
    #[arg(long, default_value_t = 6578)]
    tcp_port: u16,
    /// Local UDP address to send from.
    #[arg(long, default_value = "0.0.0.0:0")]
    bind: String,
    /// DSCP (0-63) of the flow's packets: routers may map it to a weight
    /// class (docs/protocol.md).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=63))]
    dscp: u8,
    /// Check the arguments as a start would, then exit (0: good, 2: the
    /// message a start would print); opens no socket or file.
    #[arg(long)]
    check: bool,
}

#[derive(Args)]
struct SendArgs {
    #[command(flatten)]
    flow: FlowArgs,
    /// Flow size in bytes (200000, 200k, 1M, 64KiB).
    #[arg(long, value_parser = units::parse_bytes, required_unless_present = "duration", conflicts_with = "duration")]
    size: Option<u64>,
    /// Instead of --size: send new data for this long, then finish.
    #[arg(long, value_parser = units::parse_duration)]
    duration: Option<Duration>,
    /// Flow id (default: random); with --flows N, ids flow_id .. flow_id+N-1.
    #[arg(long)]
    flow_id: Option<u32>,
    /// Send N such flows at once (one process, one socket; TCP: N threads).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    flows: u32,
    /// Print the sender's counters (CPU seconds, datagrams, ...) as one JSON
    /// line on stderr at the end.
    #[arg(long)]
    stats: bool,
}

#[derive(Args)]
struct TrafficArgs {
    #[command(flatten)]
    flow: FlowArgs,
    /// Target load as a fraction of --capacity (e.g. 0.7).
    #[arg(long)]
    load: f64,
    /// Bottleneck capacity (e.g. 15mbit), in frame bits like every rate.
    #[arg(long, value_parser = units::parse_rate_kbps)]
    capacity: f64,
    /// fixed:BYTES | exp:MEAN | pareto:SHAPE:MEAN | pareto:SHAPE:MEAN:MAX | cdf:FILE
    #[arg(long, value_parser = SizeDist::parse)]
    sizes: SizeDist,
    /// Flows arrive during this long; the command then waits for them to end.
    #[arg(long, value_parser = units::parse_duration)]
    duration: Duration,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Start at most this many flows.
    #[arg(long)]
    max_flows: Option<u64>,
    /// Draw arrivals until they offer exactly --load over --duration and scale
    /// their times to fit it, instead of whatever one draw of the arrivals offers.
    #[arg(long)]
    exact_load: bool,
    /// How flows arrive: poisson, or pareto:SHAPE (gaps of the same mean from
    /// a Pareto of that shape, above 1: bursts and lulls).
    #[arg(long, value_parser = ArrivalProcess::parse, default_value = "poisson")]
    arrivals: ArrivalProcess,
    /// Draw the arrivals of one period this long and play them again every
    /// period until --duration: the periods of a long run then offer the same
    /// flows, and differ only by what the network did (make soak).
    #[arg(long, value_parser = units::parse_duration)]
    repeat_every: Option<Duration>,
    /// What the load counts: `slots` for a link shaped in packets per second
    /// (bmv2: every frame takes a full data frame's time), `bytes` for one
    /// shaped in bits (ns-3, Tofino, SUME).
    #[arg(long, value_enum, default_value_t = LoadUnit::Slots)]
    load_unit: LoadUnit,
    /// Print the arrivals these arguments plan, one JSON line each ({"index",
    /// "t_s", "size_bytes"}), and exit without sending: the flows a run
    /// starts, for engines that start them in simulated time (topo/ns3).
    #[arg(long)]
    plan: bool,
}

fn main() -> ExitCode {
    let cli: Cli = cli::parse_or_exit("p4rcp-host");
    let r = match cli.cmd {
        Cmd::Recv(a) => cmd_recv(a),
        Cmd::Send(a) => cmd_send(a),
        Cmd::Traffic(a) => cmd_traffic(a),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("p4rcp-host: {e}");
            ExitCode::from(2)
        }
    }
}

fn random_u32() -> u32 {
    use rand::Rng;
    rand::thread_rng().gen()
}

/// `--check`: the addresses a start would resolve are well-formed (no
/// lookup, no socket, no file).
fn check_addresses(addrs: &[&str]) -> Result<ExitCode, String> {
    for a in addrs {
        net::check_address(a)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `--check` of `send` and `traffic`, once their other arguments passed:
/// the addresses the scheme's transport would resolve.
fn check_flow(f: &FlowArgs) -> Result<ExitCode, String> {
    match f.cc {
        CcSpec::Tcp(_) => check_addresses(&[&f.to]),
        _ => check_addresses(&[&f.to, &f.bind]),
    }
}

fn cmd_recv(a: RecvArgs) -> Result<ExitCode, String> {
    if a.check {
        return check_addresses(&[&a.bind]);
    }
    let bind = net::resolve(&a.bind, RCP_UDP_PORT)?;
    let out = match &a.out {
        Some(p) => Some(Sink::open(Some(p))?),
        None => None,
    };
    net::install_signal_handlers();
    let sock = net::udp_socket(bind).map_err(|e| format!("cannot bind UDP {bind}: {e}"))?;
    if a.tcp_port != 0 {
        let taddr = SocketAddr::new(bind.ip(), a.tcp_port);
        let l = TcpListener::bind(taddr)
            .map_err(|e| format!("cannot bind TCP {taddr}: {e} (--tcp-port 0 disables TCP)"))?;
        let out = out.clone();
        let idle = a.idle_timeout;
        std::thread::spawn(move || tcp::serve_forever(l, out, idle));
    }
    eprintln!(
        "p4rcp-host: receiving on udp {bind}{}",
        if a.tcp_port != 0 {
            format!(", tcp port {}", a.tcp_port)
        } else {
            String::new()
        }
    );
    let rx = engine::run_receiver(
        sock,
        a.idle_timeout.as_secs_f64(),
        a.duration.map(|d| d.as_secs_f64()),
        out,
    );
    eprintln!("{}", serde_json::json!({"event": "recv_stats", "stats": rx.stats}));
    Ok(ExitCode::SUCCESS)
}

/// The flow every `send` and `traffic` flow starts from.
fn flow_params(f: &FlowArgs, flow_id: u32, dst: SocketAddr, size: Option<u64>, duration: Option<f64>) -> FlowParams {
    FlowParams {
        flow_id,
        index: None,
        dst,
        scheme: f.cc.name(),
        size,
        duration,
        mss: f.mss as usize,
        max_rate_kbps: f.max_rate,
        min_rate_kbps: f.min_rate.unwrap_or(f64::from(RCP_MIN_RATE_KBPS)).min(f.max_rate),
        timeout_s: f.timeout.as_secs_f64(),
        trace: f.trace.is_some(),
        sample_interval_s: f.sample_interval.as_secs_f64(),
        dscp: f.dscp,
    }
}

/// The TCP flow every `send` and `traffic` flow of `tcp[:ALGO]` starts from.
fn tcp_flow(
    f: &FlowArgs,
    algo: &Option<String>,
    trace: Option<Sink>,
    size: Option<u64>,
    duration: Option<f64>,
) -> Result<tcp::TcpFlow, String> {
    Ok(tcp::TcpFlow {
        flow_id: 0,
        index: None,
        dst: SocketAddr::new(net::resolve(&f.to, f.tcp_port)?.ip(), f.tcp_port),
        algo: algo.clone(),
        size,
        duration,
        timeout_s: f.timeout.as_secs_f64(),
        trace,
        sample_interval_s: f.sample_interval.as_secs_f64(),
        dscp: f.dscp,
    })
}

fn sinks(f: &FlowArgs) -> Result<(Sink, Option<Sink>), String> {
    let out = Sink::open(f.out.as_deref())?;
    let trace = match &f.trace {
        Some(p) => Some(Sink::open(Some(p))?),
        None => None,
    };
    Ok((out, trace))
}

fn cmd_send(a: SendArgs) -> Result<ExitCode, String> {
    let f = &a.flow;
    if f.check {
        return check_flow(f);
    }
    let (out, trace) = sinks(f)?;
    let first_id = a.flow_id.unwrap_or_else(random_u32);
    let ids: Vec<u32> = (0..a.flows).map(|i| first_id.wrapping_add(i)).collect();
    let duration = a.duration.map(|d| d.as_secs_f64());
    net::install_signal_handlers();
    net::tighten_timer_slack();
    if let CcSpec::Tcp(algo) = &f.cc {
        let template = tcp_flow(f, algo, trace, a.size, duration)?;
        let cpu0 = net::cpu_seconds();
        let t0 = std::time::Instant::now();
        let ok = tcp::run_at_once(&template, &ids, &out);
        if a.stats {
            eprintln!(
                "{}",
                serde_json::json!({"event": "send_stats", "stats": {"flows_started": ids.len(), "flows_completed": ok, "cpu_s": net::cpu_seconds() - cpu0, "wall_s": t0.elapsed().as_secs_f64()}})
            );
        }
        return Ok(if ok == ids.len() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let dst = net::resolve(&f.to, RCP_UDP_PORT)?;
    let bind = net::resolve(&f.bind, 0)?;
    let sock = net::udp_socket(bind).map_err(|e| format!("cannot bind UDP {bind}: {e}"))?;
    net::set_dscp(std::os::fd::AsRawFd::as_raw_fd(&sock), f.dscp).map_err(|e| format!("cannot set DSCP: {e}"))?;
    let mut flows = Vec::new();
    for &id in ids.iter().rev() {
        let p = flow_params(f, id, dst, a.size, duration);
        let cc =
            f.cc.build(id as u64, f.max_rate)
                .ok_or("no controller for this scheme")?;
        flows.push((p, cc));
    }
    let mut eng = SenderEngine::new(sock, out, trace);
    eng.run(&mut AtOnce(flows));
    if a.stats || eng.stats.malformed.values().sum::<u64>() + eng.stats.unknown_flow > 0 {
        eprintln!("{}", serde_json::json!({"event": "send_stats", "stats": eng.stats}));
    }
    Ok(if eng.stats.flows_completed == ids.len() as u64 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_plan(w: &Workload) -> Result<ExitCode, String> {
    use std::io::Write;
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    for (index, &(t, size)) in w.planned().iter().enumerate() {
        let line = serde_json::json!({"index": index, "t_s": t, "size_bytes": size});
        writeln!(stdout, "{line}").map_err(|e| format!("cannot print the plan: {e}"))?;
    }
    stdout.flush().map_err(|e| format!("cannot print the plan: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

fn cmd_traffic(a: TrafficArgs) -> Result<ExitCode, String> {
    let f = &a.flow;
    let duration = a.duration.as_secs_f64();
    let period = match a.repeat_every.map(|p| p.as_secs_f64()) {
        Some(p) if !(p > 0.0 && p <= duration) => {
            return Err(format!("--repeat-every must be more than 0 and at most --duration ({duration} s), got {p} s"))
        }
        Some(p) => p,
        None => duration,
    };
    let w = Workload::new(
        a.load,
        a.capacity,
        a.sizes.clone(),
        f.mss as usize,
        period,
        a.seed,
        a.max_flows,
        a.exact_load,
        a.arrivals,
        a.load_unit,
    )?;
    let w = if period < duration { w.repeated(duration, a.max_flows) } else { w };
    if a.plan {
        return print_plan(&w);
    }
    if f.check {
        return check_flow(f);
    }
    let (out, trace) = sinks(f)?;
    // The plan first: a run knows how many flows to expect before any starts.
    eprintln!(
        "{}",
        serde_json::json!({"event": "traffic_plan", "flows": w.flows(), "load_offered": record::round(w.offered_load(), 4),
                           "load": a.load, "load_unit": a.load_unit.to_possible_value().map(|v| v.get_name().to_owned()), "time_scale": record::round(w.time_scale, 4), "lambda": record::round(w.lambda, 3),
                           "mean_size_bytes": record::round(a.sizes.mean(), 1), "duration_s": duration, "repeat_every_s": a.repeat_every.map(|p| p.as_secs_f64())})
    );
    net::install_signal_handlers();
    net::tighten_timer_slack();
    let base_id = random_u32() & 0xfff0_0000;
    if let CcSpec::Tcp(algo) = &f.cc {
        let template = tcp_flow(f, algo, trace, None, None)?;
        let st = tcp::run_traffic(w, &template, base_id, &out);
        eprintln!(
            "{}",
            serde_json::json!({"event": "traffic_stats", "stats": {"flows_started": st.started, "spawn_failures": st.spawn_failures, "wall_s": st.wall_s}})
        );
        return Ok(ExitCode::SUCCESS);
    }
    let dst = net::resolve(&f.to, RCP_UDP_PORT)?;
    let bind = net::resolve(&f.bind, 0)?;
    let sock = net::udp_socket(bind).map_err(|e| format!("cannot bind UDP {bind}: {e}"))?;
    net::set_dscp(std::os::fd::AsRawFd::as_raw_fd(&sock), f.dscp).map_err(|e| format!("cannot set DSCP: {e}"))?;
    let mut eng = SenderEngine::new(sock, out, trace);
    let mut arr = WorkloadArrivals {
        w,
        template: flow_params(f, 0, dst, None, None),
        cc: f.cc.clone(),
        base_id,
        seed: a.seed,
    };
    eng.run(&mut arr);
    eprintln!("{}", serde_json::json!({"event": "traffic_stats", "stats": eng.stats}));
    Ok(ExitCode::SUCCESS)
}

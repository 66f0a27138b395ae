//! p4rcp-host: the end hosts of p4rcp (see README.md and docs/protocol.md).

mod cc;
mod engine;
mod linkem;
mod monitor;
mod net;
mod pattern;
mod rangeset;
mod receiver;
mod record;
mod sender;
mod tcp;
mod traffic;
mod units;
mod wire;

#[cfg(test)]
mod sim;

use cc::CcSpec;
use clap::{Args, Parser, Subcommand};
use engine::{Arrivals, SenderEngine};
use record::Sink;
use sender::FlowParams;
use std::net::{IpAddr, SocketAddr, TcpListener, ToSocketAddrs};
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
    /// Poisson flow arrivals for a target load; one record per flow.
    Traffic(TrafficArgs),
    /// Test helper: a user-space emulated link between two TUN devices
    /// (delay, loss, reordering, rate) for kernels without sch_netem.
    Linkem(linkem::LinkemArgs),
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
    /// Check the arguments as a start would, then exit without opening a socket or a file.
    #[arg(long)]
    check: bool,
}

#[derive(Args, Clone)]
struct FlowArgs {
    /// Receiver: IP or IP:PORT (UDP port default 6577; TCP uses --tcp-port).
    #[arg(long)]
    to: String,
    /// rcp | allegro | allegro-ref | vivace | vivace-loss | vivace-latency | vivace-stop | fixed:RATE | tcp | tcp:ALGO
    #[arg(long, value_parser = CcSpec::parse)]
    cc: CcSpec,
    /// Application bytes per DATA packet.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u16).range(1..=8192))]
    mss: u16,
    /// Rate asked for in the SYN (and by rcp in every packet); upper bound
    /// of every scheme's rate.
    #[arg(long, default_value = "1gbit", value_parser = units::parse_rate_kbps)]
    max_rate: f64,
    /// Lower bound of every UDP scheme's rate.
    #[arg(long, default_value = "100kbit", value_parser = units::parse_rate_kbps)]
    min_rate: f64,
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
    /// Check the arguments as a start would (addresses, scheme, workload), then exit without opening a
    /// socket or a file.
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
    /// fixed:BYTES | exp:MEAN | pareto:SHAPE:MEAN | cdf:FILE
    #[arg(long, value_parser = traffic::SizeDist::parse)]
    sizes: traffic::SizeDist,
    /// Flows arrive during this long; the command then waits for them to end.
    #[arg(long, value_parser = units::parse_duration)]
    duration: Duration,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Start at most this many flows.
    #[arg(long)]
    max_flows: Option<u64>,
    /// Print the arrivals these arguments plan, one JSON line each ({"index", "t_s", "size_bytes"}), and
    /// exit without sending: the flows a run starts, for engines that start them in simulated time.
    #[arg(long)]
    plan: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Recv(a) => cmd_recv(a),
        Cmd::Send(a) => cmd_send(a),
        Cmd::Traffic(a) => cmd_traffic(a),
        Cmd::Linkem(a) => linkem::run(a),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("p4rcp-host: {e}");
            ExitCode::from(2)
        }
    }
}

fn resolve(to: &str, default_port: u16) -> Result<SocketAddr, String> {
    if let Ok(ip) = to.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, default_port));
    }
    if let Ok(sa) = to.parse::<SocketAddr>() {
        return Ok(sa);
    }
    let with_port = if to.contains(':') {
        to.to_string()
    } else {
        format!("{to}:{default_port}")
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| format!("bad address '{to}': {e}"))?
        .next()
        .ok_or_else(|| format!("'{to}' resolves to no address"))
}

fn random_u32() -> u32 {
    use rand::Rng;
    rand::thread_rng().gen()
}

fn cmd_recv(a: RecvArgs) -> Result<ExitCode, String> {
    let bind = resolve(&a.bind, wire::RCP_UDP_PORT)?;
    if a.check {
        return Ok(ExitCode::SUCCESS);
    }
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

/// Arrivals of `send`: all flows at time 0.
struct AtOnce(Vec<(FlowParams, Box<dyn cc::RateController>)>);

impl Arrivals for AtOnce {
    fn next_time(&self) -> Option<f64> {
        if self.0.is_empty() {
            None
        } else {
            Some(0.0)
        }
    }
    fn take(&mut self, _now: f64) -> Option<(FlowParams, Box<dyn cc::RateController>)> {
        self.0.pop()
    }
}

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
        min_rate_kbps: f.min_rate.min(f.max_rate),
        timeout_s: f.timeout.as_secs_f64(),
        trace: f.trace.is_some(),
        sample_interval_s: f.sample_interval.as_secs_f64(),
    }
}

fn sinks(f: &FlowArgs) -> Result<(Sink, Option<Sink>), String> {
    let out = Sink::open(f.out.as_deref())?;
    let trace = match &f.trace {
        Some(p) => Some(Sink::open(Some(p))?),
        None => None,
    };
    Ok((out, trace))
}

/// What a start of `send` or `traffic` would refuse before its first packet: the receiver's and the local
/// address, and a controller for the scheme.
fn check_flow_args(f: &FlowArgs) -> Result<(), String> {
    if let CcSpec::Tcp(_) = &f.cc {
        resolve(&f.to, f.tcp_port)?;
        return Ok(());
    }
    resolve(&f.to, wire::RCP_UDP_PORT)?;
    resolve(&f.bind, 0)?;
    f.cc.build(0, f.max_rate).ok_or("no controller for this scheme")?;
    Ok(())
}

fn cmd_send(a: SendArgs) -> Result<ExitCode, String> {
    let f = &a.flow;
    check_flow_args(f)?;
    if f.check {
        return Ok(ExitCode::SUCCESS);
    }
    let (out, trace) = sinks(f)?;
    let first_id = a.flow_id.unwrap_or_else(random_u32);
    let ids: Vec<u32> = (0..a.flows).map(|i| first_id.wrapping_add(i)).collect();
    let duration = a.duration.map(|d| d.as_secs_f64());
    net::install_signal_handlers();
    net::tighten_timer_slack();
    if let CcSpec::Tcp(algo) = &f.cc {
        let dst = SocketAddr::new(resolve(&f.to, f.tcp_port)?.ip(), f.tcp_port);
        let cpu0 = net::cpu_seconds();
        let t0 = std::time::Instant::now();
        let handles: Vec<_> = ids
            .iter()
            .map(|&flow_id| {
                let flow = tcp::TcpFlow {
                    flow_id,
                    index: None,
                    dst,
                    algo: algo.clone(),
                    size: a.size,
                    duration,
                    timeout_s: f.timeout.as_secs_f64(),
                    trace: trace.clone(),
                    sample_interval_s: f.sample_interval.as_secs_f64(),
                };
                let out = out.clone();
                std::thread::spawn(move || {
                    let rec = tcp::run_flow(&flow);
                    out.write(&rec);
                    rec.completed && rec.verified != Some(false)
                })
            })
            .collect();
        let ok = handles
            .into_iter()
            .map(|h| h.join().unwrap_or(false))
            .filter(|x| *x)
            .count();
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
    let dst = resolve(&f.to, wire::RCP_UDP_PORT)?;
    let bind = resolve(&f.bind, 0)?;
    let sock = net::udp_socket(bind).map_err(|e| format!("cannot bind UDP {bind}: {e}"))?;
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

/// Arrivals of `traffic` over UDP.
struct UdpArrivals<'a> {
    w: traffic::Workload,
    f: &'a FlowArgs,
    dst: SocketAddr,
    base_id: u32,
    seed: u64,
}

impl Arrivals for UdpArrivals<'_> {
    fn next_time(&self) -> Option<f64> {
        self.w.peek()
    }
    fn take(&mut self, _now: f64) -> Option<(FlowParams, Box<dyn cc::RateController>)> {
        let index = self.w.count;
        let (_, size) = self.w.pop()?;
        let id = self.base_id.wrapping_add(index as u32);
        let mut p = flow_params(self.f, id, self.dst, Some(size), None);
        p.index = Some(index);
        let cc = self
            .f
            .cc
            .build(self.seed ^ ((index + 1) * 0x9E37_79B9), self.f.max_rate)?;
        Some((p, cc))
    }
}

fn cmd_traffic(a: TrafficArgs) -> Result<ExitCode, String> {
    let f = &a.flow;
    let w = traffic::Workload::new(
        a.load,
        a.capacity,
        a.sizes.clone(),
        f.mss as usize,
        a.duration.as_secs_f64(),
        a.seed,
        a.max_flows,
    )?;
    if a.plan {
        use std::io::Write;
        let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
        for (index, (t, size)) in w.planned().into_iter().enumerate() {
            let line = serde_json::json!({"index": index, "t_s": t, "size_bytes": size});
            writeln!(stdout, "{line}").map_err(|e| format!("cannot print the plan: {e}"))?;
        }
        stdout.flush().map_err(|e| format!("cannot print the plan: {e}"))?;
        return Ok(ExitCode::SUCCESS);
    }
    check_flow_args(f)?;
    if f.check {
        return Ok(ExitCode::SUCCESS);
    }
    let (out, trace) = sinks(f)?;
    // The runner compares this with the records written (a generator that dies early voids the run).
    eprintln!(
        "{}",
        serde_json::json!({"event": "traffic_plan", "flows": w.clone().planned().len()})
    );
    eprintln!(
        "p4rcp-host: {} flows/s expected ({} s, mean size {:.0} B, load {} of {} kb/s)",
        record::round(w.lambda, 3),
        a.duration.as_secs_f64(),
        a.sizes.mean(),
        a.load,
        a.capacity
    );
    net::install_signal_handlers();
    net::tighten_timer_slack();
    let base_id = random_u32() & 0xfff0_0000;
    if let CcSpec::Tcp(algo) = &f.cc {
        let dst = SocketAddr::new(resolve(&f.to, f.tcp_port)?.ip(), f.tcp_port);
        let sampling = (trace, f.sample_interval.as_secs_f64());
        return run_tcp_traffic(w, dst, algo.clone(), f.timeout.as_secs_f64(), base_id, out, sampling);
    }
    let dst = resolve(&f.to, wire::RCP_UDP_PORT)?;
    let bind = resolve(&f.bind, 0)?;
    let sock = net::udp_socket(bind).map_err(|e| format!("cannot bind UDP {bind}: {e}"))?;
    let mut eng = SenderEngine::new(sock, out, trace);
    let mut arr = UdpArrivals {
        w,
        f,
        dst,
        base_id,
        seed: a.seed,
    };
    eng.run(&mut arr);
    eprintln!("{}", serde_json::json!({"event": "traffic_stats", "stats": eng.stats}));
    Ok(ExitCode::SUCCESS)
}

fn run_tcp_traffic(
    mut w: traffic::Workload,
    dst: SocketAddr,
    algo: Option<String>,
    timeout_s: f64,
    base_id: u32,
    out: Sink,
    (trace, sample_interval_s): (Option<Sink>, f64),
) -> Result<ExitCode, String> {
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
        let flow = tcp::TcpFlow {
            flow_id: base_id.wrapping_add(index as u32),
            index: Some(index),
            dst,
            algo: algo.clone(),
            size: Some(size),
            duration: None,
            timeout_s,
            trace: trace.clone(),
            sample_interval_s,
        };
        let out = out.clone();
        match std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || out.write(&tcp::run_flow(&flow)))
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
    eprintln!(
        "{}",
        serde_json::json!({"event": "traffic_stats", "stats": {"flows_started": started, "spawn_failures": failed_spawn, "wall_s": t0.elapsed().as_secs_f64()}})
    );
    Ok(ExitCode::SUCCESS)
}

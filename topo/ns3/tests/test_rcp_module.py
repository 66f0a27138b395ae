"""The ns-3 engine's RCP module: the router's per-packet work (RcpQueueDisc), and whole runs of the engine in
simulated time: two flows converge to C/2, no stamped rate exceeds R, and the control loop's R trace is the
law's (p4rcp/rcp_law.py) over the counts the data plane gave it.

Skipped, with the reason, where ns-3 (the ns3 wheel and cppyy) or g++ is missing. Loading ns-3 takes 10-30 s
once per test session; each simulation then takes about a second.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from p4rcp.dataplane import rate_cell
from p4rcp.protocol import DATA, FLAG_ENDING, RCP_UDP_PORT, SYN
from p4rcp.rcp_law import rcp_feedforward, rcp_overload_floor, rcp_rate
from topo.ns3 import build
from topo.ns3.tests import simulation
from topo.ns3.tests.simulation import finish, read, start_run

REASON = build.unavailable()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"ns-3 engine: {REASON}")

C_MBPS = 10
RTT_MS = 40


@pytest.fixture(scope="module")
def ns3():
    return build.load()


def experiment(tmp_path: Path, starts: list[float], duration_s: float, name: str = "two-flows", **params):
    """A dumbbell experiment of long RCP flows starting at the given times."""
    return simulation.experiment(tmp_path, name, schemes=["rcp"], duration_s=duration_s,
                                 long_flows=simulation.long_flows(starts), bottleneck_mbps=C_MBPS, rtt_ms=RTT_MS,
                                 **params)


def test_two_flows_converge_to_half_the_link(ns3, tmp_path):
    exp = experiment(tmp_path, [0, 1], duration_s=6)
    run = start_run(ns3, exp, tmp_path / "run")
    meta = finish(run)
    assert meta["valid"], meta["problems"]
    C = meta["capacity_bps"]["s1:3"]
    t0 = min(r["start_unix_s"] for h in ("h1", "h2") for r in read(tmp_path / "run" / f"flows_{h}.jsonl"))
    steady = [r for r in read(tmp_path / "run" / "control_s1.jsonl") if t0 + 3 <= r["time"] <= t0 + 6]
    assert steady
    assert statistics.fmean(r["R_bps"] for r in steady) == pytest.approx(C / 2, rel=0.03)
    goodputs = []
    for host in ("h1", "h2"):
        samples = [s for s in read(tmp_path / "run" / f"trace_{host}.jsonl") if s["event"] == "sample"]
        start = read(tmp_path / "run" / f"flows_{host}.jsonl")[0]["start_unix_s"]
        goodputs.append(statistics.fmean(s["goodput_kbps"] for s in samples if 3 <= start + s["t_s"] - t0 <= 6))
    payload_half = C / 2 * (1078 - 78) / 1078 / 1e3
    assert goodputs == [pytest.approx(payload_half, rel=0.05)] * 2
    # Both flows' records are complete and the receivers saw their last bytes.
    for host, receiver in (("h1", "r1"), ("h2", "r2")):
        [sent] = read(tmp_path / "run" / f"flows_{host}.jsonl")
        [received] = read(tmp_path / "run" / f"recv_{receiver}.jsonl")
        assert sent["completed"] and received["completed"]
        assert received["bytes_delivered"] == sent["size_bytes"] > 0
        assert received["last_byte_unix_s"] <= sent["start_unix_s"] + sent["fct_s"]


def test_a_stamped_rate_never_exceeds_r(ns3, tmp_path):
    """Every forward RCP packet leaves the bottleneck with min(its rate, R), R being what the control loop
    wrote last, or less for a SYN (its grant); three flows, the third joining at full link rate so that the queue builds and R moves."""
    ns, p4rcp = ns3
    exp = experiment(tmp_path, [0, 0.5, 1.0], duration_s=3, name="three-flows")
    run = start_run(ns3, exp, tmp_path / "run")
    switch, port = run.topology.bottlenecks[0]
    disc = run.net.rcp_disc(switch, port)
    log = p4rcp.StampLog(disc)
    written = [(0.0, disc.GetRateKbps())]          # the loop's first R, written as it programmed the switch
    driver = run.drivers[switch]
    write = driver.write_rates_kbps
    driver.write_rates_kbps = lambda rates: (written.append((run.net.now(), rates[rate_cell(port)])), write(rates))[1]
    finish(run)
    n = log.time.size()
    assert n > 1000
    stamped = granted = 0
    for k in range(n):
        before, after, rate = log.before[k], log.after[k], log.rate[k]
        assert rate > 0
        assert after <= min(before, rate)
        granted += after < min(before, rate)
        stamped += after < before
        # R in force is the last one the loop wrote before the packet's departure (or one it wrote at that
        # very instant, depending on which of the two events ran first).
        before_it = max((w for w in written if w[0] < log.time[k]), key=lambda w: w[0])
        assert rate in {before_it[1], *(r for t, r in written if t == log.time[k])}
    assert granted <= 3         # the three flows' SYNs
    assert stamped == n         # the hosts ask for their NIC's rate, above C: every packet is stamped
    assert len({log.rate[k] for k in range(n)}) > 10


def test_the_r_trace_is_the_laws(ns3, tmp_path):
    """Each interval's R is rcp_rate() of the previous R and the interval's measured inputs (q the least of
    the last queue_reads reads), held at the overload floor, then the feedforward of the flows that arrived
    and are ending (rcp_feedforward); y is the frame bytes that arrived at the port, every SYN, DATA and FIN
    the senders sent."""
    # A queue deep enough for the second flow's start at the first one's rate (RCP's overshoot): no loss.
    exp = experiment(tmp_path, [0, 0.5], duration_s=3, name="law", queue_packets=1000)
    run = start_run(ns3, exp, tmp_path / "run")
    meta = finish(run)
    records = read(tmp_path / "run" / "control_s1.jsonl")
    p = exp.rcp_params(exp.scheme("rcp"))
    assert len(records) > 200
    for k, (prev, r) in enumerate(zip(records, records[1:]), start=1):
        assert r["q_law_bytes"] == min(x["q_bytes"] for x in records[max(0, k + 1 - p.queue_reads):k + 1])
        assert r["y_bps"] == pytest.approx(r["input_bytes"] * 8 / r["period_s"], rel=1e-12)
        expected = rcp_rate(prev["R_bps"], r["period_s"], r["d0_s"], r["C_bps"], r["y_bps"], r["q_law_bytes"] * 8,
                            alpha=p.alpha, beta=p.beta, gamma=p.gamma, q0=p.q0_bytes * 8, R_min=p.R_min_bps)
        if p.overload_floor:
            floor = rcp_overload_floor(r["R_heard_bps"], r["C_bps"], r["y_bps"], r["q_law_bytes"] * 8, r["d0_s"],
                                       gamma=p.gamma)
            expected = max(expected, min(floor, prev["R_bps"]))
        if p.feedforward:
            expected = rcp_feedforward(expected, prev["R_bps"], r["C_bps"], r["arrivals"], r["departures"],
                                       gamma=p.gamma, R_min=p.R_min_bps)
        assert r["R_bps"] == pytest.approx(expected, rel=1e-12)
        assert r["period_s"] == pytest.approx(r["T_s"], abs=1e-9)   # stepped every T of simulated time
    frames = sum(r["input_bytes"] for r in records)
    packets = sum(r["input_packets"] for r in records)
    sent = [f for h in ("h1", "h2") for f in read(tmp_path / "run" / f"flows_{h}.jsonl")]
    data_packets = sum(f["packets_sent"] for f in sent)
    # Nothing lost: every flow's SYN (a frame of 82 bytes) and FIN (78) once, its DATA packets (78 bytes of
    # headers and the payload) once each, all counted as they arrived at the port.
    assert meta["bottleneck_drops"] == {"s1:3": 0} and all(f["retransmissions"] == 0 for f in sent)
    assert packets == data_packets + 2 * len(sent)
    assert frames == sum(f["size_bytes"] for f in sent) + 78 * data_packets + (82 + 78) * len(sent)


def test_the_queue_sample_p4rcp_against_ns2(ns3):
    """RcpQueueDisc alone: y counted on arrival (drops included), RTT samples and stamps on departure; the
    queue the control plane reads is the queue the last departure left behind (p4rcp), its enqueue depth
    (an older p4rcp, stale once the port drained) or the queue now (ns-2)."""
    ns, p4rcp = ns3
    for sample, after_drain in (("departure-depth", 0), ("enqueue-depth", 2), ("at-read", 0)):
        disc = _disc(ns, p4rcp, "3p", 5000, QueueSample=ns.StringValue(sample))
        for rate in (9000, 4000, 7000, 8000):      # the fourth finds the queue full
            disc.Enqueue(_rcp_item(ns, p4rcp, rate, rtt_us=40_000))
        assert disc.InputPackets() == 4 and disc.Drops() == 1
        assert disc.InputBytes() == 4 * (20 + 8 + 16 + 20 + 1000 + 14)
        assert disc.RttCount() == 0                # not yet departed
        assert disc.QueueDepthPackets() == (3 if sample == "at-read" else 0)     # nothing departed yet
        rates, depths = [], []
        for _ in range(3):
            item = disc.Dequeue()
            packet = item.GetPacket().Copy()
            packet.RemoveHeader(ns.UdpHeader())
            header = p4rcp.RcpHeader()
            packet.RemoveHeader(header)
            rates.append(header.rateKbps)
            depths.append(disc.QueueDepthPackets())
        assert rates == [5000, 4000, 5000]
        assert depths == {"departure-depth": [2, 1, 0], "enqueue-depth": [0, 1, 2], "at-read": [2, 1, 0]}[sample]
        assert disc.RttCount() == 3 and disc.RttSumUs() == 120_000
        assert disc.QueueDepthPackets() == after_drain


def test_the_feedforward_counts_and_syn_stamps(ns3):
    """RcpQueueDisc's feedforward, on departure: a SYN adds min(size, P) to the committed arrivals; a long one
    (size above the long threshold), the k-th since the interval's base, is stamped at most the k-th SYN rate
    (the last one for every later SYN), a short one at most the short rate, never above R; a DATA packet
    flagged ENDING adds min(size, P) to the committed departures, other DATA packets nothing."""
    ns, p4rcp = ns3
    disc = _disc(ns, p4rcp, "100p", 3000)
    disc.SetArrivalsBase(0)
    for k in range(1, 9):
        disc.SetSynRateKbps(k, 500 * k)
    disc.SetShortRateKbps(700)
    disc.SetGrantPackets(40, 20)

    def stamps(items):
        for item in items:
            disc.Enqueue(item)
        out = []
        for _ in items:
            packet = disc.Dequeue().GetPacket().Copy()
            packet.RemoveHeader(ns.UdpHeader())
            header = p4rcp.RcpHeader()
            packet.RemoveHeader(header)
            out.append(header.rateKbps)
        return out

    syns = stamps([_rcp_item(ns, p4rcp, 9000, 0, kind=SYN, size=100) for _ in range(10)])
    assert syns == [500, 1000, 1500, 2000, 2500, 3000, 3000, 3000, 3000, 3000]
    assert (disc.LongArrivals(), disc.CommittedArrivals(), disc.CommittedDepartures()) == (10, 400, 0)
    # short flows (at most the threshold) take the short rate and count their size, the long count stays
    assert stamps([_rcp_item(ns, p4rcp, 9000, 0, kind=SYN, size=n) for n in (20, 3)]) == [700, 700]
    assert (disc.LongArrivals(), disc.CommittedArrivals()) == (10, 423)
    disc.SetArrivalsBase(10)                    # the next interval: its first long SYN is k = 1 again
    assert stamps([_rcp_item(ns, p4rcp, 9000, 0, kind=SYN, size=21)]) == [500]
    data = stamps([_rcp_item(ns, p4rcp, 9000, 40_000, size=100),
                   _rcp_item(ns, p4rcp, 9000, 40_000, flags=FLAG_ENDING, size=100),
                   _rcp_item(ns, p4rcp, 9000, 40_000, flags=FLAG_ENDING, size=5)])
    assert data == [3000, 3000, 3000] and disc.CommittedDepartures() == 45 and disc.LongArrivals() == 11


def test_the_classic_drop_takes_tcp_packets_before_the_count(ns3):
    """RcpQueueDisc's coupled drop (classic.p4 on v1model): a TCP packet is dropped with the port's probability
    before addition 1 counts it; RCP packets are never dropped by it."""
    ns, p4rcp = ns3
    disc = _disc(ns, p4rcp, "5000p", 5000)
    disc.SetClassicDrop(1.0)
    for _ in range(3):
        disc.Enqueue(_tcp_item(ns))
    for _ in range(2):
        disc.Enqueue(_rcp_item(ns, p4rcp, 9000, 40_000))
    assert (disc.ClassicDrops(), disc.InputPackets(), disc.Drops()) == (3, 2, 0)
    disc.SetClassicDrop(0.25)
    for _ in range(2000):
        disc.Enqueue(_tcp_item(ns))
    dropped = disc.ClassicDrops() - 3
    assert 400 < dropped < 600, dropped          # 500 expected; the binomial's sd is 19
    assert disc.InputPackets() == 2 + 2000 - dropped


def _disc(ns, p4rcp, max_size: str, rate_kbps: int, **attributes):
    """An RcpQueueDisc of that size (ns-3's QueueSize, "100p") stamping R = rate_kbps, with these attributes."""
    disc = ns.CreateObject[p4rcp.RcpQueueDisc]()
    disc.SetAttribute("MaxSize", ns.QueueSizeValue(ns.QueueSize(max_size)))
    for name, value in attributes.items():
        disc.SetAttribute(name, value)
    disc.Initialize()
    disc.SetRateKbps(rate_kbps)
    return disc


def _tcp_item(ns):
    """A TCP segment of 1000 bytes as it reaches a router's queue (only its IPv4 protocol matters here)."""
    packet = ns.Create[ns.Packet](20 + 1000)
    ip = ns.Ipv4Header()
    ip.SetProtocol(6)
    ip.SetPayloadSize(packet.GetSize())
    return ns.Create[ns.Ipv4QueueDiscItem](packet, ns.Address(), 0x0800, ip)


def _rcp_item(ns, p4rcp, rate_kbps: int, rtt_us: int, kind=DATA, flags: int = 0, size: int = 0):
    """A forward packet of the hosts' transport (DATA unless `kind` says: its RCP header, 20 bytes of the hosts'
    header and 1000 of payload) as it reaches a router's queue: IPv4 header aside, UDP first."""
    packet = ns.Create[ns.Packet](20 + 1000)
    rcp = p4rcp.RcpHeader()
    rcp.type, rcp.flags, rcp.rateKbps, rcp.rttUs, rcp.size = kind, flags, rate_kbps, rtt_us, size
    packet.AddHeader(rcp)
    udp = ns.UdpHeader()
    udp.SetSourcePort(40000)
    udp.SetDestinationPort(RCP_UDP_PORT)
    packet.AddHeader(udp)
    ip = ns.Ipv4Header()
    ip.SetProtocol(17)
    ip.SetPayloadSize(packet.GetSize())
    return ns.Create[ns.Ipv4QueueDiscItem](packet, ns.Address(), 0x0800, ip)

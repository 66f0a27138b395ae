"""The simulated hosts: HostSender and HostReceiver run the Rust hosts' transport (hosts/include/p4rcp_host.h)
in ns-3, so every scheme of the hosts runs on the engine and both ends write the hosts' own records.

Skipped, with the reason, where ns-3 (the ns3 wheel and cppyy), g++ or the hosts' library is missing.
"""

from __future__ import annotations

import statistics

import pytest

from topo.ns3 import build
from topo.ns3.tests.simulation import experiment, finish, long_flows, read, start_run
from topo.ns3.workload import POISSON_FLOW_BASE

REASON = build.unavailable()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"ns-3 engine: {REASON}")

C_MBPS = 10
PAYLOAD_SHARE = 1000 / 1078       # application bytes of a full data frame


@pytest.fixture(scope="module")
def ns3():
    return build.load()


@pytest.mark.parametrize("scheme", ["rcp", "allegro", "vivace", "vivace-loss", "fixed:5mbit"])
def test_every_scheme_of_the_hosts_delivers_a_long_flow_and_both_ends_record_it(ns3, tmp_path, scheme):
    exp = experiment(tmp_path, "one-flow", schemes=[scheme], duration_s=6, long_flows=long_flows([0]),
                     bottleneck_mbps=C_MBPS, rtt_ms=40)
    meta = finish(start_run(ns3, exp, tmp_path / "run"))
    assert meta["valid"], meta["problems"]
    [sent] = read(tmp_path / "run" / "flows_h1.jsonl")
    [received] = read(tmp_path / "run" / "recv_r1.jsonl")
    name = scheme.split(":")[0]
    assert (sent["scheme"], received["scheme"]) == (name, name)
    # every byte delivered in order and checked against the flow's content, as on the hosts
    assert sent["completed"] and sent["verified"] is True, sent
    assert received["completed"] and received["verified"] is True, received
    assert received["bytes_delivered"] == sent["size_bytes"] > 0
    assert received["last_byte_unix_s"] <= sent["start_unix_s"] + sent["fct_s"]
    assert sent["dst"] == f"{exp.variants()[0].topology.hosts['r1'].ip}:6577"
    trace = read(tmp_path / "run" / "trace_h1.jsonl")
    events = {line["event"] for line in trace}
    assert "sample" in events and (scheme == "rcp" or "mi" in events), events
    # the flow holds its rate over the last 2 s: C (rcp, allegro, vivace), 5 Mb/s (fixed)
    samples = [s["goodput_kbps"] for s in trace if s["event"] == "sample" and 4 <= s["t_s"] < 6]
    rate_kbps = 5000 if scheme.startswith("fixed") else C_MBPS * 1000
    assert statistics.fmean(samples) == pytest.approx(rate_kbps * PAYLOAD_SHARE, rel=0.15)


def test_a_poisson_workload_of_a_pcc_scheme_is_recorded_flow_by_flow(ns3, tmp_path):
    """Every flow the generator planned starts, completes and is recorded by its sender (index, id) and its
    receiver, the flows' controllers seeded as the generator seeds them."""
    exp = experiment(tmp_path, "poisson", schemes=["vivace-loss"], duration_s=3, load=0.5,
                     poisson=[{"sender": "h1", "receiver": "r1", "sizes": "fixed:20000"}], bottleneck_mbps=C_MBPS,
                     rtt_ms=40)
    run = start_run(ns3, exp, tmp_path / "run")
    planned = run.job.plan.planned["h1"]
    meta = finish(run)
    assert meta["valid"], meta["problems"]
    sent = read(tmp_path / "run" / "flows_h1.jsonl")
    received = read(tmp_path / "run" / "recv_r1.jsonl")
    assert planned > 10 and len(sent) == len(received) == planned
    assert sorted((r["index"], r["flow_id"]) for r in sent) == [(k, POISSON_FLOW_BASE + k) for k in range(planned)]
    assert all(r["completed"] and r["verified"] and r["size_bytes"] == 20_000 for r in sent)
    assert all(r["completed"] and r["verified"] and r["bytes_delivered"] == 20_000 for r in received)
    assert not (tmp_path / "run" / "trace_h1.jsonl").exists()     # as the generator on the hosts: no trace


def test_lost_packets_are_retransmitted_and_counted(ns3, tmp_path):
    """A flow below C at 2% random loss on its access link: it loses 2% of its DATA packets, no more (nothing
    queues), and retransmits them; every byte arrives."""
    exp = experiment(tmp_path, "lossy", schemes=["fixed:5mbit"], duration_s=5,
                     long_flows=long_flows([0]), bottleneck_mbps=C_MBPS, rtt_ms=30, loss_pct=2)
    meta = finish(start_run(ns3, exp, tmp_path / "run"))
    assert meta["valid"], meta["problems"]
    [sent] = read(tmp_path / "run" / "flows_h1.jsonl")
    [received] = read(tmp_path / "run" / "recv_r1.jsonl")
    assert sent["completed"] and sent["verified"] and received["verified"]
    assert sent["packets_lost"] > 0 and sent["retransmissions"] > 0
    assert set(meta["bottleneck_drops"].values()) == {0}
    assert sent["packets_lost"] / sent["packets_sent"] == pytest.approx(0.02, abs=0.008)
    assert sent["retransmissions"] >= sent["packets_lost"]


def test_tcp_flows_and_the_hosts_flows_share_a_run(ns3, tmp_path):
    """A long flow of its own cc (tcp) among the run's rcp flows: ns-3's TCP carries it, recorded by the hosts'
    code as a TCP flow (no content: verified null), beside the rcp flow's records."""
    flows = long_flows([0, 0])
    flows[0]["cc"] = "tcp"
    exp = experiment(tmp_path, "mixed", schemes=["rcp"], duration_s=4, long_flows=flows, bottleneck_mbps=C_MBPS,
                     rtt_ms=40)
    meta = finish(start_run(ns3, exp, tmp_path / "run"))
    assert meta["valid"], meta["problems"]
    [tcp] = read(tmp_path / "run" / "flows_h1.jsonl")
    [rcp] = read(tmp_path / "run" / "flows_h2.jsonl")
    assert (tcp["scheme"], tcp["completed"], tcp["verified"]) == ("tcp", True, None)
    assert tcp["dst"].endswith(":6578") and tcp["packets_lost"] is None
    assert (rcp["scheme"], rcp["completed"], rcp["verified"]) == ("rcp", True, True)
    [tcp_received] = read(tmp_path / "run" / "recv_r1.jsonl")
    assert (tcp_received["transport"], tcp_received["verified"]) == ("tcp", None)
    assert tcp_received["bytes_delivered"] == tcp["size_bytes"]
    assert {line["state"] for line in read(tmp_path / "run" / "trace_h1.jsonl")} == {"tcp"}

"""The XCP router on the ns-3 engine: XcpQueueDisc on the bottleneck, the XcpLoop over it, the hosts' XCP."""

from __future__ import annotations

import statistics

import pytest

from topo.ns3 import build
from topo.ns3.tests import simulation
from topo.ns3.tests.simulation import finish, long_flows, read, start_run

pytestmark = pytest.mark.skipif(build.unavailable() is not None, reason=f"SKIPPED: {build.unavailable()}")


@pytest.fixture(scope="module")
def ns3():
    return build.load()


def test_two_xcp_flows_fill_the_link_without_a_queue_or_a_drop(ns3, tmp_path):
    exp = simulation.experiment(tmp_path, "xcp-two", schemes=["xcp"], duration_s=5, long_flows=long_flows([0, 1]),
                                bottleneck_mbps=20, rtt_ms=40)
    run = start_run(ns3, exp, tmp_path / "run")
    [(switch, port)] = run.topology.bottlenecks
    disc = run.net.rcp_disc(switch, port)
    assert str(disc.GetInstanceTypeId().GetName()) == "p4rcp::XcpQueueDisc"
    meta = finish(run)
    assert meta["valid"], meta["problems"]
    assert int(disc.Drops()) == 0
    assert int(disc.Lowered()) > 0 and int(disc.XcpPackets()) > 0
    records = read(tmp_path / "run" / f"control_{switch}.jsonl")
    t0 = records[0]["time"] - records[0]["period_s"]
    steady = [r for r in records if 3 <= r["time"] - t0 <= 5]
    utilisation = sum(r["y_bps"] * r["period_s"] for r in steady) / sum(r["C_bps"] * r["period_s"] for r in steady)
    assert utilisation >= 0.95
    frame = run.topology.data_frame_bytes
    assert statistics.fmean(r["Q_bytes"] for r in steady) / frame < 5     # the persistent queue: a few packets
    assert all(r["d_s"] == pytest.approx(0.04, rel=0.3) for r in steady)  # d: the flows' RTT

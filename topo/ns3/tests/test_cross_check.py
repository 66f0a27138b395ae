"""The ns-3 engine against the Rust hosts' simulated test bed (hosts/tests/testbed/): the same transport and
controllers on two network models. The lossy experiment's case at 1% random loss (one flow, 15 Mb/s, 30 ms,
64 packets of queue, 20 s): Allegro and Vivace-Loss keep the same share of the link in the run's last half on
both, within 10%.

Runs the test bed through cargo (`explore_lossy`, built by `cargo test`); skipped, with the reason, where
cargo or the ns-3 engine is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess

import pytest

from topo.hosts import ROOT
from topo.ns3 import build
from topo.ns3.tests.simulation import experiment, finish, long_flows, read, start_run

REASON = build.unavailable() or (None if shutil.which("cargo") else "cargo is not on PATH")
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"cross-check: {REASON}")

SCHEMES = ("allegro", "vivace-loss")
LOSS = 0.01
C_KBPS = 15_000
FRAME_PER_PAYLOAD = 1078 / 1000


def shares_on_the_test_bed(schemes: tuple[str, ...], loss: float) -> dict[str, float]:
    """The test bed's share of the link per scheme (seed 1)."""
    env = {**os.environ, "SIM_CC": ",".join(schemes), "SIM_SEEDS": "1", "SIM_LOSSES": str(loss)}
    done = subprocess.run(["cargo", "test", "--quiet", "--manifest-path", str(ROOT / "hosts" / "Cargo.toml"),
                           "--test", "testbed_explore", "explore_lossy", "--", "--ignored", "--exact", "--nocapture"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {row["cc"]: row["share"] for row in rows}


def test_ns3_keeps_the_test_beds_share_of_a_lossy_link(tmp_path):
    bed = shares_on_the_test_bed(SCHEMES, LOSS)
    assert set(bed) == set(SCHEMES)
    ns3 = build.load()
    for scheme in SCHEMES:
        exp = experiment(tmp_path, f"lossy-{scheme}", schemes=[scheme], duration_s=20, long_flows=long_flows([0]),
                         bottleneck_mbps=C_KBPS / 1000, rtt_ms=30, loss_pct=100 * LOSS)
        root = tmp_path / scheme
        meta = finish(start_run(ns3, exp, root))
        assert meta["valid"], meta["problems"]
        goodput = statistics.fmean(s["goodput_kbps"] for s in read(root / "trace_h1.jsonl")
                                   if s["event"] == "sample" and 10 <= s["t_s"] < 20)
        share = goodput * FRAME_PER_PAYLOAD / C_KBPS
        assert share == pytest.approx(bed[scheme], rel=0.10), (scheme, share, bed[scheme])

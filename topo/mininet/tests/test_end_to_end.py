"""Two RCP flows across a bmv2 dumbbell in Mininet: R converges to C/2, the link is mostly full, the queue stays
small, every byte arrives. A run the machine voided is run again, and the test skipped if every attempt was
(topo/mininet/tests/runs.py).

The test's bounds: R within 15% of C/2, utilisation >= 0.85. With the control plane's default gains
(0.4 / 0.4, no target queue) idle runs on this 2-core machine measure R = 0.96-0.99 x C/2, utilisation
0.97-0.99 and a mean queue of 0.4-2 packets (docs/design.md, "Per interval: the law").
"""

import os
import signal
import statistics
import threading
import time
from pathlib import Path

import pytest

from p4rcp.testing import require_toolchain
from topo import hosts
from topo.experiment import load_experiment
from topo.mininet.runner import run_scheme
from topo.mininet.tests.runs import beside, valid_run
from topo.report import read_jsonl
from topo.schedule import RunDir

SETTLE_S = 5.0
ENDING_S = 0.5     # the last interval(s) see the flows stop


def test_two_rcp_flows_share_the_bottleneck(tmp_path):
    require_toolchain("simple_switch")
    if not hosts.HOST_BINARY.is_file():
        pytest.fail(f"{hosts.HOST_BINARY} missing although the toolchain is there: run 'make hosts'")
    exp = load_experiment(Path(__file__).with_name("e2e.toml"))
    [variant] = exp.variants()
    meta, out = valid_run(exp, variant, "rcp", tmp_path)
    run_dir = out.root
    assert list(meta["bottleneck_drops"].values()) == [0], "RCP keeps the queue small: nothing dropped"

    sent = [f for name in ("h1", "h2") for f in read_jsonl(run_dir / f"flows_{name}.jsonl")]
    assert len(sent) == 2 and all(f["completed"] and f["verified"] for f in sent), sent
    # Steady state: both flows sending and settled; the control log also covers the idle link
    # before and after the flows, which is neither utilisation nor a share of it.
    begin = max(f["start_unix_s"] for f in sent) + SETTLE_S
    end = min(f["start_unix_s"] + f["fct_s"] for f in sent) - ENDING_S

    sw, port = variant.topology.bottlenecks[0]
    control = [r for r in read_jsonl(run_dir / f"control_{sw}.jsonl") if r["port"] == port]
    C = control[0]["C_bps"]
    steady = [r for r in control if begin <= r["time"] <= end]
    assert len(steady) > 100, "too few control intervals"
    R = statistics.fmean(r["R_bps"] for r in steady)
    utilisation = statistics.fmean(r["y_bps"] for r in steady) / C
    queue_pkts = statistics.fmean(r["q_bytes"] for r in steady) / variant.topology.data_frame_bytes
    print(f"C {C / 1e6:.2f} Mb/s, R {R / 1e6:.2f} Mb/s, utilisation {utilisation:.2f}, queue {queue_pkts:.1f} pkts")
    assert R == pytest.approx(C / 2, rel=0.15)
    assert utilisation >= 0.85
    bdp_pkts = C * 0.040 / 8 / variant.topology.data_frame_bytes
    assert queue_pkts < 0.15 * bdp_pkts        # 7 packets (6 ms) at 10 Mb/s and 40 ms

    received = [r for name in ("r1", "r2") for r in read_jsonl(run_dir / f"recv_{name}.jsonl")]
    assert len(received) == 2 and all(r["verified"] and r["completed"] for r in received), received
    assert {r["bytes_delivered"] for r in received} == {f["size_bytes"] for f in sent}
    # the senders' NICs (twice the bottleneck) carried every frame the senders sent and dropped none
    access = meta["access_links"]
    assert sorted(access) == ["h1", "h2"] and all(a["rate_mbps"] == pytest.approx(2 * C / 1e6) for a in access.values())
    assert all(a["packets"] >= f["packets_sent"] for a, f in zip(access.values(), sent)), (access, sent)
    assert all(a["drops"] == 0 for a in access.values()), access


def test_an_external_scheme_runs_and_p4rcp_measures_its_goodput(tmp_path):
    """Another program as a scheme: iperf's UDP sender at 4 Mb/s of payload; p4rcp counts what
    reached the receiver from a capture there and writes the flow's record and goodput samples."""
    require_toolchain("simple_switch")
    exp = load_experiment(Path(__file__).with_name("e2e-external.toml"))
    [variant] = exp.variants()
    meta, out = valid_run(exp, variant, "iperf-udp", tmp_path)
    run_dir = out.root
    [record] = read_jsonl(run_dir / "flows_h1.jsonl")
    assert record["external"] and record["completed"], record
    samples = [s["goodput_kbps"] for s in read_jsonl(run_dir / "trace_h1.jsonl") if 2.0 <= s["t_s"] <= 7.0]
    assert statistics.fmean(samples) == pytest.approx(4000, rel=0.1)
    assert set(meta["external_cpu_pct"]) == {"h1 (flow 1000)"}


def _kill_sender_when_it_runs(flows_path: Path, after_s: float, stop: threading.Event, killed: list):
    """SIGKILL the p4rcp-host sender that writes flows_path, after_s after it appears (the hosts share this
    machine's PID namespace: Mininet separates networks only)."""
    deadline = time.monotonic() + 60
    while not stop.is_set() and time.monotonic() < deadline:
        for proc in Path("/proc").iterdir():
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except (OSError, ValueError):
                continue
            if b"send" in argv and str(flows_path).encode() in argv:
                if stop.wait(after_s):
                    return
                os.kill(int(proc.name), signal.SIGKILL)
                killed.append(int(proc.name))
                return
        time.sleep(0.05)


def test_a_killed_sender_voids_the_run_and_says_which(tmp_path):
    """A sender that dies mid-run: the run is void, and the problem names the flow and the host."""
    require_toolchain("simple_switch")
    exp = load_experiment(Path(__file__).with_name("e2e.toml"))
    [variant] = exp.variants()
    out = RunDir(tmp_path / "run")
    killed = []
    with beside(lambda stop: _kill_sender_when_it_runs(out.flows("h2"), 3.0, stop, killed)):
        meta = run_scheme(exp, variant, "rcp", out)
    assert killed, "the h2 sender never appeared"
    assert not meta["valid"]
    [problem] = [p for p in meta["problems"] if "h2->r2" in p]
    assert "did not complete" in problem and "killed by SIGKILL" in problem, meta["problems"]
    assert not any("h1->r1" in p for p in meta["problems"]), meta["problems"]


def test_two_xcp_flows_share_the_bottleneck_of_a_p4_xcp_router(tmp_path):
    """The scheme xcp on Mininet: XCP hosts over the v1model XCP router and XCP's loop. Both flows arrive whole
    and nothing is dropped; in the steady state d is the path's RTT, the link is mostly full and the two flows
    deliver about the same."""
    require_toolchain("simple_switch")
    if not hosts.HOST_BINARY.is_file():
        pytest.fail(f"{hosts.HOST_BINARY} missing although the toolchain is there: run 'make hosts'")
    exp = load_experiment(Path(__file__).with_name("e2e-xcp.toml"))
    [variant] = exp.variants()
    meta, out = valid_run(exp, variant, "xcp", tmp_path)
    assert list(meta["bottleneck_drops"].values()) == [0], "XCP keeps the queue small: nothing dropped"
    sent = [f for name in ("h1", "h2") for f in read_jsonl(out.root / f"flows_{name}.jsonl")]
    assert len(sent) == 2 and all(f["completed"] and f["verified"] for f in sent), sent
    begin = max(f["start_unix_s"] for f in sent) + SETTLE_S
    end = min(f["start_unix_s"] + f["fct_s"] for f in sent) - ENDING_S
    sw, port = variant.topology.bottlenecks[0]
    control = [r for r in read_jsonl(out.root / f"control_{sw}.jsonl") if r["port"] == port]
    steady = [r for r in control if begin <= r["time"] <= end]
    assert len(steady) > 20, "too few control intervals"
    C = control[0]["C_bps"]
    utilisation = statistics.fmean(r["y_bps"] for r in steady) / C
    d = statistics.median(r["d_s"] for r in steady)
    print(f"C {C / 1e6:.2f} Mb/s, utilisation {utilisation:.2f}, d {d * 1e3:.1f} ms")
    assert 0.040 <= d < 0.080              # the 40 ms path and what the queue adds
    assert utilisation >= 0.8
    goodput = [f["size_bytes"] / f["fct_s"] for f in sent]
    assert min(goodput) / max(goodput) > 0.7, goodput

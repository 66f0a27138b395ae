"""Faults in the middle of an end-to-end run (e2e.toml: two RCP flows, 10 Mb/s, 40 ms, 15 s):

- the control plane, run as its own process, is killed and started again: the new one resumes the switch's
  R, and neither R, the queue nor the flows' rates jump, and nothing is lost;
- simple_switch is killed: the runner says so within a second, voids the run with the cause and leaves no
  interface, namespace, packet-filter rule or process behind;
- simple_switch is stopped for 30 ms (SIGSTOP, SIGCONT): the run is void for the stall (p4rcp/stalls.py).

Every process touched is one this test started (a child of it, found by PID).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import psutil
import pytest

from p4rcp.monitor import MACHINE_CAUSES, STALL, SWITCH_DIED
from p4rcp.testing import require_toolchain
from p4rcp.toolchain import ROOT
from topo import hosts
from topo.experiment import load_experiment
from topo.mininet.runner import RunOptions, run_scheme
from topo.mininet.tests.runs import ATTEMPTS, beside, valid_run
from topo.report import read_jsonl
from topo.schedule import RunDir

E2E = Path(__file__).with_name("e2e.toml")
KILL_AT_S = 7.0          # the flows have shared the link for 7 s (the end-to-end test's steady state from 5 s)
RESTART_AFTER_S = 0.5    # no controller at all meanwhile
STEADY_BEFORE_KILL_S = 4.0   # the flows converge within a second; from 3 s on they share the link steadily
FRAME = 1078


def e2e():
    require_toolchain("simple_switch")
    if not hosts.HOST_BINARY.is_file():
        pytest.fail(f"{hosts.HOST_BINARY} missing although the toolchain is there: run 'make hosts'")
    exp = load_experiment(E2E)
    [variant] = exp.variants()
    return exp, variant


def our_processes(predicate) -> list[psutil.Process]:
    """This test's own descendants that match."""
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if predicate(proc):
                found.append(proc)
        except psutil.Error:
            pass
    return found


def wait_for_one(predicate, timeout=60.0) -> psutil.Process:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = our_processes(predicate)
        if found:
            return found[0]
        time.sleep(0.02)
    raise AssertionError("the process never appeared")


def is_switch(proc) -> bool:
    return proc.name() == "simple_switch" and "9090" in proc.cmdline()


def flows_started(out: RunDir) -> bool:
    """The first sender has written its first trace line: the flows are running."""
    return out.trace("h1").exists()


def once_flows_run(predicate, out: RunDir, stop: threading.Event) -> psutil.Process:
    """This test's process that matches, once the flows run (or the run is over: stop is set)."""
    proc = wait_for_one(predicate)
    while not flows_started(out) and not stop.wait(0.05):
        pass
    return proc


@contextlib.contextmanager
def controller_restart(out: RunDir, record: dict):
    """Kill s1's controller process KILL_AT_S into the flows and start the same command RESTART_AFTER_S later;
    the restarted one is stopped after the run."""
    def act(stop):
        controller = once_flows_run(lambda p: "control_plane" in p.cmdline() and str(out.root) in " ".join(p.cmdline()),
                                    out, stop)
        command = controller.cmdline()
        if stop.wait(KILL_AT_S):
            return
        record["kill_unix_s"] = time.time()
        os.kill(controller.pid, signal.SIGKILL)
        if stop.wait(RESTART_AFTER_S):
            return
        record["restart_unix_s"] = time.time()
        stderr = out.root / "stderr_s1_control_restarted.log"
        with open(stderr, "wb") as f:
            record["proc"] = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=f)
        record["stderr"] = stderr

    try:
        with beside(act):
            yield
    finally:
        if "proc" in record:
            record["proc"].terminate()
            record["proc"].wait(10)


def test_a_controller_killed_and_restarted_mid_run_resumes_R_and_nothing_jumps_or_is_lost(tmp_path):
    exp, variant = e2e()
    record: dict = {}

    def during(out):
        record.clear()
        return controller_restart(out, record)

    meta, out = valid_run(exp, variant, "rcp", tmp_path, RunOptions(control_plane="process"), during=during)
    assert "restart_unix_s" in record, "the controller was never killed and restarted"
    kill, restart = record["kill_unix_s"], record["restart_unix_s"]

    # nothing lost: the queue dropped nothing, every byte arrived, and no sender lost a packet from the kill
    # to 2 s after the restart (the flows' start, two senders at their SYN-ACK's rate into an emulated path,
    # may lose a packet or two to the machine: that is not the restart's)
    assert list(meta["bottleneck_drops"].values()) == [0]
    sent = [f for name in ("h1", "h2") for f in read_jsonl(out.flows(name))]
    assert len(sent) == 2 and all(f["completed"] and f["verified"] for f in sent), sent
    for flow, name in zip(sent, ("h1", "h2")):
        lossy = [t for t in read_jsonl(out.trace(name)) if t["event"] == "mi" and t["mi_loss"] > 0
                 and kill <= flow["start_unix_s"] + t["t_s"] <= restart + 2.0]
        assert not lossy, (name, lossy)

    # the restarted controller resumed the switch's R and said so
    said = record["stderr"].read_text()
    assert "resumed the switch's state: port 3 R" in said and "programmed it" not in said, said
    control = [r for r in read_jsonl(out.root / "control_s1.jsonl") if r["port"] == 3]
    before = [r for r in control if kill - STEADY_BEFORE_KILL_S <= r["time"] < kill]
    after = [r for r in control if r["time"] > restart]
    assert len(before) > 100 and len(after) > 100, (len(before), len(after))
    R_before = before[-1]["R_bps"]
    first_two = after[:2]
    assert all(abs(r["R_bps"] - R_before) <= 0.05 * R_before for r in first_two), (R_before, first_two)
    # no spike: R, the queue and the senders' rates over the 2 s after the restart stay within what the
    # steady state before the kill saw (5% above its largest R; 3 packets above its longest queue, or above
    # the queue the restarted loop found: the last R, a little above the flows' share, builds one while no
    # loop runs). The steady state is sampled over 4 s: a hiccup of a few milliseconds, too short for the run
    # to void (p4rcp/stalls.py), puts 4-5 packets into the queue at once every few seconds, and a 2 s sample
    # that happened to miss one judged the 2 s after the restart that happened to hold one.
    window = [r for r in after if r["time"] <= restart + 2.0]
    R_max = max(r["R_bps"] for r in before)
    assert max(r["R_bps"] for r in window) <= 1.05 * R_max
    found = max(max(r["q_bytes"] for r in before), window[0]["q_bytes"])
    assert max(r["q_bytes"] for r in window) / FRAME <= found / FRAME + 3
    for name in ("h1", "h2"):
        [flow] = read_jsonl(out.flows(name))
        rates = [t["rate_kbps"] for t in read_jsonl(out.trace(name)) if t["event"] == "rate"
                 and kill <= flow["start_unix_s"] + t["t_s"] <= restart + 2.0]
        assert all(rate <= 1.05 * R_max / 1000 for rate in rates), (name, rates, R_max)


def _interfaces() -> set[str]:
    return set(os.listdir("/sys/class/net"))


def _nft_rules() -> str:
    done = subprocess.run(["nft", "-j", "list", "table", "inet", "p4rcp"], capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else ""


def _netns() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def test_a_killed_switch_voids_the_run_within_a_second_and_everything_is_cleaned_up(tmp_path):
    exp, variant = e2e()
    out = RunDir(tmp_path / "run")
    interfaces, nft, netns = _interfaces(), json.loads(_nft_rules() or "{}"), _netns()
    seen: set[int] = set()
    killed: dict = {}

    def act(stop):
        switch = once_flows_run(is_switch, out, stop)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and not stop.is_set():
            seen.update(p.pid for p in our_processes(lambda p: True))     # everything the run started
            time.sleep(0.1)
        if not stop.is_set():
            killed["unix_s"] = time.time()
            os.kill(switch.pid, signal.SIGKILL)

    with beside(act):
        meta = run_scheme(exp, variant, "rcp", out)
        returned = time.time()
    assert killed, "the switch was never killed"
    assert not meta["valid"] and SWITCH_DIED in meta["void_causes"]
    assert "simple_switch s1 was killed by SIGKILL" in meta["problems"][0], meta["problems"]
    detected = meta["switch_died"]["detected_unix_s"] - killed["unix_s"]
    assert detected < 1.0, f"the runner saw it after {detected:.2f} s"
    print(f"switch death detected after {detected * 1000:.0f} ms; run_scheme returned "
          f"{returned - killed['unix_s']:.1f} s after the kill")
    assert json.loads((out.root / "run.json").read_text())["void_causes"] == meta["void_causes"]
    # nothing left: the run's processes, its interfaces, its namespaces' processes, its packet-filter rules
    left = [pid for pid in seen if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    assert left == [], [psutil.Process(pid).cmdline() for pid in left]
    assert _interfaces() == interfaces
    assert _netns() == netns
    assert json.loads(_nft_rules() or "{}") == nft


def stalled_run(exp, variant, out: RunDir) -> tuple[dict, dict]:
    """A run whose switch is stopped with SIGSTOP KILL_AT_S into the flows and continued 30 ms later; the run's
    metadata and when (unix_s) and how long (s) the switch stood still."""
    stalled: dict = {}

    def act(stop):
        switch = once_flows_run(is_switch, out, stop)
        if stop.wait(KILL_AT_S):
            return
        stalled["unix_s"] = time.time()
        os.kill(switch.pid, signal.SIGSTOP)
        time.sleep(0.030)
        os.kill(switch.pid, signal.SIGCONT)
        stalled["s"] = time.time() - stalled["unix_s"]

    with beside(act):
        meta = run_scheme(exp, variant, "rcp", out)
    assert stalled, "the switch was never stopped"
    return meta, stalled


def test_a_30_ms_stall_of_the_switch_voids_the_run_and_names_the_stall(tmp_path):
    """SIGSTOP then SIGCONT 30 ms later: the switch neither forwards nor answers its controller meanwhile, and
    takes in 30 ms of frames at once when it resumes; the stall threshold of this link is 13.8 ms. A machine
    busy enough to void the run by itself (CPU, other work, input overrun) can hide the injected stall (the
    control loop, starved too, sends no read while the switch stands still); such a run is tried again, and
    the test skipped when every attempt was."""
    exp, variant = e2e()
    busy = []
    for attempt in range(1, ATTEMPTS + 1):
        meta, stalled = stalled_run(exp, variant, RunDir(tmp_path / f"attempt-{attempt}"))
        assert not meta["valid"], "a run with a 30 ms stall counted as valid"
        # the stall named at the moment it was injected (a busy machine may add stalls of its own elsewhere),
        # by the late control read (over the 13.8 ms threshold) or by the input's gap and burst
        at_s = stalled["unix_s"] - meta["start_unix_s"]
        named = [p for p in meta["problems"] if (m := re.match(r"s1 stalled (\d+\.\d) s into the run", p))
                 and abs(float(m[1]) - at_s) <= 0.5 and ("13.8 ms" in p or "input stopped" in p)]
        if named:
            assert STALL in meta["void_causes"]
            print(f"stopped for {stalled['s'] * 1000:.1f} ms {at_s:.1f} s into the run: {named[0]}")
            return
        others = set(meta["void_causes"]) & (MACHINE_CAUSES - {STALL})
        assert others, f"the stall injected {at_s:.1f} s into the run was not named: {meta['problems']}"
        busy.append(", ".join(sorted(others)))
    pytest.skip(f"SKIPPED: the machine voided all {ATTEMPTS} runs by itself ({'; '.join(busy)}), and the "
                "injected stall was not seen among its own")

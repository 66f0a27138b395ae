"""Stale interfaces of a killed run: removed when nothing uses them, kept (with an error) when a switch does."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from topo.mininet.network import remove_stale_interfaces

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="creates veth pairs: needs root")

NAMES = ["zz9-eth1", "zz8-eth1"]


@pytest.fixture
def stale_pair():
    subprocess.run(["ip", "link", "add", NAMES[0], "type", "veth", "peer", "name", NAMES[1]], check=True)
    yield NAMES
    for name in NAMES:
        subprocess.run(["ip", "link", "del", name], capture_output=True)


def exists(name):
    return Path("/sys/class/net", name).exists()


def test_a_pair_nobody_uses_is_removed(stale_pair):
    remove_stale_interfaces(stale_pair + ["zz7-eth1"])
    assert not any(exists(n) for n in stale_pair)


def test_a_pair_a_running_switch_uses_is_kept(stale_pair):
    # A process whose argv reads like simple_switch's: `simple_switch ... -i 1@zz9-eth1`.
    switch = subprocess.Popen(["simple_switch", "-c", "import time; time.sleep(30)", "-i", f"1@{NAMES[0]}"],
                              executable=sys.executable)
    try:
        cmdline = Path(f"/proc/{switch.pid}/cmdline")
        deadline = time.monotonic() + 5
        while not cmdline.read_bytes().startswith(b"simple_switch\0") and time.monotonic() < deadline:
            time.sleep(0.01)    # until the child has exec'd
        with pytest.raises(RuntimeError, match=f"{NAMES[0]}.*simple_switch {switch.pid}"):
            remove_stale_interfaces(stale_pair)
        assert all(exists(n) for n in stale_pair)
    finally:
        switch.kill()
        switch.wait()


def test_a_controller_process_is_given_the_runs_topology_and_parameters(tmp_path):
    """control_plane = "process": the standalone controller's command line loads the very topology the network
    was built from (its parameters written beside the run) and the run's RCP parameters."""
    from control_plane.__main__ import parse_args, rcp_params
    from p4rcp.params import RcpParams
    from p4rcp.topology import load_topology
    from topo.experiment import TOPOLOGIES_DIR
    from topo.mininet.network import Network

    topology = load_topology(TOPOLOGIES_DIR / "dumbbell.toml", pairs=3, rtt_ms=[20, 40, 80], bottleneck_mbps=12)
    params = RcpParams(alpha=0.6, beta=0.2, feedforward=True, queue_packet_bytes=topology.data_frame_bytes)
    network = Network(topology, Path("unused.json"), tmp_path, control_plane="process")
    command = network.controller_command("s1", params)
    assert command[1:3] == ["-m", "control_plane"]
    args = parse_args(command[3:])
    assert (args.switch, args.log) == ("s1", str(tmp_path / "control_s1.jsonl"))
    again = load_topology(args.topology)
    assert again.switch("s1") == topology.switch("s1") and again.routes("s1") == topology.routes("s1")
    assert rcp_params(args.preset, args.param, again.data_frame_bytes)[1] == params
    with pytest.raises(ValueError, match="thread, process"):
        Network(topology, Path("unused.json"), tmp_path, control_plane="elsewhere")
    assert args.router == "rcp" and network._mtu == topology.data_frame_bytes - 14
    # an xcp scheme's network: XCP's loop in the controller, and an MTU that holds the congestion header
    xcp = Network(topology, Path("unused.json"), tmp_path, control_plane="process", router="xcp")
    assert parse_args(xcp.controller_command("s1", params)[3:]).router == "xcp"
    assert xcp._mtu == topology.data_frame_bytes - 14 + 12

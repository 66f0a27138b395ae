"""Only this machine reaches a switch's control ports (p4rcp/control_ports.py, control_plane/simple_switch.py).

A network namespace of the test's own stands for another host: it is joined to the root namespace by a
veth with an address on each end and connects to the root namespace's address, as a host on the lab's
network would. Clients on 127.0.0.1 must still get in.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

from control_plane.bmv2_thrift import Bmv2ThriftDriver
from control_plane.simple_switch import SimpleSwitch
from p4rcp import control_ports
from p4rcp.control_ports import ControlPortGuard, guard_rules, remove_stale_rules
from p4rcp.testing import BUILD_JSON, require_toolchain
from p4rcp.veth import VethPairs, free_tcp_port

CONNECT_TIMEOUT_S = 2.0


def require_root_and_nft() -> None:
    if os.geteuid() != 0:
        pytest.skip("SKIPPED: needs root (network namespaces, nftables)")
    if shutil.which("nft") is None and not os.path.exists("/usr/sbin/nft"):
        pytest.skip("SKIPPED: needs nft (Debian's nftables; 'make deps' installs it)")


@pytest.fixture
def other_host():
    """A namespace joined to this one by a veth: (run a command in it, this machine's address on the veth)."""
    require_root_and_nft()
    tag = os.getpid() % 10000
    ns, here, there = f"p4rcpcp{tag}", f"cpr{tag}", f"cpn{tag}"
    subnet = f"198.18.{tag % 250}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "link", "add", here, "type", "veth", "peer", "name", there, "netns", ns], check=True)
        subprocess.run(["ip", "addr", "add", f"{subnet}.1/30", "dev", here], check=True)
        subprocess.run(["ip", "link", "set", here, "up"], check=True)
        for cmd in (["ip", "addr", "add", f"{subnet}.2/30", "dev", there], ["ip", "link", "set", there, "up"],
                    ["ip", "link", "set", "lo", "up"]):
            subprocess.run(["ip", "netns", "exec", ns, *cmd], check=True)

        def run_there(*argv: str) -> subprocess.CompletedProcess:
            return subprocess.run(["ip", "netns", "exec", ns, *argv], capture_output=True, text=True, timeout=30)

        yield run_there, f"{subnet}.1"
    finally:
        subprocess.run(["ip", "link", "del", here], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def connects_from(run_there, address: str, port: int) -> bool:
    probe = ("import socket, sys\n"
             f"try:\n    socket.create_connection(({address!r}, {port}), timeout={CONNECT_TIMEOUT_S}).close()\n"
             "except OSError as e:\n    print(e); sys.exit(1)\n")
    return run_there(sys.executable, "-c", probe).returncode == 0


def connects_locally(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=CONNECT_TIMEOUT_S).close()
        return True
    except OSError:
        return False


@pytest.fixture
def listener():
    """A TCP server on every address, as simple_switch's Thrift server listens."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", 0))
    server.listen(8)
    yield server.getsockname()[1]
    server.close()


def test_the_guard_keeps_a_port_to_this_machine(other_host, listener):
    run_there, address = other_host
    assert connects_from(run_there, address, listener), "without the guard the other host gets in: the test sees"
    with ControlPortGuard([listener]):
        assert not connects_from(run_there, address, listener)
        assert connects_locally(listener)
        assert any(rule["port"] == listener and rule["pid"] == os.getpid() for rule in guard_rules())
    assert not any(rule["port"] == listener for rule in guard_rules()), "the rule goes with the guard"
    assert connects_from(run_there, address, listener)


def test_a_killed_owners_rules_go_at_the_next_start_unless_its_port_is_still_served(listener):
    require_root_and_nft()
    unused = free_tcp_port()
    # A guard in a process that is then killed: its rules stay behind, as after kill -9 of a run.
    child = subprocess.Popen([sys.executable, "-c",
                              "import sys, time; from p4rcp.control_ports import ControlPortGuard\n"
                              f"ControlPortGuard([{unused}, {listener}]).open(); print('up', flush=True); "
                              "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "up"
    finally:
        child.kill()
        child.wait()
    left = {rule["port"] for rule in guard_rules() if rule["pid"] == child.pid}
    assert left == {unused, listener}
    remove_stale_rules()
    left = {rule["port"] for rule in guard_rules() if rule["pid"] == child.pid}
    assert left == {listener}, "a port something still listens on stays guarded; the unused one is freed"
    for rule in guard_rules():
        if rule["pid"] == child.pid:
            control_ports._nft("delete", "rule", "inet", control_ports.TABLE, control_ports.CHAIN,
                               "handle", str(rule["handle"]))


def test_a_running_switch_answers_this_machine_only(other_host):
    require_toolchain("simple_switch")
    run_there, address = other_host
    thrift_port = free_tcp_port()
    with VethPairs(2, tag="cp") as veths, SimpleSwitch(BUILD_JSON, dict(enumerate(veths.switch_side)), thrift_port):
        assert not connects_from(run_there, address, thrift_port)
        driver = Bmv2ThriftDriver(thrift_port)
        driver.connect()
        assert driver.read_register("rcp_rate")[0] == 0
        driver.close()
    assert not any(rule["port"] == thrift_port for rule in guard_rules())


def test_exposed_on_purpose_a_switch_answers_other_hosts(other_host):
    require_toolchain("simple_switch")
    run_there, address = other_host
    thrift_port = free_tcp_port()
    with VethPairs(2, tag="cx") as veths, SimpleSwitch(BUILD_JSON, dict(enumerate(veths.switch_side)), thrift_port,
                                                        expose_control_ports=True):
        assert connects_from(run_there, address, thrift_port)


def test_simple_switch_grpc_serves_p4runtime_on_loopback_only(other_host):
    require_toolchain("simple_switch_grpc")
    run_there, address = other_host
    thrift_port, grpc_port = free_tcp_port(), free_tcp_port()
    with VethPairs(2, tag="cg") as veths, SimpleSwitch(None, dict(enumerate(veths.switch_side)), thrift_port,
                                                        binary="simple_switch_grpc", grpc_port=grpc_port):
        deadline = time.monotonic() + 10
        while not connects_locally(grpc_port) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert connects_locally(grpc_port)
        assert not connects_from(run_there, address, grpc_port)
        assert not connects_from(run_there, address, thrift_port)

"""veth pairs for running simple_switch outside Mininet (PTF, benchmarks, integration tests)."""

from __future__ import annotations

import os
import socket
import subprocess


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


class VethPairs:
    """``count`` veth pairs; ``switch_side[i]`` goes to simple_switch port i,
    ``host_side[i]`` to the test. Names carry the creating PID so parallel runs
    never clash, and only these interfaces are ever deleted."""

    def __init__(self, count: int, tag: str = "rv"):
        stem = f"{tag}{os.getpid() % 100000}"
        self.switch_side = [f"{stem}s{i}" for i in range(count)]
        self.host_side = [f"{stem}h{i}" for i in range(count)]

    def create(self) -> "VethPairs":
        try:
            for sw, host in zip(self.switch_side, self.host_side):
                _ip("link", "add", sw, "type", "veth", "peer", "name", host)
                for iface in (sw, host):
                    # No IPv6 autoconfiguration chatter on the test ports.
                    with open(f"/proc/sys/net/ipv6/conf/{iface}/disable_ipv6", "w") as f:
                        f.write("1")
                    # Offloads off before simple_switch opens the port: libpcap sizes bmv2's receive ring for
                    # the largest frame the interface may deliver, 64 KiB (32 frames) with segmentation offloads.
                    subprocess.run(["ethtool", "--offload", iface, "rx", "off", "tx", "off", "sg", "off", "tso", "off",
                                    "gso", "off", "gro", "off"], check=True, capture_output=True)
                    _ip("link", "set", iface, "up")
        except (subprocess.CalledProcessError, OSError):
            self.delete()
            raise
        return self

    def delete(self) -> None:
        for sw in self.switch_side:
            subprocess.run(["ip", "link", "del", sw], capture_output=True)   # removes the peer too

    def __enter__(self) -> "VethPairs":
        return self.create()

    def __exit__(self, *exc) -> None:
        self.delete()


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


ETH_P_ALL = 0x0003     # every Ethernet protocol


def capture_socket(iface: str) -> socket.socket:
    """A raw socket that receives the frames of one interface only. It is opened for no protocol and given
    ETH_P_ALL by its bind: a socket opened for ETH_P_ALL captures every interface's frames, sent ones too,
    from its creation until its bind, and a test once read another port's frame for the switch's output."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    try:
        sock.bind((iface, ETH_P_ALL))      # Python converts the protocol to network order
    except OSError:
        sock.close()
        raise
    return sock

"""Only this machine reaches the control ports of the switches p4rcp starts.

simple_switch's Thrift server listens on every address and has no option to bind one, and whoever
reaches it can rewrite R, the routes and the counters without authentication. So while a switch runs,
a rule in an nftables table of p4rcp's own resets every TCP connection to its control ports that does
not arrive on the loopback interface: clients on this machine (127.0.0.1, or any of its own addresses,
which Linux routes through lo) get in; other hosts, Mininet's hosts and other network namespaces do not.
A table of its own leaves the machine's firewall alone, and a reject in any base chain is final
whatever other tables accept. (simple_switch_grpc's P4Runtime server binds 127.0.0.1 instead:
control_plane.simple_switch.SimpleSwitch.) docs/control_plane.md, "Who can reach the switch".

Each rule names its owner (process id and start time) and port. A guard removes its rules when it
closes; a run that was killed leaves them, and the next guard removes every rule whose owner has
exited, unless a process still listens on its port (a switch the killed run left behind stays guarded).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import psutil

TABLE = "p4rcp"              # family inet: IPv4 and IPv6
CHAIN = "control_ports"
_OWNER = re.compile(r"p4rcp control port (?P<port>\d+) owner (?P<pid>\d+) started (?P<started>[\d.]+)")


class GuardUnavailable(RuntimeError):
    """The filter cannot be installed (no nft, no permission): refuse to start an open switch."""


def _nft(*args: str, check: bool = True) -> str:
    nft = shutil.which("nft") or next((p for p in ("/usr/sbin/nft", "/sbin/nft") if os.path.exists(p)), None)
    if nft is None:
        raise GuardUnavailable("nft not found (Debian's nftables; 'make deps' installs it): it keeps the switch's "
                               "control ports to this machine. To run with them open to the network on purpose, "
                               "pass --expose-control-ports")
    done = subprocess.run([nft, *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise GuardUnavailable(f"nft {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def _owner_tag(port: int, pid: int) -> str:
    return f"p4rcp control port {port} owner {pid} started {psutil.Process(pid).create_time():.2f}"


def guard_rules() -> list[dict]:
    """The rules in p4rcp's chain: handle, port, owner pid and start time."""
    out = _nft("-j", "-a", "list", "chain", "inet", TABLE, CHAIN, check=False)
    if not out:
        return []
    rules = []
    for item in json.loads(out)["nftables"]:
        rule = item.get("rule")
        match = _OWNER.fullmatch(rule.get("comment", "")) if rule else None
        if match:
            rules.append({"handle": rule["handle"], "port": int(match["port"]), "pid": int(match["pid"]),
                          "started": float(match["started"])})
    return rules


def _alive(pid: int, started: float) -> bool:
    try:
        return abs(psutil.Process(pid).create_time() - started) < 0.01
    except psutil.Error:
        return False


def _listening(port: int) -> bool:
    return any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in psutil.net_connections("tcp"))


def remove_stale_rules() -> list[int]:
    """Rules of owners that exited, on ports nothing listens on: removed. Returns their ports."""
    removed = []
    for rule in guard_rules():
        if not _alive(rule["pid"], rule["started"]) and not _listening(rule["port"]):
            _nft("delete", "rule", "inet", TABLE, CHAIN, "handle", str(rule["handle"]))
            removed.append(rule["port"])
    return removed


class ControlPortGuard:
    """Resets TCP connections to `ports` that do not come in on lo, from open() to close()."""

    def __init__(self, ports: list[int]):
        self.ports = list(ports)
        self.pid = os.getpid()
        self._open = False

    def open(self) -> "ControlPortGuard":
        _nft("add", "table", "inet", TABLE)
        # Before the usual filter priority, so that the reset comes first; policy accept: p4rcp's chain
        # only ever rejects what it names.
        _nft("add", "chain", "inet", TABLE, CHAIN,
             "{ type filter hook input priority filter - 10; policy accept; }")
        remove_stale_rules()
        self._open = True
        try:
            for port in self.ports:
                _nft("add", "rule", "inet", TABLE, CHAIN, "tcp", "dport", str(port), "iifname", "!=", "lo",
                     "reject", "with", "tcp", "reset", "comment", f'"{_owner_tag(port, self.pid)}"')
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        if not self._open:
            return
        self._open = False
        for rule in guard_rules():
            if rule["pid"] == self.pid and rule["port"] in self.ports:
                _nft("delete", "rule", "inet", TABLE, CHAIN, "handle", str(rule["handle"]), check=False)

    def __enter__(self) -> "ControlPortGuard":
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()

"""Build and tear down a Mininet network from a p4rcp Topology.

Propagation delay and random loss on a host's access link come from a link
emulator box in the middle of that link: a Mininet node running
`p4rcp-linkem` between its two interfaces (user space, Ethernet frames
byte for byte). The kernels these experiments run on need not have netem.
"""

from __future__ import annotations

import json
import logging
import math
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import tomli_w

from mininet.net import Mininet
from mininet.node import Host
from mininet.topo import Topo

from control_plane.__main__ import arguments_for
from control_plane.bmv2_thrift import Bmv2ThriftDriver
from control_plane.loop import ControlLoop, program_switch
from control_plane.xcp_loop import XcpCellsDriver, XcpLoop
from p4rcp import dataplane as dp
from p4rcp.params import RcpParams
from p4rcp.processes import stop_processes
from p4rcp.protocol import XCP_HEADER_LEN
from p4rcp.toolchain import ROOT
from p4rcp.topology import ETHERNET_HEADER_BYTES, Topology
from topo import hosts
from topo.mininet.bmv2_switch import Bmv2Switch

log = logging.getLogger("topo")


class MininetTopo(Topo):
    """Mininet's view of a p4rcp Topology: hosts, bmv2 switches, TCLinks."""

    def build(self, topology: Topology, json_path: Path, options: "SwitchOptions"):
        for sw in topology.switches.values():
            self.addSwitch(sw.name, cls=Bmv2Switch, json_path=str(json_path), thrift_port=sw.thrift_port,
                           device_id=sw.thrift_port - 9090,
                           log_file=str(options.log_dir / f"{sw.name}.log") if options.log_dir else None,
                           pcap_dir=str(options.pcap_dir) if options.pcap_dir else None,
                           expose_control_ports=options.expose_control_ports)
        for host in topology.hosts.values():
            self.addHost(host.name, ip=f"{host.ip}/{HOSTS_PREFIX.split('/')[1]}", mac=host.mac)
        for link in topology.links:
            if link.a not in topology.hosts:
                self.addLink(link.a, link.b, port1=link.a_port, port2=link.b_port)
            elif link.delay_ms or link.loss_pct:
                box = emulator_name(link.a)
                self.addHost(box, ip=None)
                self.addLink(link.a, box)                      # box-eth0: the host's side
                self.addLink(box, link.b, port2=link.b_port)   # box-eth1: the switch's side
            else:
                self.addLink(link.a, link.b, port2=link.b_port)


HOSTS_PREFIX = "10.0.0.0/8"     # every host's address is in it (p4rcp/topology.py)
MIN_RING_FRAMES = 1000    # per switch interface: 100 ms of input at 10 kpps
ACCESS_QUEUE_FRAMES = 1000    # a NIC's transmit queue (Linux's default txqueuelen)


def check_receive_rings(pids) -> None:
    """Every packet socket of these simple_switch processes has a receive ring of MIN_RING_FRAMES or more
    (`ss` reports the rings of packet sockets); otherwise bmv2 would drop input on short stalls."""
    out = subprocess.run(["ss", "-0", "-e", "-p", "-n"], capture_output=True, text=True, check=True).stdout
    pids = {str(p) for p in pids}
    for entry in re.split(r"\n(?=\S)", out):
        owner = re.search(r"pid=(\d+)", entry)
        ring = re.search(r"ring_rx\(.*?frm_nr:(\d+)", entry, re.S)
        if owner and owner.group(1) in pids and ring and int(ring.group(1)) < MIN_RING_FRAMES:
            where = entry.split()[3]
            raise RuntimeError(f"simple_switch {owner.group(1)} reads {where} through a ring of {ring.group(1)} "
                               f"frames (< {MIN_RING_FRAMES}): were offloads on when it started?")


def switch_interface_names(topology: Topology) -> list[str]:
    """The root-namespace interfaces Mininet will create for these switches (Mininet's `<switch>-eth<port>`)."""
    return [f"{sw.name}-eth{port}" for sw in topology.switches.values() for port in sw.ports]


def remove_stale_interfaces(names: list[str]) -> None:
    """A run killed with SIGKILL leaves its switch-to-switch veth pairs behind (both ends live in the root
    namespace, which outlives the run), and Mininet then cannot create them. Remove those no running
    simple_switch uses; refuse, naming the process, if one does (another experiment is running)."""
    existing = [n for n in names if Path("/sys/class/net", n).exists()]
    if not existing:
        return
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"simple_switch"):
            used = [n for n in existing if any(arg.endswith(b"@" + n.encode()) for arg in argv)]
            if used:
                raise RuntimeError(f"interfaces {', '.join(used)} belong to simple_switch {proc.name}, "
                                   "still running: another experiment? Stop it first.")
    for name in existing:
        log.warning("removing %s, left behind by a run that was killed", name)
        subprocess.run(["ip", "link", "del", name], capture_output=True)


def emulator_name(host: str) -> str:
    return f"d{host}"


def no_offloads(intf: str, node=None) -> None:
    """Checksum offload off (bmv2 and the emulators would forward partial
    checksums), and no segmentation or coalescing (frames stay as sent)."""
    cmd = f"ethtool --offload {intf} rx off tx off sg off tso off gso off gro off"
    if node is None:
        subprocess.run(cmd.split(), capture_output=True)
    else:
        node.cmd(cmd + " >/dev/null 2>&1")


# Where each switch's control loop runs: a thread of the runner's process, or its own `python -m control_plane`
# process (the standalone controller, which a test can kill and start again mid-run).
CONTROL_PLANES = ("thread", "process")
# The routers' protocol: RCP's loop, or XCP's (an experiment's xcp scheme: XCP hosts over XCP routers, docs/xcp.md).
ROUTERS = ("rcp", "xcp")
CONTROLLER_READY_S = 30.0     # for a controller process to program its switch


class ControllerFailed(RuntimeError):
    pass


@dataclass(frozen=True)
class SwitchOptions:
    """How the network's simple_switch processes run, beyond the topology."""
    log_dir: Path | None = None            # simple_switch logs (a logging build only): <switch>.log here
    pcap_dir: Path | None = None           # bmv2's --pcap: one capture per switch port here
    expose_control_ports: bool = False     # Thrift reachable from other hosts (p4rcp.control_ports)


@dataclass
class Network:
    """A running network: Mininet, its bmv2 switches and their control loops."""
    topology: Topology
    json_path: Path
    out_dir: Path
    rcp_params: RcpParams | None = None   # the control loops'; None: the defaults, the topology's data frame
    switch_options: SwitchOptions = field(default_factory=SwitchOptions)
    net: Mininet | None = None
    loops: dict[str, ControlLoop | XcpLoop] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _logs: list = field(default_factory=list)
    emulators: list[subprocess.Popen] = field(default_factory=list)
    emulator_hosts: list[str] = field(default_factory=list)    # the host whose access link each emulates
    control_plane: str = "thread"      # CONTROL_PLANES
    controllers: dict[str, subprocess.Popen] = field(default_factory=dict)   # control_plane "process"
    router: str = "rcp"                # ROUTERS

    def __post_init__(self):
        if self.control_plane not in CONTROL_PLANES:
            raise ValueError(f"control plane must run as one of {', '.join(CONTROL_PLANES)}, got {self.control_plane!r}")
        if self.router not in ROUTERS:
            raise ValueError(f"the routers run one of {', '.join(ROUTERS)}, got {self.router!r}")

    def start(self) -> "Network":
        remove_stale_interfaces(switch_interface_names(self.topology))
        if self.switch_options.pcap_dir:
            self.switch_options.pcap_dir.mkdir(parents=True, exist_ok=True)
        topo = MininetTopo(self.topology, self.json_path, self.switch_options)
        self.net = Mininet(topo=topo, host=Host, controller=None, autoSetMacs=False, build=False)
        try:
            self.net.build()
            # Before simple_switch opens its interfaces: libpcap sizes bmv2's receive ring (2 MiB) by the
            # largest frame an interface can deliver. With segmentation offloads on that is 64 KiB, and the
            # ring holds 32 frames, about 8 ms of traffic; bmv2 then dropped input whenever its receive thread
            # waited that long for a CPU ("input overrun"). Offloads
            # off and the hosts' MTU give 1821 frames.
            for sw in self.net.switches:
                for intf in sw.intfList():
                    if intf.name != "lo":
                        no_offloads(intf.name)
                        subprocess.run(["ip", "link", "set", "dev", intf.name, "mtu", str(self._mtu)], check=True)
            self.net.start()
            check_receive_rings(self.switch_pids().values())
            for host in self.topology.hosts.values():
                self._prepare_host(self.net.get(host.name))
            for link in self.topology.links:
                if link.a in self.topology.hosts and (link.delay_ms or link.loss_pct):
                    self._start_emulator(link)
            for sw in self.topology.switches.values():
                if sw.rcp_ports:
                    self._start_control_plane(sw.name)
                else:
                    driver = Bmv2ThriftDriver(sw.thrift_port)
                    driver.connect()
                    program_switch(driver, sw, self.topology.routes(sw.name))
                    driver.close()
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def _mtu(self) -> int:
        """The data frame's IP packet; XCP hosts' carry the congestion header on top (unfragmented: a fragment is
        no XCP packet to the routers)."""
        return self.topology.data_frame_bytes - ETHERNET_HEADER_BYTES + (XCP_HEADER_LEN if self.router == "xcp" else 0)

    def _prepare_host(self, node) -> None:
        """No offloads, no IPv6 chatter, static ARP: every other host is reached
        through the switch port's MAC."""
        intf = node.defaultIntf().name
        no_offloads(intf, node)
        # The largest frame is the data frame of the UDP transport for every scheme: bmv2 shapes in
        # packets/s, so TCP's 1514-byte frames would get 40% more capacity than the others' 1078.
        node.cmd(f"ip link set dev {intf} mtu {self._mtu}")
        node.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
        me = self.topology.hosts[node.name]
        gateway_mac = self.topology.switches[me.switch].ports[me.port].mac
        for other in self.topology.hosts.values():
            if other.name != me.name:
                node.cmd(f"ip neigh replace {other.ip} lladdr {gateway_mac} dev {intf} nud permanent")
        if me.access_mbps is not None:
            self._shape_access_link(node, intf, me.access_mbps)

    def _shape_access_link(self, node, intf: str, rate_mbps: float) -> None:
        """The host's NIC: a token bucket at the access rate. Its queue (a NIC's 1000 frames) is longer than
        what one socket's send buffer holds, so a sender above the rate is slowed down by its socket, as by a
        real NIC; frames are lost at the host only when many sockets together fill the queue (counted in
        access_link_stats). The bucket holds 1 ms of tokens and never less than 2 frames."""
        frame = self.topology.data_frame_bytes
        burst = max(2 * frame, math.ceil(rate_mbps * 1e6 / 8 / 1000))
        cmd = (f"tc qdisc replace dev {intf} root tbf rate {rate_mbps * 1000:.0f}kbit burst {burst} "
               f"limit {ACCESS_QUEUE_FRAMES * frame}")
        out = node.cmd(f"{cmd} && echo ok").strip()
        if not out.endswith("ok"):
            raise RuntimeError(f"{node.name}: could not shape its access link ({cmd}): {out}")

    def access_link_stats(self) -> dict[str, dict]:
        """Per shaped sender: frames sent, dropped, and how often the token bucket held a frame back."""
        stats = {}
        for name, host in self.topology.hosts.items():
            if host.access_mbps is None:
                continue
            node = self.net.get(name)
            qdiscs = json.loads(node.cmd(f"tc -s -j qdisc show dev {node.defaultIntf().name}"))
            tbf = next(q for q in qdiscs if q["kind"] == "tbf")
            stats[name] = {"rate_mbps": host.access_mbps, "packets": tbf["packets"], "drops": tbf["drops"],
                           "overlimits": tbf["overlimits"]}
        return stats

    def _start_emulator(self, link) -> None:
        """Delay both ways, loss on the host's egress only."""
        box = self.net.get(emulator_name(link.a))
        box.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
        host_side, switch_side = (intf.name for intf in box.intfList())
        for intf in (host_side, switch_side):
            no_offloads(intf, box)
        self.emulators.append(box.popen(hosts.link_emulator(host_side, switch_side, link.delay_ms, link.loss_pct)))
        self.emulator_hosts.append(link.a)

    def _start_control_plane(self, switch_name: str) -> None:
        sw = self.topology.switch(switch_name)
        params = self.rcp_params
        if params is None:
            params = RcpParams(queue_packet_bytes=self.topology.data_frame_bytes)
        if self.control_plane == "process":
            self._start_controller_process(switch_name, params)
            return
        out = open(self.out_dir / f"control_{switch_name}.jsonl", "a", buffering=1)
        self._logs.append(out)
        if self.router == "xcp":
            driver = XcpCellsDriver(Bmv2ThriftDriver(sw.thrift_port), self.topology.data_frame_bytes)
            driver.connect()
            loop = XcpLoop(sw, self.topology.routes(switch_name), driver, clock=time.monotonic, wall_clock=time.time,
                           emit=lambda record: out.write(json.dumps(record) + "\n"))
        else:
            loop = ControlLoop(sw, self.topology.routes(switch_name), Bmv2ThriftDriver(sw.thrift_port), params,
                               emit=lambda record: out.write(json.dumps(record) + "\n"))
            loop.resync()
        thread = threading.Thread(target=loop.run, args=(self._stop,), name=f"cp-{switch_name}", daemon=True)
        thread.start()
        self.loops[switch_name], self._threads = loop, self._threads + [thread]

    def controller_command(self, switch_name: str, params: RcpParams) -> list[str]:
        """The standalone controller of a switch, as the runner starts it: this network's topology (written to
        the run's directory) and the run's RCP parameters; its records go to the same control log as a
        thread's would (appended: a controller started again adds to it)."""
        topology_file = self.out_dir / "topology.toml"
        if not topology_file.exists():
            topology_file.write_text(tomli_w.dumps(self.topology.source))
        return [sys.executable, "-m", "control_plane", "--topology", str(topology_file), "--switch", switch_name,
                "--log", str(self.out_dir / f"control_{switch_name}.jsonl"), "--router", self.router,
                *arguments_for(params)]

    def _start_controller_process(self, switch_name: str, params: RcpParams) -> None:
        """Start it and wait until it has programmed its switch (its log says "synchronised")."""
        stderr = self.out_dir / f"stderr_{switch_name}_control.log"
        with open(stderr, "ab") as f:
            proc = subprocess.Popen(self.controller_command(switch_name, params), stdout=subprocess.DEVNULL,
                                    stderr=f, cwd=ROOT)
        self.controllers[switch_name] = proc
        end = time.monotonic() + CONTROLLER_READY_S
        while "synchronised" not in stderr.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > end:
                lines = stderr.read_text(errors="replace").strip().splitlines()
                why = (f"exited with {proc.returncode}" if proc.poll() is not None
                       else f"did not program it within {CONTROLLER_READY_S:.0f} s")
                raise ControllerFailed(f"the control plane of {switch_name} {why}: "
                                       f"{lines[-1] if lines else '(it printed nothing)'}")
            time.sleep(0.05)

    def set_initcwnd(self, host_names: list[str], segments: int) -> None:
        """TCP's initial window on these hosts: their route to the other hosts (every host is in 10.0.0.0/8 on
        its one interface) gets initcwnd, and is read back, since the kernel would not say if it did not take."""
        for name in host_names:
            node, me = self.net.get(name), self.topology.hosts[name]
            route = f"{HOSTS_PREFIX} dev {node.defaultIntf().name} proto kernel scope link src {me.ip}"
            node.cmd(f"ip route replace {route} initcwnd {segments}")
            now = node.cmd(f"ip -4 route show {HOSTS_PREFIX}").strip()
            if f"initcwnd {segments}" not in now:
                raise RuntimeError(f"{name}: could not set initcwnd {segments} on its route: {now!r}")

    def bottleneck_counts(self) -> dict[str, tuple[int, int]]:
        """Per shaped link ("s1:2"): frames routed into its queue (the switch's rcp_input, less what policing
        dropped before the queue, rcp_policed) and frames the next switch received from it (its
        ingress_packets on that link). Once the queue has drained, their difference over a run is what the
        queue dropped."""
        drivers: dict[str, Bmv2ThriftDriver] = {}
        try:
            counts = {}
            for sw, port in self.topology.bottlenecks:
                here = self.topology.switch(sw)
                peer = self.topology.switch(here.ports[port].peer)
                peer_port = next(p.number for p in peer.ports.values() if p.peer == sw)
                for name in (sw, peer.name):
                    if name not in drivers:
                        drivers[name] = Bmv2ThriftDriver(self.topology.switch(name).thrift_port)
                        drivers[name].connect()
                into = (drivers[sw].read_counter(dp.COUNTER_INPUT, port).packets
                        - drivers[sw].read_counter(dp.COUNTER_POLICED, port).packets)
                counts[f"{sw}:{port}"] = (into, drivers[peer.name].read_ingress_packets(peer_port))
            return counts
        finally:
            for driver in drivers.values():
                driver.close()

    def host(self, name: str):
        return self.net.get(name)

    def switch_pids(self) -> dict[str, int]:
        return {sw.name: sw.bmv2.pid for sw in self.net.switches if sw.bmv2 is not None}

    def set_bottleneck(self, switch_name: str, port: int, rate_pps: int) -> None:
        """Change a shaped link's rate: bmv2's queue and the control plane's C together."""
        sw = self.topology.switch(switch_name)
        sp = sw.ports[port]
        sp.queue_rate_pps = rate_pps
        sp.capacity_bps = rate_pps * self.topology.data_frame_bytes * 8.0
        if switch_name not in self.loops:
            raise ControllerFailed(f"{switch_name}'s control plane runs as its own process, which takes no "
                                   "change of capacity: run bandwidth changes with the control plane in a thread")
        # Our own connection: the loop's Thrift client belongs to the loop's thread.
        driver = Bmv2ThriftDriver(sw.thrift_port)
        driver.connect()
        try:
            driver.set_queue(port, rate_pps, sp.queue_depth_pkts)
        finally:
            driver.close()
        self.loops[switch_name].set_capacity(port, sp.capacity_bps)

    def dead_switches(self) -> dict[str, int]:
        """The switches whose simple_switch has exited, with its exit status (negative: the signal)."""
        if self.net is None:
            return {}
        return {sw.name: sw.bmv2.process.returncode for sw in self.net.switches
                if sw.bmv2 is not None and sw.bmv2.process is not None and sw.bmv2.process.poll() is not None}

    def stop(self) -> None:
        stop_processes(self.emulators)
        stop_processes(self.controllers.values())
        self._stop.set()
        for thread in self._threads:
            thread.join(5)
        for loop in self.loops.values():
            loop.driver.close()
        for out in self._logs:
            out.close()
        if self.net is not None:
            self.net.stop()
            self.net = None


@dataclass
class InputCounts:
    """Per switch: frames the kernel delivered to its interfaces, and frames its pipeline counted. Their
    difference is what bmv2 has not read yet, or never will (its libpcap rings overflowed)."""
    network: Network
    _drivers: dict[str, Bmv2ThriftDriver] = field(default_factory=dict)

    def read(self) -> dict[str, tuple[int, int]]:
        counts = {}
        for sw in self.network.topology.switches.values():
            if sw.name not in self._drivers:
                self._drivers[sw.name] = Bmv2ThriftDriver(sw.thrift_port)
                self._drivers[sw.name].connect()
            kernel = sum(int(Path(f"/sys/class/net/{sw.name}-eth{port}/statistics/rx_packets").read_text())
                         for port in sw.ports)
            pipeline = sum(self._drivers[sw.name].read_ingress_packets(port) for port in sw.ports)
            counts[sw.name] = (kernel, pipeline)
        return counts

    def close(self) -> None:
        for driver in self._drivers.values():
            driver.close()

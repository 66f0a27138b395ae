"""A Mininet switch that is a bmv2 simple_switch running the p4rcp program."""

from __future__ import annotations

from mininet.node import Switch

from control_plane.simple_switch import SimpleSwitch


class Bmv2Switch(Switch):
    """simple_switch in the root namespace; Mininet port numbers are bmv2 port
    numbers. Thrift on ``thrift_port``, reachable from this machine only unless
    ``expose_control_ports`` (control_plane.simple_switch.SimpleSwitch); logging and pcap only
    when ``log_file`` / ``pcap_dir`` are given."""

    def __init__(self, name, json_path=None, thrift_port=None, device_id=0, log_file=None, pcap_dir=None,
                 expose_control_ports=False, **kw):
        Switch.__init__(self, name, **kw)
        self.json_path, self.thrift_port, self.device_id = json_path, thrift_port, device_id
        self.log_file, self.pcap_dir, self.expose_control_ports = log_file, pcap_dir, expose_control_ports
        self.bmv2: SimpleSwitch | None = None

    def start(self, controllers):
        interfaces = {self.ports[intf]: intf.name for intf in self.intfList() if intf.name != "lo"}
        self.bmv2 = SimpleSwitch(self.json_path, interfaces, self.thrift_port, device_id=self.device_id,
                                 log_file=self.log_file, pcap_dir=self.pcap_dir,
                                 expose_control_ports=self.expose_control_ports).start()

    def stop(self, deleteIntfs=True):
        if self.bmv2 is not None:
            self.bmv2.stop()
        Switch.stop(self, deleteIntfs)

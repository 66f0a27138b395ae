"""External schemes: another program's sender and receiver, measured by p4rcp (topo/mininet/external.py)."""

from __future__ import annotations

import json
import re

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import wrpcap

from topo.experiment import ExperimentError, Scheme, load_experiment
from topo.mininet import external

BASE = ('topology = "dumbbell"\nduration_s = 10\nschemes = ["ref"]\n[topology_params]\npairs = 1\n'
        'bottleneck_mbps = 10\n[[long]]\nsender = "h1"\nreceiver = "r1"\n')
IPERF = ('[scheme.ref]\nreceiver = "iperf -s -u -p {port}"\n'
         'sender = "iperf -c {receiver_ip} -u -p {port} -b 4M -t {duration_s}"\nport = 5201\n')


def write(tmp_path, text):
    path = tmp_path / "ext.toml"
    path.write_text(text)
    return path


def test_an_external_scheme_is_two_command_templates(tmp_path):
    exp = load_experiment(write(tmp_path, BASE + IPERF))
    scheme = exp.scheme("ref")
    assert scheme.is_external and scheme.port == 5201
    assert scheme.sender_command(sender_ip="10.0.0.1", receiver_ip="10.0.0.2", duration_s=10.0,
                                 flow_id=1000) == ["iperf", "-c", "10.0.0.2", "-u", "-p", "5201", "-b", "4M", "-t", "10"]
    assert scheme.receiver_command(receiver_ip="10.0.0.2") == ["iperf", "-s", "-u", "-p", "5201"]
    assert "external programs" in scheme.describe(exp.rcp_params(scheme))


@pytest.mark.parametrize("table,message", [
    ('[scheme.ref]\nreceiver = "srv {port}"\nsender = "cli {peer}"\n', "names {peer}; it may name {receiver_ip}"),
    ('[scheme.ref]\nreceiver = "srv"\nsender = "cli"\ncc = "rcp"\n', "takes no cc"),
    ('[scheme.ref]\nsender = "cli"\n', "missing key 'receiver'"),
    ('[scheme.ref]\nreceiver = "srv"\nsender = "cli"\nport = 70000\n', "port must be < 65536"),
    ('[scheme.ref]\ncc = "rcp"\nport = 5000\n', "port is for external schemes"),
])
def test_bad_external_schemes_are_explained(tmp_path, table, message):
    with pytest.raises(ExperimentError, match=re.escape(message)):
        load_experiment(write(tmp_path, BASE + table))


def test_external_schemes_run_long_flows_only(tmp_path):
    text = ('topology = "dumbbell"\nduration_s = 10\nschemes = ["ref"]\nload = 0.5\n[topology_params]\npairs = 1\n'
            'bottleneck_mbps = 10\n[[poisson]]\nsender = "h1"\nreceiver = "r1"\nsizes = "fixed:1000"\n')
    with pytest.raises(ExperimentError, match="run \\[\\[long\\]\\] flows only"):
        load_experiment(write(tmp_path, text + IPERF))


def frame(t, layer4, payload):
    pkt = Ether() / IP(src="10.0.0.1", dst="10.0.0.3") / layer4 / Raw(b"x" * payload)
    pkt.time = t
    return pkt


def test_delivered_payload_counts_udp_as_it_arrives_and_tcp_segments_once(tmp_path):
    udp = [frame(100.0 + i * 0.01, UDP(sport=1, dport=9000), 1000) for i in range(5)]
    tcp = [frame(200.0, TCP(sport=1, dport=9000, seq=1000), 500),
           frame(200.01, TCP(sport=1, dport=9000, seq=1500), 500),
           frame(200.02, TCP(sport=1, dport=9000, seq=1000), 500),       # a retransmission: nothing new
           frame(200.03, TCP(sport=1, dport=9000, seq=1800, flags="A"), 600)]   # overlaps: 400 new
    wrpcap(str(tmp_path / "udp.pcap"), udp)
    wrpcap(str(tmp_path / "tcp.pcap"), tcp)
    assert [n for _, n in external.delivered(tmp_path / "udp.pcap")] == [1000] * 5
    assert [n for _, n in external.delivered(tmp_path / "tcp.pcap")] == [500, 500, 0, 400]
    assert external.delivered(tmp_path / "absent.pcap") == []


def test_an_external_flow_gets_the_record_and_samples_of_p4rcps_own(tmp_path):
    wrpcap(str(tmp_path / "c.pcap"), [frame(100.0 + i * 0.008, UDP(sport=1, dport=9000), 1000) for i in range(250)])
    scheme = Scheme("ref", "external", sender="cli", receiver="srv", port=9000)
    flows, trace = tmp_path / "flows_h1.jsonl", tmp_path / "trace_h1.jsonl"
    record = external.write_records(tmp_path / "c.pcap", flow_id=1000, scheme=scheme, start_unix_s=99.9,
                                    sender_failed=None, flows=flows, trace=trace, receiver_ip="10.0.0.3")
    assert record == json.loads(flows.read_text())
    assert record["completed"] and record["size_bytes"] == 250_000
    assert record["fct_s"] == pytest.approx(0.1 + 249 * 0.008)
    samples = [json.loads(line) for line in trace.read_text().splitlines()]
    steady = [s["goodput_kbps"] for s in samples if 0.2 < s["t_s"] < 1.9]
    assert sum(steady) / len(steady) == pytest.approx(1000 * 8 / 0.008 / 1000, rel=0.05)   # 1 Mb/s
    failed = external.write_records(tmp_path / "none.pcap", flow_id=1001, scheme=scheme, start_unix_s=99.9,
                                    sender_failed="exited with status 1: boom", flows=flows, trace=trace,
                                    receiver_ip="10.0.0.3")
    assert not failed["completed"] and failed["error"] == "exited with status 1: boom"

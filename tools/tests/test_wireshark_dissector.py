"""The Wireshark dissector (tools/wireshark/rcp.lua) decodes every field as the Scapy layer does.

tshark (Debian's package, 'make deps') runs the dissector over captures: one written here with every
packet type, and one that bmv2 made of the PTF suite's stamping tests, packets the switch rewrote.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import rdpcap, wrpcap

from p4rcp.protocol import ACK, DATA, FIN, FINACK, RCP, REF, REFACK, SYN, SYNACK, TYPE_NAMES, WIRE
from p4rcp.testing import require_toolchain
from p4rcp.toolchain import ROOT

DISSECTOR = ROOT / "tools" / "wireshark" / "rcp.lua"
RCP_FIELDS = ["version", "type", "flags", "size", "rate_kbps", "rtt_us", "feedback_kbps"]
HOST_FIELDS = ["flow_id", "pkt_seq", "ts_us", "total_size", "mss", "cc", "window", "offset", "payload_len",
               "cum_ack", "sack_count", "sack_start", "sack_end", "final_size", "status"]


def require_tshark() -> str:
    path = shutil.which("tshark")
    if path is None:
        pytest.skip("SKIPPED: needs tshark (Debian's tshark package; 'make deps' installs it)")
    return path


def decode(pcap: Path) -> list[dict]:
    """Every RCP packet of the capture as tshark and the dissector see it: field name -> list of values."""
    fields = [f"rcp.{f}" for f in RCP_FIELDS] + [f"p4rcp_host.{f}" for f in HOST_FIELDS]
    cmd = [require_tshark(), "-X", f"lua_script:{DISSECTOR}", "-r", str(pcap), "-Y", "rcp", "-T", "fields",
           "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=,"]
    for field in fields:
        cmd += ["-e", field]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        values = line.split("\t")
        rows.append({name.split(".", 1)[1]: [int(v, 0) for v in value.split(",")] if value else []
                     for name, value in zip(fields, values)})
    return rows


def common(flow_id, seq, ts) -> bytes:
    return struct.pack(">III", flow_id, seq, ts)


def packet(rcp: RCP, body: bytes):
    return Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=40001, dport=6577) / rcp / Raw(body)


EXAMPLES = [  # (RCP header, host bytes, the host fields they carry)
    (RCP(type=SYN, rate_kbps=1_000_000), common(7, 0, 11) + struct.pack(">QHBB", 200_000, 1000, 1, 0),
     {"flow_id": 7, "pkt_seq": 0, "ts_us": 11, "total_size": 200_000, "mss": 1000, "cc": 1}),
    (RCP(type=SYNACK, feedback_kbps=6000), common(7, 0, 11) + struct.pack(">I", 16 << 20),
     {"window": 16 << 20}),
    (RCP(type=DATA, rate_kbps=6000, rtt_us=40_123), common(7, 3, 12) + struct.pack(">Q", 2000) + b"p" * 1000,
     {"offset": 2000, "payload_len": 1000}),
    (RCP(type=ACK, feedback_kbps=5500), common(7, 3, 12) + struct.pack(">QIB3x", 1000, 4096, 2)
     + struct.pack(">QQ", 2000, 3000) + struct.pack(">QQ", 5000, 9000),
     {"cum_ack": 1000, "window": 4096, "sack_count": 2, "sack_start": [2000, 5000], "sack_end": [3000, 9000]}),
    (RCP(type=FIN, rate_kbps=6000, rtt_us=40_000), common(7, 1, 13) + struct.pack(">Q", 200_000),
     {"final_size": 200_000}),
    (RCP(type=FINACK, flags=0, size=0), common(7, 1, 13) + struct.pack(">QB3x", 200_000, 1),
     {"cum_ack": 200_000, "status": 1}),
    # REF and REFACK: the common bytes only (docs/protocol.md); nothing else is decoded as host fields
    (RCP(type=REF, rate_kbps=6000, rtt_us=40_000), common(7, 0, 14),
     {"flow_id": 7, "pkt_seq": 0, "ts_us": 14, "offset": [], "cum_ack": [], "window": []}),
    (RCP(type=REFACK, feedback_kbps=5500), common(7, 0, 14),
     {"flow_id": 7, "pkt_seq": 0, "ts_us": 14, "offset": [], "cum_ack": [], "window": []}),
]


def test_the_dissectors_constants_are_the_hosts_wire_definition():
    """Every constant the dissector names (a local NAME, the P4RCP_NAME macro of hosts/include/p4rcp_wire.h),
    its type names and its scheme codes are the Rust hosts' (hosts/src/transport/wire.rs)."""
    lua = DISSECTOR.read_text()
    constants = {name: int(value, 0) for name, value in re.findall(r"^local (\w+) = (0x[0-9A-Fa-f]+|\d+)$", lua,
                                                                    re.MULTILINE)}
    assert len(constants) >= 20
    assert {name: WIRE.get(name) for name in constants} == constants
    types = dict(re.findall(r'\[(\d+)\] = "([A-Z]+)"', re.search(r"local types = \{(.*?)\}", lua, re.S).group(1)))
    assert {int(code): name for code, name in types.items()} == {WIRE[f"TYPE_{n}"]: n for n in TYPE_NAMES}
    schemes = dict(re.findall(r'\[(\d+)\] = "([a-z0-9-]+)"', re.search(r"local schemes = \{(.*?)\}", lua, re.S).group(1)))
    from_header = {code: name.removeprefix("SCHEME_").lower().replace("_", "-")
                   for name, code in WIRE.items() if name.startswith("SCHEME_")}
    assert {int(code): name for code, name in schemes.items()} == from_header


def test_every_packet_type_is_decoded_field_by_field(tmp_path):
    require_tshark()
    pcap = tmp_path / "types.pcap"
    wrpcap(str(pcap), [packet(rcp, body) for rcp, body, _ in EXAMPLES])
    decoded = decode(pcap)
    assert len(decoded) == len(EXAMPLES)
    for row, (rcp, _, host) in zip(decoded, EXAMPLES):
        for field in RCP_FIELDS:
            assert row[field] == [getattr(rcp, field)], (field, row)
        for field, value in host.items():
            assert row[field] == (value if isinstance(value, list) else [value]), (field, row)


def test_every_type_has_its_name_in_the_info_column(tmp_path):
    require_tshark()
    pcap = tmp_path / "names.pcap"
    wrpcap(str(pcap), [packet(RCP(type=t), common(1, 2, 3) + bytes(40)) for t in range(8)])
    out = subprocess.run([require_tshark(), "-X", f"lua_script:{DISSECTOR}", "-r", str(pcap), "-Y", "rcp", "-T", "fields",
                          "-e", "_ws.col.Info"], capture_output=True, text=True, check=True).stdout.split("\n")
    names = [line.split()[1] for line in out if line]
    assert names == ["DATA", "ACK", "SYN", "SYNACK", "FIN", "FINACK", "REF", "REFACK"]


def test_a_capture_of_the_ptf_suite_decodes_as_scapy_reads_it(tmp_path):
    """bmv2 captures the PTF stamping tests' packets on every port, the stamped ones included; each RCP
    packet's header, as the dissector decodes it, equals the Scapy layer's reading of the same bytes."""
    require_toolchain("simple_switch")
    require_tshark()
    pcaps = tmp_path / "pcap"
    done = subprocess.run([sys.executable, "-m", "ptf_tests.run", "--pcap", str(pcaps), "stamping", "policing"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    compared = stamped = 0
    for pcap in sorted(p for p in pcaps.glob("*.pcap") if p.stat().st_size > 0):   # ports nothing crossed: empty
        scapy_rcp = [p[RCP] for p in rdpcap(str(pcap)) if RCP in p and len(p[RCP]) >= 16]
        decoded = decode(pcap)
        assert len(decoded) == len(scapy_rcp), pcap.name
        for row, layer in zip(decoded, scapy_rcp):
            assert {f: row[f] for f in RCP_FIELDS} == {f: [getattr(layer, f)] for f in RCP_FIELDS}, pcap.name
            compared += 1
            stamped += pcap.name.endswith("_out.pcap")
    assert compared > 0 and stamped > 0, "the capture holds RCP packets on the way in and out"


def test_the_xcp_header_is_decoded_and_the_host_header_found_behind_it(tmp_path):
    from p4rcp.protocol import FLAG_XCP, XCP
    tshark = require_tshark()
    pcap = tmp_path / "xcp.pcap"
    host = common(7, 3, 12) + struct.pack(">Q", 2000) + b"p" * 100
    wrpcap(str(pcap), [packet(RCP(type=DATA, flags=FLAG_XCP, rtt_us=80_000),
                              bytes(XCP(cwnd_bytes=15_000, x_ns=8_000_000, feedback=-1500)) + host)])
    out = subprocess.run([tshark, "-X", f"lua_script:{DISSECTOR}", "-r", str(pcap), "-Y", "xcp", "-T", "fields",
                          "-E", "separator=\t", "-e", "xcp.cwnd", "-e", "xcp.x_ns", "-e", "xcp.feedback",
                          "-e", "p4rcp_host.flow_id", "-e", "p4rcp_host.offset", "-e", "p4rcp_host.payload_len"],
                         capture_output=True, text=True, check=True).stdout
    assert out.split() == ["15000", "8000000", "-1500", "7", "2000", "100"]

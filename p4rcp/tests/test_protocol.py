from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4rcp.protocol import ACK, RCP, RCP_HEADER_LEN, RCP_UDP_PORT, SYN


def test_header_is_16_bytes_in_network_order():
    raw = bytes(RCP(type=SYN, flags=0, rate_kbps=0x01020304, rtt_us=0x0A0B0C0D, feedback_kbps=7))
    assert len(raw) == RCP_HEADER_LEN
    assert raw == bytes.fromhex("12 00 0000 01020304 0a0b0c0d 00000007")


def test_bound_to_port_6577_both_ways():
    for sport, dport in ((40000, RCP_UDP_PORT), (RCP_UDP_PORT, 40000)):
        frame = bytes(Ether() / IP() / UDP(sport=sport, dport=dport) / RCP(type=ACK, feedback_kbps=5) / b"tail")
        pkt = Ether(frame)
        assert pkt.haslayer(RCP)
        assert pkt[RCP].type == ACK and pkt[RCP].feedback_kbps == 5
        assert bytes(pkt[RCP].payload) == b"tail"


def test_other_ports_are_not_rcp():
    pkt = Ether(bytes(Ether() / IP() / UDP(sport=1, dport=2) / bytes(RCP())))
    assert not pkt.haslayer(RCP)


def test_ref_and_refack_are_types_6_and_7_and_ref_is_a_forward_type():
    from p4rcp.protocol import FORWARD_TYPES, REF, REFACK
    assert bytes(RCP(type=REF, rate_kbps=1, rtt_us=2))[:1] == b"\x16"
    assert bytes(RCP(type=REFACK, feedback_kbps=3))[:1] == b"\x17"
    assert RCP(bytes(RCP(type=REF))).sprintf("%type%") == "REF"
    assert RCP(bytes(RCP(type=REFACK))).sprintf("%type%") == "REFACK"
    assert REF in FORWARD_TYPES and REFACK not in FORWARD_TYPES


def test_the_constants_are_the_hosts_wire_definition():
    """protocol.py reads hosts/include/p4rcp_wire.h (generated from hosts/src/transport/wire.rs, which cargo
    test holds it to): every name it exports is the macro's value."""
    from p4rcp import protocol
    assert protocol.WIRE == protocol.read_wire_header()
    assert (protocol.RCP_UDP_PORT, protocol.RCP_VERSION, protocol.RCP_HEADER_LEN) == (6577, 1, 16)
    assert protocol.RCP_MAX_RTT_US == 2**protocol.RCP_RTT_BITS - 1 == 8_388_607
    assert [protocol.RCP_TYPES[t] for t in protocol.FORWARD_TYPES] == ["DATA", "SYN", "REF"]


def test_the_p4_programs_constants_and_header_layout_are_the_hosts():
    """p4src/shared/defines.p4's RCP constants (RCP_NAME: the header's P4RCP_NAME; RCP_HEADER_BYTES: its
    HEADER_LEN) and the layout of headers.p4's rcp_h are the Rust hosts' wire definition. RCP_RATE_NONE is the
    routers' own (a stamp that caps nothing) and is checked against the control plane's."""
    import re

    from p4rcp import dataplane as dp
    from p4rcp.protocol import WIRE
    from p4rcp.toolchain import ROOT
    defines = (ROOT / "p4src" / "shared" / "defines.p4").read_text()
    constants = dict(re.findall(r"^const (?:bit<\d+>|\w+_t)\s+RCP_(\w+)\s*=\s*(0x[0-9A-Fa-f]+|\d+);", defines, re.MULTILINE))
    constants.update(re.findall(r"^#define RCP_(\w+) (\d+)$", defines, re.MULTILINE))
    assert int(constants.pop("RATE_NONE"), 16) == dp.RATE_NONE == 2**32 - 1
    p4 = {("HEADER_LEN" if name == "HEADER_BYTES" else name): int(value, 0) for name, value in constants.items()}
    assert len(p4) >= 12
    assert {name: WIRE.get(name) for name in p4} == p4
    assert re.search(r"RCP_MAX_RTT_US = \(1 << RCP_RTT_BITS\) - 1;", defines)
    # rcp_h: each field's byte offset, from the widths of its fields (typedefs of defines.p4 resolved)
    widths = {name: int(bits) for bits, name in re.findall(r"typedef bit<(\d+)>\s+(\w+);", defines)}
    headers = (ROOT / "p4src" / "shared" / "headers.p4").read_text()
    body = re.search(r"header rcp_h \{(.*?)\}", headers, re.S).group(1)
    offsets, bit = {}, 0
    for kind, name in re.findall(r"^\s*(bit<\d+>|\w+)\s+(\w+);", body, re.MULTILINE):
        offsets[name] = bit // 8
        bit += int(kind[4:-1]) if kind.startswith("bit<") else widths[kind]
    assert bit == 8 * WIRE["HEADER_LEN"]
    assert offsets == {"version": 0, "type": 0, "flags": WIRE["FLAGS_OFFSET"], "size": WIRE["SIZE_OFFSET"],
                       "rate_kbps": WIRE["RATE_OFFSET"], "rtt_us": WIRE["RTT_OFFSET"],
                       "feedback_kbps": WIRE["FEEDBACK_OFFSET"]}


def test_the_p4_xcp_header_and_fixed_point_are_the_hosts_and_the_control_planes():
    """headers.p4's xcp_h and defines.p4's XCP constants are the hosts' wire definition (RCP_FLAG_XCP is held by
    the test above); XCP_XI_SHIFT is p4rcp/dataplane.py's."""
    import re

    from p4rcp import dataplane as dp
    from p4rcp.protocol import WIRE
    from p4rcp.toolchain import ROOT
    defines = (ROOT / "p4src" / "shared" / "defines.p4").read_text()
    assert int(re.search(r"XCP_HEADER_BYTES = (\d+);", defines).group(1)) == WIRE["XCP_HEADER_LEN"]
    assert int(re.search(r"^#define XCP_XI_SHIFT (\d+)$", defines, re.M).group(1)) == dp.XCP_XI_SHIFT
    headers = (ROOT / "p4src" / "shared" / "headers.p4").read_text()
    body = re.search(r"header xcp_h \{(.*?)\}", headers, re.S).group(1)
    offsets, bit = {}, 8 * WIRE["HEADER_LEN"]
    for width, name in re.findall(r"^\s*(?:bit|int)<(\d+)>\s+(\w+);", body, re.MULTILINE):
        offsets[name] = bit // 8
        bit += int(width)
    assert bit == 8 * (WIRE["HEADER_LEN"] + WIRE["XCP_HEADER_LEN"])
    assert offsets == {"cwnd_bytes": WIRE["XCP_CWND_OFFSET"], "x_ns": WIRE["XCP_X_OFFSET"],
                       "feedback": WIRE["XCP_FEEDBACK_OFFSET"]}
    assert re.search(r"int<32>\s+feedback;", body)


def test_the_xcp_header_follows_a_flagged_rcp_header():
    from p4rcp.protocol import DATA, FLAG_XCP, XCP, XCP_HEADER_LEN, WIRE
    assert (FLAG_XCP, XCP_HEADER_LEN) == (0x80, 12)
    assert (WIRE["XCP_CWND_OFFSET"], WIRE["XCP_X_OFFSET"], WIRE["XCP_FEEDBACK_OFFSET"]) == (16, 20, 24)
    raw = bytes(XCP(cwnd_bytes=0x01020304, x_ns=10_000_000, feedback=-2))
    assert raw == bytes.fromhex("01020304 00989680 fffffffe")
    host = b"\x00\x00\x00\x07" + bytes(8)
    frame = bytes(Ether() / IP() / UDP(sport=40000, dport=RCP_UDP_PORT)
                  / RCP(type=DATA, flags=FLAG_XCP | 1, rtt_us=80_000) / XCP(cwnd_bytes=15_000, feedback=-1500) / host)
    pkt = Ether(frame)
    assert pkt[XCP].feedback == -1500 and pkt[XCP].cwnd_bytes == 15_000
    assert bytes(pkt[XCP].payload) == host
    # without the flag the same bytes are the hosts' header
    plain = Ether(bytes(Ether() / IP() / UDP(sport=40000, dport=RCP_UDP_PORT) / RCP(type=DATA) / host))
    assert not plain.haslayer(XCP)

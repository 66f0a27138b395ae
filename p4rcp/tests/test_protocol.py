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


def test_the_rtt_bound_and_the_stamp_that_caps_nothing_are_the_p4_programs():
    import re

    from p4rcp import dataplane as dp
    from p4rcp.protocol import RCP_MAX_RTT_US, RCP_RTT_BITS
    from p4rcp.toolchain import ROOT
    defines = (ROOT / "p4src" / "shared" / "defines.p4").read_text()
    assert int(re.search(r"#define RCP_RTT_BITS (\d+)", defines).group(1)) == RCP_RTT_BITS
    assert RCP_MAX_RTT_US == 2**RCP_RTT_BITS - 1 == 8_388_607
    wire = (ROOT / "hosts" / "src" / "transport" / "wire.rs").read_text()         # what the senders clamp to
    assert int(re.search(r"RCP_MAX_RTT_US: u32 = \(1 << (\d+)\) - 1;", wire).group(1)) == RCP_RTT_BITS
    ns3 = (ROOT / "topo" / "ns3" / "model" / "rcp-header.h").read_text()        # the ns-3 engine's routers
    assert int(re.search(r"RCP_MAX_RTT_US = \(1u << (\d+)\) - 1;", ns3).group(1)) == RCP_RTT_BITS
    assert int(re.search(r"RCP_RATE_NONE = (0x[0-9A-Fa-f]+);", defines).group(1), 16) == dp.RATE_NONE == 2**32 - 1

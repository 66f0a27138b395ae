"""The Python router of docs/protocol.md (p4rcp/router_model.py) on hand-made frames, against Scapy's own
computation of what the router must send (the PTF suite holds bmv2 to the same cases)."""

import random

import pytest
from scapy.layers.inet import IP, TCP, UDP, IPOption_RR
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw

from p4rcp import dataplane as dp
from p4rcp.protocol import ACK, DATA, FLAG_ENDING, RCP, REF, SYN
from p4rcp.router_model import RouterModel, udp_checksum_after_stamp
from p4rcp.topology import Route

ROUTES = [Route(f"10.0.{p}.0/24", p, f"00:aa:00:00:00:0{p}", f"00:00:00:00:00:0{p}") for p in range(4)]


def model(**kw):
    return RouterModel(ROUTES, **kw)


def rcp(type_=DATA, rate=8000, rtt=30000, flags=0, dscp=0, dst="10.0.2.2", chksum=None, payload=b"x" * 20,
        ip_flags=0, size=0, **ip):
    pkt = (Ether(src="00:00:00:00:00:00", dst="00:aa:00:00:00:00")
           / IP(src="10.0.0.2", dst=dst, tos=dscp << 2, flags=ip_flags, **ip)
           / UDP(sport=40000, dport=6577, chksum=chksum) / RCP(type=type_, flags=flags, size=size, rate_kbps=rate,
                                                                   rtt_us=rtt)
           / Raw(payload))
    return bytes(pkt)


def routed(frame: bytes, port: int, **rcp_fields) -> bytes:
    """Scapy's frame after the router: next-hop MACs, TTL - 1, checksums computed afresh."""
    pkt = Ether(frame)
    pkt[Ether].src, pkt[Ether].dst = f"00:aa:00:00:00:0{port}", f"00:00:00:00:00:0{port}"
    pkt[IP].ttl -= 1
    pkt[IP].chksum = None
    if rcp_fields:
        for name, value in rcp_fields.items():
            setattr(pkt[RCP], name, value)
        if pkt[UDP].chksum != 0:
            pkt[UDP].chksum = None
    return bytes(pkt)


def test_a_forward_packet_above_the_stamp_leaves_stamped_with_a_checksum_scapy_agrees_with():
    m = model(stamps={dp.rate_cell(2): 5000}, classes={(2, 0): dp.rate_cell(2)})
    for type_ in (DATA, SYN, REF):
        frame = rcp(type_)
        out = m.process(frame)
        assert (out.port, out.frame) == (2, routed(frame, 2, rate_kbps=5000))
    c = m.counts[2]
    assert (c.input_packets, c.input_bytes, c.rtt_sum_us, c.rtt_count) == (3, 3 * len(rcp()), 90000, 3)


def test_rates_at_or_below_the_stamp_other_types_and_unclassified_ports_pass_unchanged():
    m = model(stamps={dp.rate_cell(2): 5000}, classes={(2, 0): dp.rate_cell(2)})
    for frame, port in ((rcp(rate=5000), 2), (rcp(rate=0), 2), (rcp(ACK, rate=9000), 2), (rcp(dst="10.0.3.2"), 3)):
        assert m.process(frame).frame == routed(frame, port)


def test_weight_classes_pick_the_cell_by_dscp():
    m = model(stamps={dp.rate_cell(2, 0): 5000, dp.rate_cell(2, 1): 1250},
              classes={(2, 0): dp.rate_cell(2, 0), (2, 10): dp.rate_cell(2, 1)})
    assert m.process(rcp(dscp=10)).frame == routed(rcp(dscp=10), 2, rate_kbps=1250)
    assert m.process(rcp(dscp=11)).frame == routed(rcp(dscp=11), 2), "no class: the unclassified cell"


GRANTS = dp.SynGrants(10, (4000, 3000, 2000, 1000, 900, 800, 700, 600), 450, 100, 50)


def test_the_kth_long_syn_of_an_interval_is_capped_by_its_stamp_and_later_ones_by_the_last():
    m = model(stamps={dp.rate_cell(2): 5000}, classes={(2, 0): dp.rate_cell(2)}, syn_grants={2: GRANTS})
    m.port(2).long_arrivals = 10
    got = [m.process(rcp(SYN, size=51)).frame for _ in range(10)]
    want = [4000, 3000, 2000, 1000, 900, 800, 700, 600, 600, 600]
    assert got == [routed(rcp(SYN, size=51), 2, rate_kbps=r) for r in want]
    assert (m.counts[2].long_arrivals, m.counts[2].committed_arrivals) == (20, 510)


def test_a_short_syn_takes_the_short_stamp_and_every_size_counts_up_to_p():
    m = model(stamps={dp.rate_cell(2): 5000}, classes={(2, 0): dp.rate_cell(2)}, syn_grants={2: GRANTS})
    assert m.process(rcp(SYN, size=50)).frame == routed(rcp(SYN, size=50), 2, rate_kbps=450)
    m.process(rcp(SYN, size=5000))
    assert (m.counts[2].long_arrivals, m.counts[2].committed_arrivals) == (1, 150)


def test_ending_data_counts_its_size_and_rtts_outside_the_bound_are_no_sample():
    m = model(syn_grants={2: GRANTS})
    m.process(rcp(flags=FLAG_ENDING, rtt=0, size=30))
    m.process(rcp(flags=FLAG_ENDING, rtt=0, size=300))
    m.process(rcp(rtt=2**23, size=7))
    m.process(rcp(rtt=2**23 - 1))
    c = m.counts[2]
    assert (c.committed_departures, c.rtt_count, c.rtt_sum_us) == (130, 1, 2**23 - 1)


@pytest.mark.parametrize("frame", [
    bytes(Ether() / ARP()),                                             # not IPv4
    rcp()[:14 + 10], rcp()[:14 + 20 + 4], rcp()[:14 + 20 + 8 + 8],       # runts: inside IPv4, UDP, RCP
    rcp()[:14 + 20 + 8],                                                # the RCP header's first byte missing
    bytes(Ether() / IP(dst="10.0.2.2", options=[IPOption_RR()]) / UDP()),
    rcp(ttl=1), rcp(ttl=0), rcp(dst="192.168.0.1"),
    bytes(Ether() / IP(dst="10.0.2.2", proto=6) / Raw(b"x" * 19)),       # a TCP header cut short
])
def test_dropped(frame):
    m = model()
    assert m.process(frame) is None
    assert m.counts == {} and m.ingress_packets == {0: 1}


def test_a_bad_ipv4_checksum_is_dropped():
    frame = bytearray(rcp())
    frame[24] ^= 0x01
    assert model().process(bytes(frame)) is None


def test_what_the_router_does_not_read_is_routed_unchanged():
    """A fragment, a datagram too short for the RCP header (padding behind it), another version, an ACK whose
    frame ends after its first byte, TCP: only L2, the TTL and the IPv4 checksum change."""
    m = model(stamps={dp.rate_cell(2): 1000}, classes={(2, 0): dp.rate_cell(2)})
    short = bytes(Ether() / IP(dst="10.0.2.2") / UDP(sport=1, dport=6577) / Raw(b"\x10" + b"\xff" * 9)) + b"\x10" * 30
    wrong_version = bytearray(rcp(rate=9000))
    wrong_version[42] = 0x20
    for frame in (rcp(frag=100), rcp(ip_flags="MF"), short, bytes(wrong_version), rcp(ACK)[:14 + 20 + 8 + 1],
                  bytes(Ether() / IP(dst="10.0.2.2") / TCP() / Raw(b"\x10" * 30))):
        out = m.process(frame)
        assert out is not None and out.port == 2
        assert out.frame == routed(frame, 2) if len(frame) >= 14 + 20 + 8 + 16 else out.frame[12:22] == frame[12:22]
        assert out.frame[26:] == frame[26:]


def test_the_incremental_checksum_is_rfc1624_and_matches_a_full_recomputation():
    rng = random.Random(1)
    for _ in range(2000):
        rate = rng.randrange(1, 1 << 32)
        stamp = rng.randrange(0, rate)
        frame = rcp(rate=rate, payload=rng.randbytes(rng.randrange(0, 40)))
        pkt = Ether(frame)
        new = udp_checksum_after_stamp(pkt[UDP].chksum, rate, stamp)
        pkt[RCP].rate_kbps, pkt[UDP].chksum = stamp, None
        assert new == Ether(bytes(pkt))[UDP].chksum
    assert udp_checksum_after_stamp(0, 9000, 5000) == 0, "no checksum stays none"


def test_policing_is_not_modelled():
    with pytest.raises(ValueError, match="policing"):
        model(police={dp.rate_cell(2): (1000, 3000)})


def xcp_frame(rtt=20_000, x=200_000, feedback=10**6, flags=None, payload=b"x" * 100, chksum=None):
    from p4rcp.protocol import FLAG_XCP, XCP
    pkt = (Ether(src="00:00:00:00:00:00", dst="00:aa:00:00:00:00") / IP(src="10.0.0.2", dst="10.0.2.2")
           / UDP(sport=40000, dport=6577, chksum=chksum) / RCP(type=DATA, flags=FLAG_XCP if flags is None else flags,
                                                              rate_kbps=8000, rtt_us=rtt)
           / XCP(cwnd_bytes=15_000, x_ns=x, feedback=feedback) / Raw(payload))
    return bytes(pkt)


def test_an_xcp_packet_is_counted_and_its_feedback_lowered_to_the_routers_with_scapys_checksum():
    from p4rcp.protocol import XCP
    control = dp.XcpControl.of(3e8, 500.0, dp.XCP_LEFT_MAX, dp.XCP_LEFT_MAX)
    m = model(xcp={2: control})
    frame = xcp_frame()
    p, n = dp.xcp_router_feedback(control.xi_p, control.xi_n, 20_000, 200_000, len(frame))
    ours = p - n
    assert ours < 0
    out = m.process(frame)
    want = Ether(routed(frame, 2))
    want[XCP].feedback, want[UDP].chksum = ours, None
    assert out.frame == bytes(want)
    c = m.port(2)
    assert (c.xcp_sum_x, c.xcp_sum_rtt_x, c.xcp_sum_s) == (200_000, 20_000 * 200_000, len(frame))
    # a request below the router's passes, counted; without an RTT or x, or without the flag, nothing of XCP
    for frame in (xcp_frame(feedback=ours - 1), xcp_frame(rtt=0), xcp_frame(x=0), xcp_frame(flags=0)):
        assert m.process(frame).frame == routed(frame, 2)
    assert m.port(2).xcp_sum_x == 400_000


def test_xcp_feedback_stops_at_what_is_left_of_the_intervals_totals():
    from p4rcp.protocol import XCP
    control = dp.XcpControl.of(3e8, 0.0, 2000, 0)
    m = model(xcp={2: control})
    p, _ = dp.xcp_router_feedback(control.xi_p, control.xi_n, 20_000, 200_000, len(xcp_frame()))
    assert 1000 < p < 2000
    feedback = [Ether(m.process(xcp_frame()).frame)[XCP].feedback for _ in range(3)]
    assert feedback == [p, 2000 - p, 0] and m.port(2).xcp_positive_left == 0


def test_a_flagged_frame_cut_inside_the_xcp_header_is_dropped_and_one_without_room_for_it_is_rcp():
    frame = xcp_frame(payload=b"")
    assert model().process(frame[:-1]) is None
    short = bytes(Ether(src="00:00:00:00:00:00", dst="00:aa:00:00:00:00") / IP(src="10.0.0.2", dst="10.0.2.2")
                  / UDP(sport=40000, dport=6577) / RCP(type=DATA, flags=0x80, rtt_us=20_000) / Raw(b"\x7f" * 11))
    m = model(xcp={2: dp.XcpControl.of(1.0, 0, 1000, 1000)})
    assert m.process(short).frame == routed(short, 2) and m.port(2).xcp_sum_x == 0


def test_a_port_without_xcp_leaves_xcp_packets_untouched_and_uncounted():
    m = model(xcp={3: dp.XcpControl.of(0, 500.0, 1000, 1000)})
    frame = xcp_frame()
    assert m.process(frame).frame == routed(frame, 2)
    assert m.port(2).xcp_sum_x == 0


def test_an_xcp_frame_another_router_limited_takes_only_what_it_gets_from_the_totals():
    control = dp.XcpControl.of(3e8, 0.0, 100_000, 100_000)
    m = model(xcp={2: control})
    p, n = dp.xcp_router_feedback(control.xi_p, control.xi_n, 20_000, 200_000, len(xcp_frame()))
    assert p - n > 10
    m.process(xcp_frame(feedback=10))          # the header's 10 stays: the router charges what the packet gets
    charged_p, charged_n = 100_000 - m.port(2).xcp_positive_left, 100_000 - m.port(2).xcp_negative_left
    assert (charged_p, charged_n) == (10 + (p - 10), p - 10) and charged_p - charged_n == 10

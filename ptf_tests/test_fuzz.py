"""Tens of thousands of random and structurally fuzzed frames through bmv2, between well-formed RCP flows, held
to the Python router of docs/protocol.md frame by frame and count by count (ptf_tests/fuzz.py)."""

from control_plane.simple_switch import SimpleSwitch
from p4rcp import dataplane as dp
from p4rcp.testing import BUILD_JSON, require_toolchain
from p4rcp.veth import VethPairs, free_tcp_port
from ptf_tests import fuzz

FUZZED = 50_000
SCAPY = 3_000        # of them from Scapy's fuzz(), about 2.7 ms a frame here; the rest p4rcp's own fuzzer
SEED = 20260


def _switch():
    require_toolchain("simple_switch")
    thrift_port = free_tcp_port()
    veths = VethPairs(len(fuzz.PORTS), tag="fz")
    return veths, thrift_port


def test_fuzzed_frames_leave_as_the_specification_says_and_leave_every_count_exact():
    veths, thrift_port = _switch()
    with veths, SimpleSwitch(BUILD_JSON, dict(enumerate(veths.switch_side)), thrift_port):
        result = fuzz.run(veths, thrift_port, FUZZED, SCAPY, SEED)
    print(result.summary())
    assert result.fuzzed >= 50_000
    assert result.mismatches == [], "\n".join(result.mismatches[:40])


def test_a_switch_that_stamps_otherwise_than_the_model_is_caught():
    """The check itself: port 3's stamp written one kb/s off the model's, a few thousand frames."""
    veths, thrift_port = _switch()
    off = {**fuzz.STAMPS, dp.rate_cell(3, 0): fuzz.STAMPS[dp.rate_cell(3, 0)] - 1}
    with veths, SimpleSwitch(BUILD_JSON, dict(enumerate(veths.switch_side)), thrift_port):
        result = fuzz.run(veths, thrift_port, 3_000, 0, SEED, switch_stamps=off)
    assert any(m.startswith("port 3: frame") for m in result.mismatches), result.mismatches[:5]
    assert not any(m.startswith(("port 0", "port 1", "port 2")) for m in result.mismatches), result.mismatches[:5]

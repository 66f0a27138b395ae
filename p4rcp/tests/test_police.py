"""The Python mirror of the data plane's policer: its hashes and its rule (the PTF suite checks both against
the switch's cells; here, by hand)."""

import pytest

from p4rcp import dataplane as dp
from p4rcp.police import Flow, Policer, crc16_arc, epoch_of, row_indices, structural_false_positives

A = Flow("10.0.0.2", "10.0.2.2", 40000, 6577)
L = 1000


def test_the_hashes_are_the_low_halves_xored_and_bmv2s_crc16():
    assert crc16_arc(b"123456789") == 0xBB3D                                                   # the check value
    key = bytes([10, 0, 0, 2, 10, 0, 2, 2]) + (40000).to_bytes(2, "big") + (6577).to_bytes(2, "big")
    assert A.key() == key
    assert row_indices(A) == (0x0002 ^ 0x0202 ^ 40000 ^ 6577, crc16_arc(key) & 0xFFFF)
    assert all(0 <= i < dp.POLICE_CELLS for i in row_indices(A))
    # addresses that differ only in their high halves share row 0, not row 1
    B = Flow("10.1.0.2", "10.0.2.2", 40000, 6577)
    assert row_indices(B)[0] == row_indices(A)[0] and row_indices(B)[1] != row_indices(A)[1]


def test_epochs_are_2_to_14_us():
    assert epoch_of(16383) == 0 and epoch_of(16384) == 1 and epoch_of(5 * 16384 + 7) == 5


def test_within_the_limit_every_packet_passes_and_row_0_counts_it():
    p = Policer()
    assert all(p.packet(A, L, 7, allowance=1, limit=5 * L) for _ in range(5))
    assert p.rows[0][row_indices(A)[0]] == (7, 5 * L) and p.rows[1] == {}


def test_over_the_limit_row_1_takes_over_then_drops():
    p = Policer()
    passed = [p.packet(A, L, 7, allowance=1, limit=3 * L) for _ in range(8)]
    assert passed == [True] * 6 + [False] * 2
    assert p.rows[0][row_indices(A)[0]] == (7, 8 * L)          # row 0 counts every packet
    assert p.rows[1][row_indices(A)[1]] == (7, 3 * L)          # row 1 what it let through


def test_a_new_epoch_leaks_the_allowance_and_caps_row_0_at_the_limit():
    p = Policer()
    for _ in range(4):
        p.packet(A, L, 7, allowance=2 * L, limit=5 * L)
    assert p.packet(A, L, 8, allowance=2 * L, limit=5 * L)
    assert p.rows[0][row_indices(A)[0]] == (8, 3 * L)          # 4 - 2 + 1
    for _ in range(20):
        p.packet(A, L, 8, allowance=2 * L, limit=5 * L)
    p.packet(A, L, 9, allowance=2 * L, limit=5 * L)
    assert p.rows[0][row_indices(A)[0]] == (9, 6 * L)          # min(24 - 2, 5) + 1
    p.packet(A, L, 11, allowance=2 * L, limit=5 * L)
    assert p.rows[0][row_indices(A)[0]] == (11, L)             # two epochs later: empty, then this packet


def test_a_flow_above_its_allowance_gets_the_allowance_per_epoch():
    p = Policer()
    passed = {}
    for epoch in range(100):
        for _ in range(9):                                     # 9 L offered per epoch, allowance 3 L
            passed[epoch] = passed.get(epoch, 0) + p.packet(A, L, epoch, allowance=3 * L, limit=5 * L)
    assert all(n == 3 for epoch, n in passed.items() if epoch >= 2)


def test_limit_0_is_off():
    p = Policer()
    assert all(p.packet(A, L, 1, allowance=1, limit=0) for _ in range(100)) and p.rows == ({}, {})


def test_structural_bound_counts_flows_sharing_both_cells():
    b = Flow("10.0.0.2", "10.0.2.9", 1, 6577)
    assert structural_false_positives([A, b], set()) == 0.0
    # fabricate a flow list where two flows share both cells: the same 5-tuple twice is the extreme case
    assert structural_false_positives([A, A, b], set()) == 2 / 3


def test_the_allowance_and_the_limit_are_one_64_bit_cell_on_v1model():
    assert dp.police_cell_value(3000, 9000) == 3000 * 2**32 + 9000
    assert dp.police_cell_value(0, 0) == 0 and dp.police_cell_value(2**32 - 1, 2**32 - 1) == 2**64 - 1
    for allowance, limit in ((2**32, 1), (1, 2**32), (-1, 1)):
        with pytest.raises(ValueError, match="32-bit"):
            dp.police_cell_value(allowance, limit)

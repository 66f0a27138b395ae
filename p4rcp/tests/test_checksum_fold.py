"""The v1model stamp's checksum update (p4src/shared/checksum.p4, udp_csum_replace32_mul) against RFC 1624.

The P4 function folds HC + (m - m') with one multiplication; RFC 1624's eq. 3 gives HC' = ~(~HC + ~m + m') in
one's-complement 16-bit arithmetic. The two must agree for every stamp the data plane makes (m' < m), and a
checksum of 0 (none sent) must stay 0.
"""

import random

import pytest

MASK64 = (1 << 64) - 1


def ones_add(a: int, b: int) -> int:
    s = a + b
    return (s & 0xFFFF) + (s >> 16)


def rfc1624(hc: int, m: int, m_new: int) -> int:
    """HC' = ~(~HC + ~m + m'), over the 16-bit words of the 32-bit field."""
    total = (~hc) & 0xFFFF
    for word in (m >> 16, m & 0xFFFF):
        total = ones_add(total, (~word) & 0xFFFF)
    for word in (m_new >> 16, m_new & 0xFFFF):
        total = ones_add(total, word)
    return (~total) & 0xFFFF


def p4_mul_fold(hc: int, m: int, m_new: int) -> int:
    """udp_csum_replace32_mul, operation by operation, with bmv2's bit widths."""
    total = (hc + ((m - m_new) & 0xFFFFFFFF)) & MASK64
    folded = ((total * 0x0001000100010001) & MASK64) >> 48
    return folded & (0 if hc == 0 else 0xFFFF)


def same_checksum(a: int, b: int) -> bool:
    """0x0000 and 0xFFFF are the same one's-complement number; a UDP sender writes 0xFFFF for a zero."""
    return a == b or {a, b} == {0, 0xFFFF}


@pytest.mark.parametrize("seed", range(4))
def test_the_fold_is_rfc1624_for_every_lowering_stamp(seed):
    rng = random.Random(seed)
    for _ in range(20000):
        m = rng.randrange(1, 1 << 32)
        m_new = rng.randrange(0, m)
        hc = rng.randrange(1, 1 << 16)
        got = p4_mul_fold(hc, m, m_new)
        assert got != 0, (hc, m, m_new)            # 0 would mean "no checksum"
        assert same_checksum(got, rfc1624(hc, m, m_new)), (hc, m, m_new)


def test_the_fold_around_the_multiples_of_0xffff():
    # Sums whose fold is 0xFFFF (a one's-complement zero) or next to it: where an end-around carry is missed.
    for hc in (1, 0xFFFE, 0xFFFF):
        for target in (0xFFFF * k + d for k in (1, 2, 0x10000, 0x10001) for d in (-1, 0, 1)):
            diff = target - hc
            if 0 < diff < (1 << 32) - 5:
                m, m_new = diff + 5, 5
                assert same_checksum(p4_mul_fold(hc, m, m_new), rfc1624(hc, m, m_new)), (hc, m, m_new)


def test_no_checksum_stays_none():
    assert p4_mul_fold(0, 123456, 1000) == 0

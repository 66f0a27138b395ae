"""The policing thresholds the control plane writes (p4rcp/police.py), by hand computation."""

import pytest

from p4rcp.police import police_allowance, police_limit


def test_allowance_is_one_epoch_of_the_largest_stamp_with_the_margin():
    # 3 Mb/s = 375 000 B/s; x 16.384 ms = 6144 B; x 1.02 = 6266.88 -> 6267
    assert police_allowance(3e6, 0.016384, margin=0.02, frame_bytes=1078) == 6267
    assert police_allowance(3e6, 0.016384, margin=0.0, frame_bytes=1078) == 6144


def test_allowance_is_at_least_one_frame():
    # 100 kb/s x 16.384 ms = 204.8 B: less than a frame
    assert police_allowance(100e3, 0.016384, margin=0.02, frame_bytes=1078) == 1078
    assert police_allowance(0, 0.016384, margin=0.02, frame_bytes=1078) == 1078


def test_limit_adds_the_hosts_catch_up_and_a_couple_of_packets():
    # 3 Mb/s x 10 ms = 3750 B; + 2 x 1078 = 2156 B
    assert police_limit(6267, 3e6, slack_s=0.010, burst_bytes=2156) == 6267 + 3750 + 2156
    assert police_limit(6267, 3e6, slack_s=0.0, burst_bytes=0) == 6267


@pytest.mark.parametrize("kw", [dict(S_max=-1, epoch_s=0.01, margin=0, frame_bytes=1),
                                dict(S_max=1e6, epoch_s=0, margin=0, frame_bytes=1),
                                dict(S_max=1e6, epoch_s=0.01, margin=-0.1, frame_bytes=1),
                                dict(S_max=1e6, epoch_s=0.01, margin=0, frame_bytes=0)])
def test_allowance_rejects_nonsense(kw):
    with pytest.raises(ValueError):
        police_allowance(kw.pop("S_max"), kw.pop("epoch_s"), **kw)


def test_limit_rejects_nonsense():
    with pytest.raises(ValueError):
        police_limit(0, 1e6, slack_s=0.01, burst_bytes=0)
    with pytest.raises(ValueError):
        police_limit(100, 1e6, slack_s=-0.01, burst_bytes=0)

"""The fluid model behind docs/control_plane.md's "Gains": which gains keep one bottleneck stable."""

from control_plane.fluid import simulate


def test_default_gains_are_stable_without_target_queue():
    s = simulate(alpha=0.4, beta=0.4)
    assert 0.97 < s.share_min and s.share_max < 1.03
    assert s.utilisation > 0.99 and s.queue_max_pkts < 3


def test_papers_gains_are_stable_without_target_queue():
    s = simulate(alpha=0.1, beta=1.0)
    assert 0.97 < s.share_min and s.share_max < 1.03


def test_papers_gains_oscillate_around_a_target_queue():
    s = simulate(alpha=0.1, beta=1.0, q0_packets=6)
    assert s.share_max - s.share_min > 0.5
    assert s.utilisation < 0.9

"""What the control plane writes for policing, per (port, weight class), every interval: pure functions.

The data plane gives each flow a byte bucket that leaks `allowance` bytes per epoch and drops what would
lift it above `limit` (p4src/targets/v1model/policing.p4; docs/dataplane.md, "Policing"). A compliant
sender sends at most the stamp it heard up to one RTT ago, so the control plane sizes both from the
largest stamp of the last epoch plus d0 (`S_max`, bit/s of Ethernet frames): the allowance is what S_max
sends in one epoch with a small margin, the limit adds what a compliant host may send in a burst (the
hosts catch up a late timer by up to 10 ms of their rate) and a couple of packets (an epoch boundary
cuts a packet; jitter upstream). A flow above the allowance gets the allowance per epoch in the long run:
the slack of the limit is granted once, not per epoch.
"""

from __future__ import annotations

import math


def police_allowance(S_max: float, epoch_s: float, *, margin: float, frame_bytes: int) -> int:
    """Bytes a flow may send per epoch: S_max (bit/s) over one epoch, plus the margin, at least one frame (the
    hardware targets let the first packet of an epoch into an empty bucket only if it fits the allowance)."""
    if S_max < 0 or epoch_s <= 0 or margin < 0 or frame_bytes <= 0:
        raise ValueError(f"police_allowance needs S_max >= 0, epoch_s > 0, margin >= 0, frame_bytes > 0 "
                         f"(S_max={S_max}, epoch_s={epoch_s}, margin={margin}, frame_bytes={frame_bytes})")
    return max(math.ceil(S_max / 8 * epoch_s * (1 + margin)), frame_bytes)


def police_limit(allowance: int, S_max: float, *, slack_s: float, burst_bytes: float) -> int:
    """The bucket's limit in bytes: the allowance, what S_max sends in slack_s, and burst_bytes."""
    if allowance <= 0 or S_max < 0 or slack_s < 0 or burst_bytes < 0:
        raise ValueError("police_limit needs allowance > 0, S_max, slack_s, burst_bytes >= 0")
    return allowance + math.ceil(S_max / 8 * slack_s + burst_bytes)

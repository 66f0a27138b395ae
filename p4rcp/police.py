"""Policing in Python: the thresholds the control plane writes (pure functions), and the data plane's policer with
its two hashes and its per-packet rule (p4src/targets/v1model/policing.p4).

The thresholds, per (port, weight class), every interval: the data plane gives each flow a byte bucket that leaks
`allowance` bytes per epoch and drops what would lift it above `limit` (docs/design.md, "Policing"). A
compliant sender sends at most the stamp it heard up to one RTT ago, so the control plane sizes both from the
largest stamp of the last epoch plus d0 (`S_max`, bit/s of Ethernet frames): the allowance is what S_max sends in
one epoch with a small margin, the limit adds what a compliant host may send in a burst (the hosts catch up a
late timer by up to 10 ms of their rate) and a couple of packets (an epoch boundary cuts a packet; jitter
upstream). A flow above the allowance gets the allowance per epoch in the long run: the slack of the limit is
granted once, not per epoch.

The policer: the PTF suite uses the hashes to build flows that share cells and checks the switch's cells against
them; `python -m p4rcp.police` measures the false-positive rate of the sketch at its size for compliant
flows, by simulating the same rule with the same hashes (docs/design.md, "Policing").

A flow is the UDP 5-tuple; the hashes run over its key (source address, destination address, source port,
destination port), 12 bytes in network order, as bmv2 concatenates the fields: row 0 xors the addresses' low
16 bits and the two ports (three operators in the v1model program: bmv2's hash would need the key copied
first), row 1 is the low 16 bits of CRC-16/ARC of the whole key (bmv2's crc16), so that flows row 0 confuses
(addresses that differ only in their high halves) have different row-1 cells. (The TNA program's row 0 is a
CRC-32 of the key, from Tofino's hash unit; the SUME program folds it with its LRC extern.)
"""

from __future__ import annotations

import argparse
import heapq
import ipaddress
import math
import random
import sys
from dataclasses import dataclass, field

from p4rcp import dataplane as dp


# --- The thresholds the control plane writes ----------------------------------------------------------

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


# --- The data plane's policer -------------------------------------------------------------------------

EPOCH_SHIFT_V1MODEL = 14          # ingress_global_timestamp (us) >> 14


@dataclass(frozen=True)
class Flow:
    src: str
    dst: str
    sport: int
    dport: int

    def key(self) -> bytes:
        return (ipaddress.IPv4Address(self.src).packed + ipaddress.IPv4Address(self.dst).packed
                + self.sport.to_bytes(2, "big") + self.dport.to_bytes(2, "big"))


def crc16_arc(data: bytes) -> int:
    """CRC-16/ARC (poly 0x8005 reflected, init 0, no final xor): bmv2's crc16."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def row0_index(key: bytes) -> int:
    """The low 16 bits of the two addresses and the two ports, xored."""
    return int.from_bytes(key[2:4], "big") ^ int.from_bytes(key[6:8], "big") ^ int.from_bytes(key[8:10], "big") \
        ^ int.from_bytes(key[10:12], "big")


def row_indices(flow: Flow) -> tuple[int, int]:
    """The flow's cell in row 0 and in row 1."""
    key = flow.key()
    return row0_index(key) % dp.POLICE_CELLS, crc16_arc(key) % dp.POLICE_CELLS


def epoch_of(timestamp_us: int, shift: int = EPOCH_SHIFT_V1MODEL) -> int:
    return (timestamp_us >> shift) & 0xFFFFFFFF


@dataclass
class Policer:
    """Both rows of cells and the per-packet rule, as policing.p4 runs it. Cells are (epoch, bytes)."""
    rows: tuple[dict, dict] = field(default_factory=lambda: ({}, {}))

    @staticmethod
    def _bucket(cell: tuple[int, int], epoch: int, allowance: int, length: int) -> int:
        """The cell's bucket with this packet in it, after the leak if the cell is of an earlier epoch."""
        cell_epoch, bucket = cell
        if cell_epoch == epoch:
            return bucket + length
        if cell_epoch == (epoch - 1) & 0xFFFFFFFF:
            return max(bucket - allowance, 0) + length
        return length                                    # older: empty

    def packet(self, flow: Flow, length: int, epoch: int, allowance: int, limit: int) -> bool:
        """Whether the packet passes; updates the cells. limit 0: policing off."""
        if limit == 0:
            return True
        i0, i1 = row_indices(flow)
        row0, row1 = self.rows
        old0 = row0.get(i0, (0, 0))
        b0 = self._bucket(old0, epoch, allowance, length)
        if old0[0] != epoch:
            b0 = min(b0, limit + length)                 # row 0's cap when a bucket enters a new epoch
        row0[i0] = (epoch, b0)                           # row 0 counts every packet
        if b0 <= limit:
            return True
        b1 = self._bucket(row1.get(i1, (0, 0)), epoch, allowance, length)
        if b1 <= limit:                                  # row 1 counts what it lets through
            row1[i1] = (epoch, b1)
            return True
        return False                                     # and leaves its cell as it was


# --- The false-positive measurement -------------------------------------------------------------------

def random_flows(n: int, rng: random.Random) -> list[Flow]:
    """n distinct flows as the experiments make them: senders 10.0.0.0/16 from ephemeral ports to receivers
    10.1.0.0/16 on the RCP port."""
    flows: set[Flow] = set()
    while len(flows) < n:
        flows.add(Flow(f"10.0.{rng.randrange(256)}.{rng.randrange(1, 255)}",
                       f"10.1.{rng.randrange(256)}.{rng.randrange(1, 255)}", rng.randrange(32768, 61000), 6577))
    return sorted(flows, key=lambda f: (f.src, f.dst, f.sport))


def structural_false_positives(flows: list[Flow], heavy: set[Flow]) -> float:
    """Share of compliant flows that *can* be policed: their row-0 cell is shared with another flow (so the
    cell's bucket may be over, two flows at R sending more than one allowance) and their row-1 cell is shared
    with another flow whose row-0 cell is shared too (so that row 1 sees it). Compliant flows alone in either
    cell are never policed. An upper bound on the flows policed, independent of rates and timing."""
    rows = [row_indices(f) for f in flows]
    count0: dict[int, int] = {}
    for i0, _ in rows:
        count0[i0] = count0.get(i0, 0) + 1
    suspect = [count0[i0] > 1 or f in heavy for f, (i0, _) in zip(flows, rows)]
    count1: dict[int, int] = {}
    for (_, i1), s in zip(rows, suspect):
        if s:
            count1[i1] = count1.get(i1, 0) + 1
    compliant = [(f, r, s) for f, r, s in zip(flows, rows, suspect) if f not in heavy]
    exposed = sum(1 for _, (_, i1), s in compliant if s and count1[i1] > 1)
    return exposed / len(compliant)


@dataclass
class SimResult:
    flows: int
    compliant_packets: int
    compliant_policed: int
    compliant_flows_policed: int
    cheater_share: float          # the cheater's forwarded rate / R


def simulate(n_compliant: int, rate_bps: float, seconds: float, seed: int, *, cheater_factor: float = 3.0,
             frame_bytes: int = 1078, margin: float = 0.02, slack_s: float = 0.010, burst_packets: float = 2,
             lateness_s: float = 0.010, late_share: float = 0.01) -> SimResult:
    """Compliant flows paced at rate_bps (each timer late by up to lateness_s in a share late_share of the
    packets, then catching up as the hosts do), one cheater at cheater_factor x rate_bps, through the policer
    with the control plane's thresholds for R = rate_bps (police_allowance, police_limit)."""
    epoch_s = dp.POLICE_EPOCH_S["v1model"]
    allowance = police_allowance(rate_bps, epoch_s, margin=margin, frame_bytes=frame_bytes)
    limit = police_limit(allowance, rate_bps, slack_s=slack_s, burst_bytes=burst_packets * frame_bytes)
    rng = random.Random(seed)
    flows = random_flows(n_compliant + 1, rng)
    cheater = flows[-1]
    policer = Policer()
    gap = {f: frame_bytes * 8 / rate_bps for f in flows}
    gap[cheater] /= cheater_factor
    # Per flow, packet k is scheduled at t0 + k gap; a late timer (by up to lateness_s) sends it late, and the
    # packets scheduled meanwhile go with it, back to back: the hosts' credit for lateness. Events are taken
    # in order of sending, as the switch's clock sees them.
    last_sent = {f: 0.0 for f in flows}
    events = []
    for f in flows:
        t0 = rng.uniform(0, gap[f])
        events.append((t0, t0, f))
    heapq.heapify(events)
    passed_cheater = 0
    packets = policed = 0
    policed_flows: set[Flow] = set()
    while events:
        sent, scheduled, f = heapq.heappop(events)
        if sent > seconds:
            continue
        ok = policer.packet(f, frame_bytes, epoch_of(int(sent * 1e6)), allowance, limit)
        if f is cheater:
            passed_cheater += ok
        else:
            packets += 1
            if not ok:
                policed += 1
                policed_flows.add(f)
        last_sent[f] = sent
        nxt = scheduled + gap[f]
        late = rng.uniform(0, lateness_s) if rng.random() < late_share else 0.0
        heapq.heappush(events, (max(nxt + late, sent), nxt, f))
    return SimResult(n_compliant, packets, policed, len(policed_flows),
                     passed_cheater * frame_bytes * 8 / seconds / rate_bps)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m p4rcp.police", description="False-positive rate of the "
                                 "policing sketch for compliant flows (docs/design.md, 'Policing').")
    ap.add_argument("--flows", type=int, nargs="+", default=[3, 30, 300, 3000])
    ap.add_argument("--rate-mbps", type=float, default=3.0, help="R: every compliant flow's rate (the link is "
                    "(N + 3) R: N flows at R and the cheater, which sends 3 R and gets R)")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--structural", type=int, nargs="+", default=[100, 1000, 3000, 10000, 30000, 100000],
                    help="flow counts for the rate-free upper bound")
    args = ap.parse_args(argv)
    rate = args.rate_mbps * 1e6
    print(f"sketch: 2 rows x {dp.POLICE_CELLS} cells; epoch {dp.POLICE_EPOCH_S['v1model'] * 1e3:.3f} ms")
    print(f"packet-level: N compliant flows at R = {args.rate_mbps:g} Mb/s (1% of their timers up to 10 ms late, "
          f"then catching up) and one at 3 R, {args.seconds:g} s, {args.seeds} seeds")
    for n in args.flows:
        results = [simulate(n, rate, args.seconds, seed) for seed in range(args.seeds)]
        pk = sum(r.compliant_packets for r in results)
        pol = sum(r.compliant_policed for r in results)
        fl = sum(r.compliant_flows_policed for r in results)
        share = sum(r.cheater_share for r in results) / len(results)
        print(f"  N = {n:6d}: compliant packets policed {pol}/{pk} ({pol / pk:.1e}), flows with a packet "
              f"policed {fl}/{n * args.seeds}; the cheater forwarded at {share:.3f} R")
    print("upper bound: share of compliant flows whose row-0 and row-1 cells are both shared as described "
          "(random flows, the sketch's hashes)")
    rng = random.Random(1)
    for n in args.structural:
        flows = random_flows(n + 1, rng)
        print(f"  N = {n:6d}: {structural_false_positives(flows, {flows[-1]}):.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

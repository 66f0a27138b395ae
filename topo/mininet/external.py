"""External schemes on Mininet: another program's sender and receiver in p4rcp's network, measured by p4rcp.

An experiment names the commands that start the program's receiver and sender (`[scheme.NAME]` with
`sender`, `receiver`, `port`; topo/experiment.py, Scheme.sender_command and receiver_command). The runner
starts them like its own hosts (runner.py) and measures what they delivered itself, so that no per-program
adapter is needed: a capture of the flow's packets at the receiving host (headers only), from which the
delivered payload over time becomes the same flow record and goodput samples p4rcp's own senders write.
Duplicates of TCP segments are counted once; UDP payload is counted as it arrives (a program's own
retransmissions, if any, included).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from scapy.layers.inet import IP, TCP, UDP
from scapy.utils import PcapReader

if TYPE_CHECKING:
    from topo.experiment import Scheme

SNAPLEN = 128               # bytes of each packet the capture keeps: the headers
SAMPLE_S = 0.02             # goodput samples, as p4rcp-host's long flows write them (topo/hosts.py)


def capture_command(interface: str, sender_ip: str, port: int, path: Path) -> list[str]:
    """tcpdump of the flow's data at the receiving host: packets from the sender to the scheme's port."""
    return ["tcpdump", "-i", interface, "-s", str(SNAPLEN), "-U", "-n", "-w", str(path),
            f"src host {sender_ip} and dst port {port}"]


def delivered(pcap: Path) -> list[tuple[float, int]]:
    """(arrival time, new payload bytes) per packet of the capture; a TCP segment's bytes count once."""
    arrivals: list[tuple[float, int]] = []
    seen: list[tuple[int, int]] = []      # TCP sequence ranges already delivered (merged)
    if not pcap.is_file() or pcap.stat().st_size == 0:
        return arrivals
    with PcapReader(str(pcap)) as packets:
        for pkt in packets:
            if IP not in pkt:
                continue
            ip = pkt[IP]
            if UDP in ip:
                arrivals.append((float(pkt.time), max(0, ip[UDP].len - 8)))
            elif TCP in ip:
                tcp = ip[TCP]
                length = ip.len - ip.ihl * 4 - tcp.dataofs * 4
                if length > 0:
                    arrivals.append((float(pkt.time), _new_bytes(seen, tcp.seq, tcp.seq + length)))
    return arrivals


def _new_bytes(seen: list[tuple[int, int]], start: int, end: int) -> int:
    """Bytes of [start, end) not in `seen` (kept merged and sorted); adds the range."""
    new, cursor = 0, start
    for s, e in seen:
        if e <= cursor or s >= end:
            continue
        if s > cursor:
            new += s - cursor
        cursor = max(cursor, e)
    new += max(0, end - cursor)
    merged = sorted(seen + [(start, end)])
    seen.clear()
    for s, e in merged:
        if seen and s <= seen[-1][1]:
            seen[-1] = (seen[-1][0], max(seen[-1][1], e))
        else:
            seen.append((s, e))
    return new


def write_records(pcap: Path, *, flow_id: int, scheme: Scheme, start_unix_s: float, sender_failed: str | None,
                  flows: Path, trace: Path, receiver_ip: str) -> dict:
    """The flow record and goodput samples of an external flow, as p4rcp-host writes its own (hosts/README.md,
    "Records"): appended to the sender's flows and trace files. Returns the record."""
    arrivals = delivered(pcap)
    total = sum(n for _, n in arrivals)
    last = max((t for t, n in arrivals if n > 0), default=None)
    record = {"flow_id": flow_id, "scheme": scheme.name, "external": True, "dst": f"{receiver_ip}:{scheme.port}",
              "start_unix_s": start_unix_s, "size_bytes": total, "packets_delivered": len(arrivals),
              "completed": sender_failed is None and total > 0,
              "fct_s": None if last is None else last - start_unix_s}
    if sender_failed is not None:
        record["error"] = sender_failed
    elif total == 0:
        record["error"] = "no payload reached the receiver"
    if record["fct_s"]:
        record["mean_rate_kbps"] = total * 8 / record["fct_s"] / 1000
    with open(flows, "a") as f:
        f.write(json.dumps(record) + "\n")
    with open(trace, "a") as f:
        for t_s, goodput_kbps in _samples(arrivals, start_unix_s):
            f.write(json.dumps({"event": "sample", "flow_id": flow_id, "t_s": round(t_s, 4),
                                "goodput_kbps": round(goodput_kbps, 3)}) + "\n")
    return record


def _samples(arrivals: list[tuple[float, int]], start_unix_s: float) -> list[tuple[float, float]]:
    """Goodput (kb/s of payload) per SAMPLE_S bin from the flow's start to its last arrival."""
    if not arrivals:
        return []
    bins: dict[int, int] = {}
    for t, n in arrivals:
        k = int((t - start_unix_s) / SAMPLE_S)
        if k >= 0:
            bins[k] = bins.get(k, 0) + n
    last = max(bins)
    return [((k + 1) * SAMPLE_S, bins.get(k, 0) * 8 / SAMPLE_S / 1000) for k in range(last + 1)]

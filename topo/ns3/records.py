"""The simulated hosts' records (topo/ns3/model/records.h) as the JSON lines the Rust hosts write
(hosts/src/record.rs), so that topo/report reads both engines' runs alike.

Times: a record's `*_unix_s` is the run's epoch (the wall clock when the simulation started) plus simulated
seconds, so that runs keep Unix-like times and the report's joins and windows work unchanged. `verified` is
null: the simulation carries no content to verify.
"""

from __future__ import annotations


def _opt(value: float, digits: int = 6) -> float | None:
    """A C++ record's -1 ("none") as null."""
    return None if value < 0 else round(value, digits)


def flow_record(r, epoch: float) -> dict:
    fct = _opt(r.fct)
    rec = {"flow_id": int(r.flowId)}
    if r.index >= 0:
        rec["index"] = int(r.index)
    rec.update({
        "scheme": str(r.scheme), "dst": str(r.dst), "size_bytes": int(r.sizeBytes),
        "start_unix_s": round(epoch + r.start, 6), "fct_s": fct, "completed": bool(r.completed), "verified": None,
        "retransmissions": int(r.retransmissions), "packets_sent": int(r.packetsSent),
        "packets_lost": None if r.packetsLost < 0 else int(r.packetsLost),
        "mean_rate_kbps": round(r.sizeBytes * 8 / max(fct, 1e-9) / 1000, 3) if fct is not None else None,
        "send_rate_kbps": _opt(r.sendRateKbps, 3),
        "synack_rate_kbps": None if r.synackRateKbps < 0 else int(r.synackRateKbps),
        "min_rtt_ms": _opt(r.minRttMs, 3), "srtt_ms": _opt(r.srttMs, 3)})
    if str(r.error):
        rec["error"] = str(r.error)
    return rec


def recv_record(r, epoch: float) -> dict:
    return {"role": "recv", "flow_id": int(r.flowId), "peer": str(r.peer), "scheme": str(r.scheme),
            "transport": str(r.transport), "size_bytes": None if r.sizeBytes < 0 else int(r.sizeBytes),
            "bytes_delivered": int(r.bytesDelivered), "verified": None, "completed": bool(r.completed),
            "data_pkts": int(r.dataPackets), "duplicate_pkts": int(r.duplicatePackets),
            "start_unix_s": round(epoch + r.start, 6), "duration_s": round(r.duration, 6),
            "last_byte_unix_s": None if r.lastByte < 0 else round(epoch + r.lastByte, 6)}


def sample_line(s) -> dict:
    line = {"flow_id": int(s.flowId), "event": "sample", "t_s": round(s.t, 6), "rate_kbps": round(s.rateKbps, 3),
            "srtt_ms": round(s.srttMs, 3), "goodput_kbps": round(s.goodputKbps, 3)}
    if s.sendKbps >= 0:
        line["send_kbps"] = round(s.sendKbps, 3)
    if s.loss >= 0:
        line["loss"] = round(s.loss, 5)
    line["state"] = str(s.state)
    return line

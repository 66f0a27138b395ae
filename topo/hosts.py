"""Command lines of the Rust binaries (hosts/: `p4rcp-host`, `p4rcp-linkem`), in one place."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOST_BINARY = ROOT / "hosts" / "target" / "release" / "p4rcp-host"
# The link emulator: its own binary, built by the same `make hosts`.
LINKEM_BINARY = ROOT / "hosts" / "target" / "release" / "p4rcp-linkem"


def recv(out: Path) -> list[str]:
    return [str(HOST_BINARY), "recv", "--out", str(out)]


# Goodput samples of long flows: fine enough to time a joining flow in RTTs of 40 ms.
LONG_FLOW_SAMPLE_S = 0.02
LONG_FLOW_CLOSE_S = 15.0


def long_flow(dst_ip: str, scheme: str, duration_s: float, flow_id: int, out: Path, trace: Path,
              dscp: int = 0) -> list[str]:
    """The flow id also seeds the sender's controller (PCC's randomised trials). The flow's timeout leaves it
    LONG_FLOW_CLOSE_S to deliver and close after its duration (the sender's default, 60 s, would cut longer
    flows short). dscp: the DSCP its packets carry."""
    return [str(HOST_BINARY), "send", "--to", dst_ip, "--cc", scheme, "--duration", f"{duration_s:.3f}",
            "--timeout", f"{duration_s + LONG_FLOW_CLOSE_S:.3f}",
            "--flow-id", str(flow_id), "--out", str(out), "--trace", str(trace),
            "--sample-interval", f"{LONG_FLOW_SAMPLE_S}"] + (["--dscp", str(dscp)] if dscp else [])


def single_flow(dst_ip: str, scheme: str, size_bytes: int) -> list[str]:
    """One flow of a given size (for checks and calibration)."""
    return [str(HOST_BINARY), "send", "--to", dst_ip, "--cc", scheme, "--size", str(size_bytes)]


def poisson(dst_ip: str, scheme: str, load: float, capacity_bps: float, sizes: str, duration_s: float,
            seed: int, out: Path, exact_load: bool = False, repeat_every_s: float | None = None,
            arrivals: str = "poisson") -> list[str]:
    """exact_load: the arrivals offer exactly `load` over the duration (their times scaled to fit), instead of
    whatever one draw of the arrival process offers. repeat_every_s: one period's arrivals, played again every
    period (exact_load then holds per period). arrivals: poisson, or pareto:SHAPE (p4rcp-host --arrivals)."""
    return [str(HOST_BINARY), "traffic", "--to", dst_ip, "--cc", scheme, "--load", f"{load:.4f}",
            "--capacity", f"{capacity_bps / 1e3:.0f}kbit", "--sizes", sizes, "--duration", f"{duration_s:.3f}",
            "--seed", str(seed), "--out", str(out)] + (["--exact-load"] if exact_load else []) + \
        (["--repeat-every", f"{repeat_every_s:.3f}"] if repeat_every_s is not None else []) + \
        (["--arrivals", arrivals] if arrivals != "poisson" else [])


def link_emulator(if_a: str, if_b: str, delay_ms: float, loss_pct: float) -> list[str]:
    """Bridges two interfaces: delay_ms each way, loss_pct from a to b."""
    return [str(LINKEM_BINARY), "--if-a", if_a, "--if-b", if_b, "--delay", f"{delay_ms}ms",
            "--loss", f"{loss_pct}"]

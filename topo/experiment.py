"""Experiment definitions (topo/experiments/*.toml) as validated data."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from control_plane.loop import RcpParams
from p4rcp.topology import TopologyError, Topology, load_topology

EXPERIMENTS_DIR = Path(__file__).resolve().parent / "experiments"
TOPOLOGIES_DIR = Path(__file__).resolve().parent / "topologies"
SCHEMES = ("rcp", "tcp", "allegro", "vivace", "vivace-loss", "vivace-latency", "allegro-ref")
# A constant-rate sender ("fixed:8mbit"), for calibrating the emulation rather than comparing schemes.
# The rate's grammar is the host binary's (hosts/src/units.rs, parse_rate_kbps): a number and a unit.
FIXED_SCHEME = re.compile(r"fixed:\d+(\.\d+)?([kmg]?(bit|bps)|[kmg])", re.IGNORECASE)


class ExperimentError(ValueError):
    pass


@dataclass(frozen=True)
class LongFlow:
    sender: str
    receiver: str
    start_s: float
    stop_s: float | None      # None: until the experiment ends


@dataclass(frozen=True)
class PoissonSource:
    sender: str
    receiver: str
    sizes: str                # p4rcp-host --sizes syntax


@dataclass(frozen=True)
class Event:
    at_s: float
    bottleneck_scale: float   # of the topology's bottleneck rate


@dataclass
class Variant:
    """One point of the sweep: what a single run per scheme uses."""
    label: str
    topology: Topology
    load: float | None


@dataclass
class Experiment:
    name: str
    description: str
    topology_file: Path
    schemes: list[str]
    duration_s: float
    load: float | None
    topology_params: dict
    source: Path                                  # the file it was read from
    long_flows: list[LongFlow] = field(default_factory=list)
    poisson: list[PoissonSource] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    sweep: dict[str, list] = field(default_factory=dict)
    rcp: dict = field(default_factory=dict)       # RcpParams overrides for the control loops

    def variants(self) -> list[Variant]:
        if not self.sweep:
            return [Variant("", load_topology(self.topology_file, **self.topology_params), self.load)]
        [(key, values)] = self.sweep.items()
        out = []
        for value in values:
            label = f"{key}={_label(value)}"
            if key == "load":
                out.append(Variant(label, load_topology(self.topology_file, **self.topology_params), value))
            else:
                params = dict(self.topology_params, **{key: value})
                out.append(Variant(label, load_topology(self.topology_file, **params), self.load))
        return out


def _label(value) -> str:
    return "-".join(str(v) for v in value) if isinstance(value, list) else str(value)


def resolve(name_or_path: str) -> Path:
    path = Path(name_or_path)
    if path.suffix == ".toml" and path.is_file():
        return path
    candidate = EXPERIMENTS_DIR / f"{name_or_path}.toml"
    if candidate.is_file():
        return candidate
    known = ", ".join(sorted(p.stem for p in EXPERIMENTS_DIR.glob("*.toml")))
    raise ExperimentError(f"no experiment {name_or_path!r}; known: {known}")


def suite_members(path: Path) -> list[Path] | None:
    """The experiments a suite file lists, or None for a plain experiment."""
    data = _read(path)
    if "suite" not in data:
        return None
    return [resolve(name) for name in data["suite"]]


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ExperimentError(f"{path}: {e}") from None


def load_experiment(path: Path, schemes: list[str] | None = None, duration_s: float | None = None) -> Experiment:
    d = _read(path)
    where = path.name
    try:
        topology_file = TOPOLOGIES_DIR / f"{d['topology']}.toml"
        exp = Experiment(
            name=path.stem, description=d.get("description", ""), topology_file=topology_file,
            schemes=list(schemes or d.get("schemes", SCHEMES[:4])), duration_s=float(duration_s or d["duration_s"]),
            load=d.get("load"), topology_params=dict(d.get("topology_params", {})),
            long_flows=[LongFlow(f["sender"], f["receiver"], float(f.get("start_s", 0)), f.get("stop_s"))
                        for f in d.get("long", [])],
            poisson=[PoissonSource(p["sender"], p["receiver"], p["sizes"]) for p in d.get("poisson", [])],
            events=[Event(float(e["at_s"]), float(e["bottleneck_scale"])) for e in d.get("events", [])],
            sweep=dict(d.get("sweep", {})), rcp=dict(d.get("rcp", {})), source=path)
    except KeyError as e:
        raise ExperimentError(f"{where}: missing key {e}") from None
    except (TypeError, ValueError) as e:
        raise ExperimentError(f"{where}: {e}") from None
    _validate(exp, where)
    return exp


def _validate(exp: Experiment, where: str) -> None:
    if not exp.topology_file.is_file():
        raise ExperimentError(f"{where}: topology file {exp.topology_file} does not exist")
    unknown = [s for s in exp.schemes if s not in SCHEMES and not FIXED_SCHEME.fullmatch(s)]
    if unknown or not exp.schemes:
        raise ExperimentError(f"{where}: unknown schemes {unknown}; known: {', '.join(SCHEMES)}, fixed:RATE (e.g. fixed:4mbit)")
    if exp.duration_s <= 0:
        raise ExperimentError(f"{where}: duration_s must be > 0")
    if not exp.long_flows and not exp.poisson:
        raise ExperimentError(f"{where}: no traffic (no [[long]] and no [[poisson]])")
    if exp.poisson and not (exp.load and 0 < exp.load < 1 or "load" in exp.sweep):
        raise ExperimentError(f"{where}: [[poisson]] sources need a total load in (0, 1)")
    try:
        RcpParams(**exp.rcp)
    except TypeError as e:
        raise ExperimentError(f"{where}: [rcp]: {e}") from None
    except ValueError as e:
        raise ExperimentError(f"{where}: [rcp]: {e}") from None
    if len(exp.sweep) > 1:
        raise ExperimentError(f"{where}: sweep one parameter at a time, got {sorted(exp.sweep)}")
    for e in exp.events:
        if not 0 < e.at_s < exp.duration_s or e.bottleneck_scale <= 0:
            raise ExperimentError(f"{where}: event at {e.at_s} s with scale {e.bottleneck_scale} is out of range")
    try:
        variants = exp.variants()
    except TopologyError as e:
        raise ExperimentError(f"{where}: {e}") from None
    for v in variants:
        hosts = v.topology.hosts
        for flow in [*exp.long_flows, *exp.poisson]:
            for name in (flow.sender, flow.receiver):
                if name not in hosts:
                    raise ExperimentError(f"{where}: host {name!r} is not in topology ({', '.join(hosts)})")
        if v.load is not None and not 0 < v.load < 1:
            raise ExperimentError(f"{where}: load {v.load} not in (0, 1)")

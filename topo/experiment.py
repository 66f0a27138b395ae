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
SCHEMES = ("rcp", "tcp", "allegro", "vivace", "vivace-loss", "vivace-latency", "allegro-ref", "vivace-stop")
# A constant-rate sender ("fixed:8mbit"), for calibrating the emulation rather than comparing schemes.
# The rate's grammar is the host binary's (hosts/src/units.rs, parse_rate_kbps): a number and a unit.
FIXED_SCHEME = re.compile(r"fixed:\d+(\.\d+)?([kmg]?(bit|bps)|[kmg])", re.IGNORECASE)
# The kernel's TCP with a named congestion control ("tcp:reno"); plain "tcp" is CUBIC, Linux's default.
TCP_SCHEME = re.compile(r"tcp:[a-z][a-z0-9_]*")
LINUX_INITCWND = 10     # segments: the kernel's initial window where the route sets none (RFC 6928)


@dataclass(frozen=True)
class Scheme:
    """One row of the results: the hosts' congestion control (p4rcp-host --cc) and its settings.

    An experiment names its schemes; a name is a host scheme (rcp, tcp:reno, ...) or a [scheme.NAME]
    table that sets cc and, on top of it, the control plane's RCP parameters (for RCP's gains side by
    side) or TCP's initial window (the senders' route initcwnd)."""
    name: str
    cc: str
    rcp: dict = field(default_factory=dict)   # RcpParams overrides, on top of the experiment's [rcp]
    initcwnd: int | None = None               # TCP only; None: the kernel's default

    @property
    def is_tcp(self) -> bool:
        return self.cc == "tcp" or self.cc.startswith("tcp:")

    def describe(self, rcp_params: RcpParams) -> str:
        """What ran, in words, for the summary."""
        if self.is_tcp:
            algo = self.cc.removeprefix("tcp").removeprefix(":") or "cubic"
            window = (f"initial window {self.initcwnd} segments (route initcwnd)" if self.initcwnd
                      else f"initial window {LINUX_INITCWND} segments (Linux's default)")
            return f"kernel TCP, congestion control {algo}, {window}"
        p = rcp_params
        routers = (f"routers alpha {p.alpha:g}, beta {p.beta:g}, gamma {p.gamma:g}, "
                   f"q0 {p.q0_bytes / 1000:g} kB, T = min({p.T_max_s * 1000:g} ms, d0)")
        return f"{self.cc} senders; {routers}" if self.cc == "rcp" else f"{self.cc} senders (routers stamp R, unused)"


def _is_host_scheme(cc: str) -> bool:
    return cc in SCHEMES or bool(FIXED_SCHEME.fullmatch(cc) or TCP_SCHEME.fullmatch(cc))


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
    scheme_tables: dict[str, Scheme] = field(default_factory=dict)   # [scheme.NAME]
    seeds: list[int] = field(default_factory=lambda: [1])   # one run per seed: workloads and senders' randomness

    def scheme(self, name: str) -> Scheme:
        return self.scheme_tables.get(name) or Scheme(name, name)

    def rcp_overrides(self, scheme: Scheme) -> dict:
        """RcpParams fields this scheme's runs set: the experiment's [rcp], then the scheme's own."""
        return {**self.rcp, **scheme.rcp}

    def rcp_params(self, scheme: Scheme) -> RcpParams:
        return RcpParams(**self.rcp_overrides(scheme))

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


@dataclass(frozen=True)
class Suite:
    members: list[Path]
    schemes: list[str] | None    # run every member with these instead of its own


def load_suite(path: Path) -> Suite | None:
    """The experiments a suite file lists (and the schemes it runs them with), or None for a plain experiment."""
    data = _read(path)
    if "suite" not in data:
        return None
    unknown = set(data) - {"description", "suite", "schemes"}
    if unknown:
        raise ExperimentError(f"{path.name}: unknown keys {sorted(unknown)} in a suite (description, suite, schemes)")
    schemes = data.get("schemes")
    if schemes is not None and (not isinstance(schemes, list) or not schemes
                                or not all(isinstance(s, str) for s in schemes)):
        raise ExperimentError(f"{path.name}: schemes must be a non-empty list of names, got {schemes!r}")
    return Suite([resolve(name) for name in data["suite"]], schemes)


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ExperimentError(f"{path}: {e}") from None


def load_experiment(path: Path, schemes: list[str] | None = None, duration_s: float | None = None,
                    seeds: list[int] | None = None) -> Experiment:
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
            sweep=dict(d.get("sweep", {})), rcp=dict(d.get("rcp", {})), source=path,
            scheme_tables={name: _scheme_table(name, t, where) for name, t in d.get("scheme", {}).items()},
            seeds=list(seeds or d.get("seeds", [1])))
    except KeyError as e:
        raise ExperimentError(f"{where}: missing key {e}") from None
    except (TypeError, ValueError) as e:
        raise ExperimentError(f"{where}: {e}") from None
    _validate(exp, where)
    return exp


def _scheme_table(name: str, table: dict, where: str) -> Scheme:
    unknown = set(table) - {"cc", "rcp", "initcwnd"}
    if unknown:
        raise ExperimentError(f"{where}: [scheme.{name}]: unknown keys {sorted(unknown)} (cc, rcp, initcwnd)")
    scheme = Scheme(name, table["cc"], dict(table.get("rcp", {})), table.get("initcwnd"))
    if not _is_host_scheme(scheme.cc):
        raise ExperimentError(f"{where}: [scheme.{name}]: unknown cc {scheme.cc!r}")
    if scheme.initcwnd is not None and not (scheme.is_tcp and isinstance(scheme.initcwnd, int) and scheme.initcwnd > 0):
        raise ExperimentError(f"{where}: [scheme.{name}]: initcwnd is a positive number of segments, for tcp only")
    return scheme


def _validate(exp: Experiment, where: str) -> None:
    if not exp.topology_file.is_file():
        raise ExperimentError(f"{where}: topology file {exp.topology_file} does not exist")
    unknown = [s for s in exp.schemes if s not in exp.scheme_tables and not _is_host_scheme(s)]
    if unknown or not exp.schemes:
        raise ExperimentError(f"{where}: unknown schemes {unknown}; known: {', '.join(SCHEMES)}, tcp:ALGO, "
                              f"fixed:RATE (e.g. fixed:4mbit), or a [scheme.NAME] table")
    if not exp.seeds or len(set(exp.seeds)) != len(exp.seeds) \
            or not all(isinstance(s, int) and s >= 0 for s in exp.seeds):
        raise ExperimentError(f"{where}: seeds must be distinct integers >= 0, got {exp.seeds}")
    if exp.duration_s <= 0:
        raise ExperimentError(f"{where}: duration_s must be > 0")
    if not exp.long_flows and not exp.poisson:
        raise ExperimentError(f"{where}: no traffic (no [[long]] and no [[poisson]])")
    if exp.poisson and not (exp.load and 0 < exp.load < 1 or "load" in exp.sweep):
        raise ExperimentError(f"{where}: [[poisson]] sources need a total load in (0, 1)")
    for name in exp.schemes:
        try:
            exp.rcp_params(exp.scheme(name))
        except (TypeError, ValueError) as e:
            raise ExperimentError(f"{where}: RCP parameters of {name} ([rcp], [scheme.{name}] rcp): {e}") from None
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
        senders = [f.sender for f in [*exp.long_flows, *exp.poisson]]
        shared = sorted({s for s in senders if senders.count(s) > 1})
        if shared:
            raise ExperimentError(f"{where}: hosts {shared} send more than one [[long]] or [[poisson]]; "
                                  f"each sender host writes one flow record file")
        if v.load is not None and not 0 < v.load < 1:
            raise ExperimentError(f"{where}: load {v.load} not in (0, 1)")

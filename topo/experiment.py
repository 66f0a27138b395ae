"""Experiment definitions (topo/experiments/*.toml) as validated data."""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from string import Formatter

from p4rcp.params import RcpParams
from p4rcp.presets import PRESETS, Preset, describe_routers
from p4rcp.tables import number, string, table_of, tables_of, unknown_keys
from p4rcp.topology import Topology, load_topology
from p4rcp.topology import parameters as topology_parameters

EXPERIMENTS_DIR = Path(__file__).resolve().parent / "experiments"
TOPOLOGIES_DIR = Path(__file__).resolve().parent / "topologies"
# An experiment that names no schemes runs these. A scheme's name is a preset (p4rcp/presets.py), else any
# --cc of the hosts (tcp:reno, fixed:8mbit, ...), which the host binary judges (topo/host_check.py).
DEFAULT_SCHEMES = ("rcp", "tcp", "allegro", "vivace")
# The RcpParams fields that are an experiment's own, not a scheme's: the operator's DSCP weights, which name the
# DSCPs its flows carry. Shipped experiment files set no other ([rcp], [scheme.NAME] rcp): router settings are
# presets (topo/tests/test_experiment.py checks).
EXPERIMENT_SETTINGS = ("dscp_weights",)
LINUX_INITCWND = 10     # segments: the kernel's initial window where the route sets none (RFC 6928)


# What an external scheme's command lines may name (Scheme.sender_command and receiver_command fill them in).
EXTERNAL_PLACEHOLDERS = ("receiver_ip", "sender_ip", "port", "duration_s", "flow_id")
EXTERNAL_PORT = 9000


@dataclass(frozen=True)
class Scheme:
    """One row of the results: the hosts' congestion control (p4rcp-host --cc) and its settings.

    An experiment names its schemes; a name is a [scheme.NAME] table of the experiment, else a preset
    (p4rcp/presets.py: the hosts' cc, the routers' RCP parameters, TCP's initial window), else a scheme of the
    hosts (tcp:reno, fixed:8mbit, ...). A table is an external scheme: the commands that start another
    program's receiver and sender (a reference implementation), whose delivered payload p4rcp measures itself
    (topo/mininet/external.py); or a cc with settings of the experiment's own (EXPERIMENT_SETTINGS)."""
    name: str
    cc: str
    rcp: dict = field(default_factory=dict)   # RcpParams overrides, on top of the experiment's [rcp]
    initcwnd: int | None = None               # TCP only; None: the kernel's default
    sender: str | None = None                 # external: command templates (EXTERNAL_PLACEHOLDERS)
    receiver: str | None = None
    port: int = EXTERNAL_PORT                 # external: the port its receiver listens on
    preset: str | None = None                 # the preset it is, if it is one

    @classmethod
    def of_preset(cls, p: Preset) -> Scheme:
        return cls(p.name, p.cc, dict(p.rcp), p.initcwnd, preset=p.name)

    @property
    def is_tcp(self) -> bool:
        return self.cc == "tcp" or self.cc.startswith("tcp:")

    @property
    def is_external(self) -> bool:
        return self.sender is not None

    @property
    def router(self) -> str:
        """The routers it runs over, on either engine: XCP hosts over XCP routers (docs/xcp.md), every other scheme
        over RCP's."""
        return "xcp" if self.cc == "xcp" else "rcp"

    def sender_command(self, *, sender_ip: str, receiver_ip: str, duration_s: float, flow_id: int) -> list[str]:
        """An external scheme's sender for one flow."""
        return shlex.split(self.sender.format(sender_ip=sender_ip, receiver_ip=receiver_ip, port=self.port,
                                              duration_s=f"{duration_s:g}", flow_id=flow_id))

    def receiver_command(self, *, receiver_ip: str) -> list[str]:
        """An external scheme's receiver."""
        return shlex.split(self.receiver.format(sender_ip="", receiver_ip=receiver_ip, port=self.port,
                                                duration_s="", flow_id=""))

    def describe(self, rcp_params: RcpParams) -> str:
        """What ran, in words, for the summary: the preset it is, the hosts' and the routers' settings."""
        if self.is_external:
            return (f"external programs (goodput measured at the receiving host): receiver `{self.receiver}`, "
                    f"sender `{self.sender}`; routers stamp R, unused")
        if self.is_tcp:
            algo = self.cc.removeprefix("tcp").removeprefix(":") or "cubic"
            window = (f"initial window {self.initcwnd} segments (route initcwnd)" if self.initcwnd
                      else f"initial window {LINUX_INITCWND} segments (Linux's default)")
            ran = f"kernel TCP, congestion control {algo}, {window}"
        elif self.cc == "rcp":
            ran = f"rcp senders; {describe_routers(rcp_params)}"
        else:
            ran = f"{self.cc} senders (routers stamp R, unused)"
        return f"preset {self.preset}: {ran}" if self.preset else ran


class ExperimentError(ValueError):
    pass


@dataclass(frozen=True)
class LongFlow:
    sender: str
    receiver: str
    start_s: float
    stop_s: float | None      # None: until the experiment ends
    cc: str | None = None     # this flow's own scheme whatever the run's (a fixed-rate sender among RCP flows)
    dscp: int = 0             # the DSCP its packets carry (routers may map it to a weight class)


@dataclass(frozen=True)
class PoissonSource:
    sender: str
    receiver: str
    sizes: str                # p4rcp-host --sizes syntax
    exact_load: bool = False  # p4rcp-host --exact-load: every seed offers the nominal load
    repeat_every_s: float | None = None  # p4rcp-host --repeat-every: one period's arrivals, played again each period
    arrivals: str = "poisson"  # p4rcp-host --arrivals: poisson, or pareto:SHAPE (bursts and lulls, same mean rate)


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
    tcp_flows: int = 0        # the first this many long flows run the kernel's TCP instead of the run's scheme


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
    tcp_flows: int = 0                            # the first this many long flows run kernel TCP (sweepable)
    tcp_cc: str = "tcp"                           # the TCP those flows run (tcp, tcp:reno, ...)
    rcp: dict = field(default_factory=dict)       # RcpParams overrides for the control loops
    scheme_tables: dict[str, Scheme] = field(default_factory=dict)   # [scheme.NAME]
    seeds: list[int] = field(default_factory=lambda: [1])   # one run per seed: workloads and senders' randomness

    def scheme(self, name: str) -> Scheme:
        """The scheme a name stands for: the experiment's [scheme.NAME], a preset, else the hosts' cc of that
        name (which the host binary judges: topo/host_check.py)."""
        if name in self.scheme_tables:
            return self.scheme_tables[name]
        if name in PRESETS:
            return Scheme.of_preset(PRESETS[name])
        return Scheme(name, name)

    def rcp_overrides(self, scheme: Scheme) -> dict:
        """RcpParams fields this scheme's runs set: the experiment's [rcp], then the scheme's own. A scheme that
        is not RCP runs over routers that leave its TCP alone (tcp_coupling off): TCP, PCC and XCP are measured
        behind the drop-tail queue they were designed for."""
        fixed = {} if scheme.cc == "rcp" else {"tcp_coupling": False}
        return {**self.rcp, **scheme.rcp, **fixed}

    def rcp_params(self, scheme: Scheme, topology: Topology | None = None) -> RcpParams:
        """The routers' parameters in this scheme's runs; on a topology, its data frame is the queue's packet
        unless the experiment says otherwise."""
        frame = {"queue_packet_bytes": topology.data_frame_bytes} if topology is not None else {}
        return RcpParams(**{**frame, **self.rcp_overrides(scheme)})

    def run_count(self) -> int:
        """Runs of one invocation: one per sweep point, seed and scheme."""
        return max(1, len(next(iter(self.sweep.values()), [None]))) * len(self.seeds) * len(self.schemes)

    def variants(self) -> list[Variant]:
        if not self.sweep:
            return [Variant("", load_topology(self.topology_file, **self.topology_params), self.load,
                            self.tcp_flows)]
        [(key, values)] = self.sweep.items()
        out = []
        for value in values:
            label = f"{key}={_label(value)}"
            if key == "load":
                out.append(Variant(label, load_topology(self.topology_file, **self.topology_params), value,
                                   self.tcp_flows))
            elif key == "tcp_flows":
                out.append(Variant(label, load_topology(self.topology_file, **self.topology_params), self.load,
                                   value))
            else:
                params = dict(self.topology_params, **{key: value})
                out.append(Variant(label, load_topology(self.topology_file, **params), self.load, self.tcp_flows))
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


# Every table's keys: any other is a typo, refused with the closest of these.
SUITE_KEYS = {"description", "suite", "schemes"}
EXPERIMENT_KEYS = {"description", "topology", "schemes", "duration_s", "seeds", "load", "topology_params", "long",
                   "poisson", "events", "sweep", "rcp", "scheme", "tcp_flows", "tcp_cc"}
LONG_KEYS = {"sender", "receiver", "start_s", "stop_s", "cc", "dscp"}
POISSON_KEYS = {"sender", "receiver", "sizes", "exact_load", "repeat_every_s", "arrivals"}
EVENT_KEYS = {"at_s", "bottleneck_scale"}
SCHEME_KEYS = {"cc", "rcp", "initcwnd", "sender", "receiver", "port"}
RCP_KEYS = {f.name for f in fields(RcpParams)}
MAX_DURATION_S = 86_400.0
# Long flows' ids are 1000 x seed + index (topo/schedule.py) and must fit the hosts' 32-bit flow ids.
MAX_SEED = 4_000_000


def _check_keys(table: dict, known: set[str], where: str) -> None:
    message = unknown_keys(table, known, where)
    if message:
        raise ExperimentError(message)


def load_invocation(name_or_path: str, schemes: list[str] | None = None, duration_s: float | None = None,
                    seeds: list[int] | None = None) -> list[Experiment]:
    """What `python -m topo.run NAME` would run: an experiment, or a suite's members, parsed and validated (the
    runner then has the host binary check them: topo/host_check.py)."""
    path = resolve(name_or_path)
    suite = load_suite(path)
    members = suite.members if suite else [path]
    schemes = schemes or (suite.schemes if suite else None)
    return [load_experiment(member, schemes, duration_s, seeds) for member in members]


def load_suite(path: Path) -> Suite | None:
    """The experiments a suite file lists (and the schemes it runs them with), or None for a plain experiment."""
    data = _read(path)
    if "suite" not in data:
        return None
    _check_keys(data, SUITE_KEYS, f"{path.name} (a suite)")
    members, schemes = data["suite"], data.get("schemes")
    if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
        raise ExperimentError(f"{path.name}: suite must be a non-empty list of experiment names, got {members!r}")
    if schemes is not None and not _names(schemes):
        raise ExperimentError(f"{path.name}: schemes must be a non-empty list of names, got {schemes!r}")
    return Suite([resolve(name) for name in members], schemes)


def _names(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(s, str) and s for s in value)


# A scheme's name names its results' directories and the report's rows: letters, digits and . _ : + -.
SCHEME_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+-]*")


def _check_scheme_names(names, where: str) -> None:
    for name in names:
        if not SCHEME_NAME.fullmatch(name):
            raise ExperimentError(f"{where}: scheme name {name!r} is not a name (letters, digits and . _ : + -, "
                                  f"starting with a letter or digit)")


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ExperimentError(f"{path}: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ExperimentError(f"{path}: {e}") from None


def load_experiment(path: Path, schemes: list[str] | None = None, duration_s: float | None = None,
                    seeds: list[int] | None = None, *, recorded: bool = False) -> Experiment:
    """An experiment file as validated data: every key known, every value of its type and range, every host
    and topology parameter existing. Whether the host binary accepts its schemes and workloads is the runner's
    check (topo/host_check.py).

    A [scheme.NAME] table may not take a preset's name (a preset is defined once, in p4rcp/presets.py), unless
    the file is `recorded`: the copy a results directory keeps of what ran, whose tables are what its runs
    ran under those names."""
    d = _read(path)
    where = path.name
    try:
        exp = _parse(d, path, where, schemes, duration_s, seeds, recorded)
    except ExperimentError:
        raise
    except (TypeError, ValueError) as e:          # TopologyError and the tables' messages name their key
        raise ExperimentError(str(e) if str(e).startswith(where) else f"{where}: {e}") from None
    _validate(exp, where)
    return exp


def _parse(d: dict, path: Path, where: str, schemes, duration_s, seeds, recorded: bool) -> Experiment:
    if "suite" in d:
        raise ExperimentError(f"{where} is a suite of experiments, not one; run it by name")
    _check_keys(d, EXPERIMENT_KEYS, where)
    topology_file = TOPOLOGIES_DIR / f"{string(d, 'topology', where)}.toml"
    if not topology_file.is_file():
        raise ExperimentError(f"{where}: topology file {topology_file} does not exist")
    kind = _read(topology_file).get("kind")
    topology_params = table_of(d, "topology_params", where)
    _check_keys(topology_params, set(topology_parameters(kind)) - {"kind"}, f"{where} [topology_params]")
    sweep = table_of(d, "sweep", where)
    _check_keys(sweep, (set(topology_parameters(kind)) - {"kind"}) | {"load", "tcp_flows"}, f"{where} [sweep]")
    for key, values in sweep.items():
        if not isinstance(values, list) or not values:
            raise ExperimentError(f"{where} [sweep]: {key} must be a non-empty list of values, got {values!r}")
    rcp = table_of(d, "rcp", where)
    _check_keys(rcp, RCP_KEYS, f"{where} [rcp]")
    scheme_tables = table_of(d, "scheme", where)
    _check_scheme_names(scheme_tables, where)
    redefined = sorted(set(scheme_tables) & set(PRESETS))
    if redefined and not recorded:
        raise ExperimentError(f"{where} [scheme.{redefined[0]}]: {redefined[0]} is a preset (p4rcp/presets.py): name "
                              f"it in schemes without a table, or give a variant of the experiment's own a name "
                              f"of its own")
    listed = d.get("schemes", list(DEFAULT_SCHEMES))
    if not _names(listed):
        raise ExperimentError(f"{where}: schemes must be a non-empty list of names, got {listed!r}")
    _check_scheme_names(schemes or listed, where)
    listed_seeds = d.get("seeds", [1])
    if not isinstance(listed_seeds, list):
        raise ExperimentError(f"{where}: seeds must be a list of integers, got {listed_seeds!r}")
    return Experiment(
        name=path.stem, description=string(d, "description", where, default=""), topology_file=topology_file,
        schemes=list(schemes or listed),
        duration_s=float(duration_s or number(d, "duration_s", where, above=0, below=MAX_DURATION_S)),
        load=number(d, "load", where, above=0, below=1, default=None), topology_params=dict(topology_params),
        long_flows=[_long_flow(f, f"{where} [[long]] #{i + 1}") for i, f in enumerate(tables_of(d, "long", where))],
        poisson=[_poisson(f, f"{where} [[poisson]] #{i + 1}") for i, f in enumerate(tables_of(d, "poisson", where))],
        events=[_event(e, f"{where} [[events]] #{i + 1}") for i, e in enumerate(tables_of(d, "events", where))],
        sweep=dict(sweep), rcp=dict(rcp), source=path,
        tcp_flows=number(d, "tcp_flows", where, integer=True, minimum=0, default=0),
        tcp_cc=string(d, "tcp_cc", where, default="tcp"),
        scheme_tables={name: _scheme_table(name, t, where) for name, t in scheme_tables.items()},
        seeds=list(seeds or listed_seeds))


def _long_flow(f: dict, where: str) -> LongFlow:
    _check_keys(f, LONG_KEYS, where)
    start = number(f, "start_s", where, minimum=0, below=MAX_DURATION_S, default=0.0)
    stop = number(f, "stop_s", where, above=start, default=None)
    return LongFlow(string(f, "sender", where), string(f, "receiver", where), float(start),
                    None if stop is None else float(stop), string(f, "cc", where, default=None),
                    number(f, "dscp", where, integer=True, minimum=0, below=64, default=0))


def _poisson(f: dict, where: str) -> PoissonSource:
    _check_keys(f, POISSON_KEYS, where)
    exact = f.get("exact_load", False)
    if not isinstance(exact, bool):
        raise ExperimentError(f"{where}: exact_load must be true or false, got {exact!r}")
    repeat = number(f, "repeat_every_s", where, above=0, below=MAX_DURATION_S, default=None)
    return PoissonSource(string(f, "sender", where), string(f, "receiver", where), string(f, "sizes", where), exact,
                         None if repeat is None else float(repeat), string(f, "arrivals", where, default="poisson"))


def _event(e: dict, where: str) -> Event:
    _check_keys(e, EVENT_KEYS, where)
    return Event(float(number(e, "at_s", where, above=0)), float(number(e, "bottleneck_scale", where, above=0)))


def _scheme_table(name: str, table, where: str) -> Scheme:
    here = f"{where} [scheme.{name}]"
    if not isinstance(table, dict):
        raise ExperimentError(f"{here} must be a table, got {table!r}")
    _check_keys(table, SCHEME_KEYS, here)
    if "sender" in table or "receiver" in table:
        return _external_scheme(name, table, here)
    rcp = table_of(table, "rcp", here)
    _check_keys(rcp, RCP_KEYS, f"{here} rcp")
    initcwnd = number(table, "initcwnd", here, integer=True, above=0, default=None)
    if "port" in table:
        raise ExperimentError(f"{here}: port is for external schemes (with sender and receiver commands)")
    scheme = Scheme(name, string(table, "cc", here), dict(rcp), initcwnd)
    if scheme.initcwnd is not None and not scheme.is_tcp:
        raise ExperimentError(f"{here}: initcwnd is a positive number of segments, for tcp only")
    return scheme


def _external_scheme(name: str, table: dict, here: str) -> Scheme:
    """A scheme run by other programs: sender and receiver command templates, nothing of p4rcp-host's."""
    other = sorted(set(table) & {"cc", "rcp", "initcwnd"})
    if other:
        raise ExperimentError(f"{here}: an external scheme (sender, receiver) takes no {', '.join(other)}")
    commands = {key: string(table, key, here) for key in ("sender", "receiver")}
    for key, command in commands.items():
        try:
            names = {field_name for _, field_name, _, _ in Formatter().parse(command) if field_name is not None}
        except ValueError as e:
            raise ExperimentError(f"{here}: {key} {command!r}: {e}") from None
        unknown = sorted(names - set(EXTERNAL_PLACEHOLDERS))
        if unknown:
            raise ExperimentError(f"{here}: {key} names {{{unknown[0]}}}; it may name "
                                  f"{', '.join('{' + p + '}' for p in EXTERNAL_PLACEHOLDERS)}")
    port = number(table, "port", here, integer=True, above=0, below=65536, default=EXTERNAL_PORT)
    return Scheme(name, "external", sender=commands["sender"], receiver=commands["receiver"], port=port)


def _validate(exp: Experiment, where: str) -> None:
    if not exp.seeds or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < MAX_SEED
                                for s in exp.seeds) or len(set(exp.seeds)) != len(exp.seeds):
        raise ExperimentError(f"{where}: seeds must be distinct integers from 0 to {MAX_SEED - 1}, got {exp.seeds}")
    if not exp.long_flows and not exp.poisson:
        raise ExperimentError(f"{where}: no traffic (no [[long]] and no [[poisson]])")
    if exp.poisson and not (exp.load or "load" in exp.sweep):
        raise ExperimentError(f"{where}: [[poisson]] sources need a total load in (0, 1)")
    for v_tcp in exp.sweep.get("tcp_flows", [exp.tcp_flows]):
        if isinstance(v_tcp, bool) or not isinstance(v_tcp, int) or not 0 <= v_tcp <= len(exp.long_flows):
            raise ExperimentError(f"{where}: tcp_flows counts long flows, from 0 to {len(exp.long_flows)}, got {v_tcp!r}")
    if not (exp.tcp_cc == "tcp" or exp.tcp_cc.startswith("tcp:")):
        raise ExperimentError(f"{where}: tcp_cc is the TCP that tcp_flows run, tcp or tcp:ALGO, got {exp.tcp_cc!r}")
    external = [name for name in exp.schemes if exp.scheme(name).is_external]
    if external and (exp.tcp_flows or "tcp_flows" in exp.sweep or any(f.cc for f in exp.long_flows)):
        raise ExperimentError(f"{where}: external schemes ({', '.join(external)}) run every long flow: no tcp_flows "
                              f"and no per-flow cc")
    if external and exp.poisson:
        raise ExperimentError(f"{where}: external schemes ({', '.join(external)}) run [[long]] flows only: p4rcp "
                              f"starts one sender command per flow, not a workload of many")
    for name in exp.schemes:
        try:
            exp.rcp_params(exp.scheme(name))
        except (TypeError, ValueError) as e:
            raise ExperimentError(f"{where}: RCP parameters of {name} ([rcp], [scheme.{name}] rcp): {e}") from None
    if len(exp.sweep) > 1:
        raise ExperimentError(f"{where}: sweep one parameter at a time, got {sorted(exp.sweep)}")
    for src in exp.poisson:
        if src.repeat_every_s is not None and src.repeat_every_s > exp.duration_s:
            raise ExperimentError(f"{where}: a [[poisson]] source of {src.sender} repeats every "
                                  f"{src.repeat_every_s:g} s, longer than the run's {exp.duration_s:g} s")
    for flow in exp.long_flows:
        if not flow.start_s < exp.duration_s:
            raise ExperimentError(f"{where}: a long flow of {flow.sender} starts at {flow.start_s:g} s, after the "
                                  f"run's {exp.duration_s:g} s")
    for e in exp.events:
        if not e.at_s < exp.duration_s:
            raise ExperimentError(f"{where}: event at {e.at_s} s is not within the run's {exp.duration_s:g} s")
    try:
        variants = exp.variants()
    except (TypeError, ValueError) as e:
        raise ExperimentError(f"{where}: {e}") from None
    for v in variants:
        hosts = v.topology.hosts
        for flow in [*exp.long_flows, *exp.poisson]:
            for name in (flow.sender, flow.receiver):
                if name not in hosts:
                    raise ExperimentError(f"{where}: host {name!r} is not in topology ({', '.join(hosts)})")
            if flow.sender not in v.topology.senders or flow.receiver not in v.topology.receivers:
                raise ExperimentError(f"{where}: a flow goes from a sender ({', '.join(v.topology.senders)}) to a "
                                      f"receiver ({', '.join(v.topology.receivers)}), not {flow.sender} -> "
                                      f"{flow.receiver}")
        senders = [f.sender for f in [*exp.long_flows, *exp.poisson]]
        shared = sorted({s for s in senders if senders.count(s) > 1})
        if shared:
            raise ExperimentError(f"{where}: hosts {shared} send more than one [[long]] or [[poisson]]; "
                                  f"each sender host writes one flow record file")
        if v.load is not None and (isinstance(v.load, bool) or not isinstance(v.load, (int, float))
                                   or not 0 < v.load < 1):
            raise ExperimentError(f"{where}: load {v.load!r} not in (0, 1)")

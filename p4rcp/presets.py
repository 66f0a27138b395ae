"""The named schemes, defined once: what the hosts run and how the routers are set for each.

An experiment names presets in its `schemes` (topo/experiment.py resolves a name: a preset, else a scheme of
the hosts); the standalone controller (`python -m control_plane --preset NAME [--param KEY=VALUE ...]`) and
the fluid model (`python -m control_plane.fluid --preset NAME`) take them by name too. A preset's `rcp` holds
only the RcpParams fields it sets; every other field is RcpParams' default, so `rcp`, which sets none, means
"the defaults" whatever they are. A preset that must keep its meaning when the defaults change (rcp-plain,
rcp-papers, rcp-ns2) writes out every field its meaning rests on.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType

from p4rcp.params import RcpParams


@dataclass(frozen=True)
class Preset:
    name: str
    cc: str                   # the hosts' congestion control (p4rcp-host --cc)
    summary: str              # what it is and when to pick it, one line
    rcp: Mapping = field(default_factory=dict, hash=False)   # RcpParams fields the routers take from it
    initcwnd: int | None = None                               # TCP's initial window (segments); None: the kernel's

    def __post_init__(self):
        object.__setattr__(self, "rcp", MappingProxyType(dict(self.rcp)))

    @property
    def sets_routers(self) -> bool:
        """Whether it is an RCP scheme, whose routers' settings it names (the hosts run rcp)."""
        return self.cc == "rcp"

    def params(self, settings: Mapping = MappingProxyType({}), **overrides) -> RcpParams:
        """The routers' parameters: RcpParams' defaults, then `settings` (what is not the preset's to decide:
        the topology's data frame, an operator's weights), then the preset's own fields, then `overrides`
        (a command line's --param)."""
        return RcpParams(**{**settings, **self.rcp, **overrides})


# The papers' law with the ns-2 router's gains, no feedforward: written out, not left to the defaults.
_PLAIN = {"alpha": 0.4, "beta": 0.4, "queue_reads": 1, "overload_floor": False, "feedforward": False,
          "tcp_coupling": False}

PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("rcp", "rcp", "RCP as the routers run it by default (RcpParams' defaults): the scheme to compare "
                         "the others with"),
    Preset("rcp-plain", "rcp", "the RCP papers' law with the ns-2 router's gains and no feedforward: the "
                               "reference that the default's additions are measured against", _PLAIN),
    Preset("rcp-papers", "rcp", "the RCP papers' own gains, no feedforward: a queued bit weighs ten times a bit "
                                "of spare capacity; the smallest queues, the slowest to fill the link",
           {"alpha": 0.1, "beta": 1.0, "queue_reads": 1, "overload_floor": False, "feedforward": False,
            "tcp_coupling": False}),
    Preset("rcp-ns2", "rcp", "rcp-plain with the ns-2 router's d0 estimator (quickly up, slowly down, so d0 "
                             "stays near the larger RTTs): where the flows' RTTs differ",
           {**_PLAIN, "d0_estimator": "ns2"}),
    Preset("rcp-police", "rcp", "the default with policing of the senders that exceed their stamp: where a "
                                "sender may ignore R", {"police": True}),
    Preset("reno-iw2", "tcp:reno", "the kernel's TCP Reno with RFC 2581's initial window of 2 segments: the TCP "
                                   "of the RCP talk's time", initcwnd=2),
)}


class UnknownPreset(ValueError):
    pass


def preset(name: str) -> Preset:
    """The preset of that name; UnknownPreset naming the known ones."""
    try:
        return PRESETS[name]
    except KeyError:
        raise UnknownPreset(f"no preset {name!r}; the presets: {', '.join(PRESETS)}") from None


def router_preset(name: str) -> Preset:
    """A preset that sets the routers (an RCP scheme), for a control plane or a model of one."""
    p = preset(name)
    if not p.sets_routers:
        routers = ", ".join(q.name for q in PRESETS.values() if q.sets_routers)
        raise UnknownPreset(f"preset {name!r} sets the hosts' congestion control ({p.cc}), not the routers; the "
                            f"routers' presets: {routers}")
    return p


def describe_routers(p: RcpParams) -> str:
    """The routers' settings in words, for what a run says it ran."""
    weights = ", ".join(f"{int(d)}: {w:g}" for d, w in sorted(p.dscp_weights.items(), key=lambda i: int(i[0])))
    return (f"routers alpha {p.alpha:g}, beta {p.beta:g}, gamma {p.gamma:g}, q0 {p.q0_bytes / 1000:g} kB, "
            f"T = min({p.T_max_s * 1000:g} ms, d0), d0 by {p.d0_estimator}"
            + (", flow-count feedforward (new flows stamped to fit, R scaled by N / (N + a - l), each flow "
               "weighed by the share of a round trip it lasts)" if p.feedforward else "")
            + (", policing" if p.police else "")
            + (f", weights by DSCP {weights} (any other DSCP 1)" if p.dscp_weights else ""))


def parse_param(text: str) -> tuple[str, object]:
    """A command line's KEY=VALUE as an RcpParams field and a value of its type: a number, an integer, true or
    false, a word, or DSCP:W[,DSCP:W ...] for dscp_weights (empty: none). KEY is the field's name (case and
    - for _ as you like). ValueError naming the key, the closest known one, or the type it wants; RcpParams
    itself judges the value's range."""
    key, sep, value = text.partition("=")
    if not sep:
        raise ValueError(f"--param takes KEY=VALUE, got {text!r}")
    names = [f.name for f in fields(RcpParams)]
    f = {f.name.lower(): f for f in fields(RcpParams)}.get(key.strip().lower().replace("-", "_"))
    if f is None:
        close = difflib.get_close_matches(key.strip(), names, n=1, cutoff=0.6)
        raise ValueError(f"--param: no RCP parameter {key!r}; "
                         + (f"did you mean {close[0]!r}?" if close else f"the keys: {', '.join(names)}"))
    kind = f.type if isinstance(f.type, str) else f.type.__name__
    value = value.strip()
    try:
        if kind == "bool":
            if value.lower() not in ("true", "false"):
                raise ValueError
            return f.name, value.lower() == "true"
        if kind == "int":
            return f.name, int(value)
        if kind == "float":
            return f.name, float(value)
        if kind == "str":
            return f.name, value
        if kind == "Mapping":
            return f.name, _pairs(value)
    except ValueError:
        wants = {"bool": "true or false", "int": "an integer", "float": "a number",
                 "Mapping": "DSCP:W[,DSCP:W ...]"}[kind]
        raise ValueError(f"--param {f.name} takes {wants}, got {value!r}") from None
    raise ValueError(f"--param: {f.name} ({kind}) cannot be set from the command line")


def _pairs(text: str) -> dict[str, float]:
    out = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = pair.partition(":")
        if not sep:
            raise ValueError
        out[key.strip()] = float(value)
    return out

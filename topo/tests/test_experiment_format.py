"""The experiment format against mistakes: mutants of the shipped experiment and topology files.

Each mutant drops, renames, retypes a key or pushes a number out of its range. It must either load into the
experiment the file says (a dropped optional key takes its default) or stop with one line naming the file,
before any network is built: never a traceback, never a run with a value nobody wrote.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4rcp.topology import TopologyError, load_topology
from topo import experiment
from topo.experiment import EXPERIMENTS_DIR, TOPOLOGIES_DIR, ExperimentError, load_experiment, load_invocation
from topo.host_check import check_with_hosts

EXPERIMENT_FILES = sorted(p for p in EXPERIMENTS_DIR.glob("*.toml") if "suite" not in tomllib.loads(p.read_text()))
TOPOLOGY_FILES = sorted(TOPOLOGIES_DIR.glob("*.toml"))
# Values out of range for keys whose range is known, by key name, wherever the key appears.
OUT_OF_RANGE = {
    "duration_s": [0, -5, 1e9], "load": [0, 1, 1.5, -0.2], "seeds": [[-1], [1, 1], [10 ** 9]],
    "start_s": [-1, 1e9], "stop_s": [-1], "at_s": [0, -1, 1e9], "bottleneck_scale": [0, -0.5],
    "pairs": [0, -2], "bottlenecks": [0], "bottleneck_mbps": [0, -10], "rtt_ms": [0, -40],
    "queue_packets": [0, -1], "loss_pct": [-1, 100, 250], "access_speedup": [0.5, 0, -1],
    "data_frame_bytes": [0, 10, 100_000], "alpha": [0, -0.4], "beta": [0, -1], "initcwnd": [0, -3],
    "sizes": ["pareto:0.5:25000", "fixed:0", "uniform:1"],
}
TYPES = ["a string", 7, True, [1, 2], {"x": 1}]
# Keys that take values of several kinds: a number or a list (one value per pair or per link), a number or
# "bdp" (which a retype to "a string" is not).
OTHER_KINDS = {"rtt_ms": ("number", "list"), "bottleneck_mbps": ("number", "list"), "queue_packets": ("number",)}


def kind(x) -> str:
    if isinstance(x, bool):
        return "bool"
    return {int: "number", float: "number", str: "str", list: "list", dict: "table"}[type(x)]


def paths(data, prefix=()):
    """Every (path, value) of a key in a table, through tables and arrays of tables."""
    for key, value in data.items():
        yield prefix + (key,), value
        if isinstance(value, dict):
            yield from paths(value, prefix + (key,))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, item in enumerate(value):
                yield from paths(item, prefix + (key, i))


def container(data, path):
    for step in path[:-1]:
        data = data[step]
    return data


def same_kind(a, b) -> bool:
    """Two values of one kind: numbers (an integer or a float), or the same type."""
    return kind(a) == kind(b)


@st.composite
def mutants(draw, files):
    path = draw(st.sampled_from(files))
    data = tomllib.loads(path.read_text())
    key_path, value = draw(st.sampled_from(list(paths(data))))
    table, key = container(data, key_path), key_path[-1]
    op = draw(st.sampled_from(["drop", "rename", "retype", "range"]))
    if op == "range" and key not in OUT_OF_RANGE:
        op = "retype"
    must_fail = True
    if op == "drop":
        del table[key]
        must_fail = False                    # optional keys take their defaults
    elif op == "rename":
        i = draw(st.integers(0, len(key) - 1))
        typo = draw(st.sampled_from([key[:i] + key[i + 1:], key[:i] + "x" + key[i:], key + "s", key.upper()]))
        if typo in table or not typo:
            typo = key + "_typo"
        table[typo] = table.pop(key)
        # dscp_weights' keys are DSCP values: a rename to another DSCP (10 -> 1) is another valid weight
        must_fail = not (len(key_path) > 1 and key_path[-2] == "dscp_weights" and typo.isdigit() and int(typo) < 64)
    elif op == "retype":
        new = draw(st.sampled_from([t for t in TYPES if not same_kind(t, value)]))
        table[key] = new
        # A table whose keys are free (sweep points, named schemes) may take new members of any name; a key
        # that takes a list as well as a number may take the list.
        must_fail = not isinstance(value, dict) and kind(new) not in OTHER_KINDS.get(key, ())
    else:
        table[key] = draw(st.sampled_from(OUT_OF_RANGE[key]))
    return path, data, f"{op} {'.'.join(map(str, key_path))}", must_fail


def one_line(error: Exception, name: str) -> None:
    message = str(error)
    assert "\n" not in message, f"several lines: {message!r}"
    assert name in message, f"the message does not name the file {name}: {message!r}"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutants(EXPERIMENT_FILES))
def test_a_mutated_experiment_loads_as_written_or_stops_with_one_line(tmp_path, mutant):
    source, data, what, must_fail = mutant
    path = tmp_path / source.name
    path.write_text(tomli_w.dumps(data))
    try:
        [exp] = load_invocation(str(path))
        check_with_hosts(exp)
    except ExperimentError as e:
        one_line(e, source.name)
        return
    assert not must_fail, f"{what}: loaded without a word"
    assert exp.duration_s == data["duration_s"]
    assert exp.topology_params == data.get("topology_params", {})
    assert exp.schemes == data.get("schemes", list(experiment.DEFAULT_SCHEMES))
    assert exp.seeds == data.get("seeds", [1])
    assert [(f.sender, f.receiver, f.start_s) for f in exp.long_flows] == \
        [(f["sender"], f["receiver"], f.get("start_s", 0)) for f in data.get("long", [])]
    assert [p.sizes for p in exp.poisson] == [p["sizes"] for p in data.get("poisson", [])]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutants(TOPOLOGY_FILES))
def test_a_mutated_topology_loads_as_written_or_stops_with_one_line(tmp_path, mutant):
    source, data, what, must_fail = mutant
    path = tmp_path / source.name
    path.write_text(tomli_w.dumps(data))
    try:
        topology = load_topology(path)
    except TopologyError as e:
        assert "\n" not in str(e), f"several lines: {e}"
        return
    assert not must_fail, f"{what}: loaded without a word"
    assert topology.kind == data["kind"]


def edited_experiment(tmp_path, name: str, edit) -> Path:
    """experiments/<name> with edit(data) applied to its data, written to tmp_path/<name>."""
    data = tomllib.loads((EXPERIMENTS_DIR / name).read_text())
    edit(data)
    path = tmp_path / name
    path.write_text(tomli_w.dumps(data))
    return path


@pytest.mark.parametrize("edit,message", [
    (("load", "laod"), "unknown key 'laod'; did you mean 'load'?"),
    (("duration_s", "duration"), "unknown key 'duration'; did you mean 'duration_s'?"),
])
def test_a_misspelt_key_names_the_closest_known_one(tmp_path, edit, message):
    path = edited_experiment(tmp_path, "fct-short.toml", lambda d: d.update({edit[1]: d.pop(edit[0])}))
    with pytest.raises(ExperimentError, match=re.escape(f"fct-short.toml: {message}")):
        load_experiment(path)


def test_unknown_keys_are_refused_at_every_level(tmp_path):
    for where, edit in {"[topology_params]": lambda d: d["topology_params"].update(bottlneck_mbps=10),
                        "[[poisson]] #2": lambda d: d["poisson"][1].update(size="fixed:1000"),
                        "[scheme.mine]": lambda d: d.update(scheme={"mine": {"cc": "rcp", "ccc": "rcp"}}),
                        "[scheme.mine] rcp": lambda d: d.update(scheme={"mine": {"cc": "rcp", "rcp": {"alhpa": 1}}}),
                        "[sweep]": lambda d: d["sweep"].update(lod=[0.5])}.items():
        path = edited_experiment(tmp_path, "fct.toml", edit)
        with pytest.raises(ExperimentError, match=re.escape(f"fct.toml {where}: unknown key")):
            load_experiment(path)


def test_an_impossible_workload_stops_before_any_network(tmp_path):
    """A Pareto shape below 1 has no mean; the hosts' parser says so."""
    path = edited_experiment(tmp_path, "fct-short.toml", lambda d: d["poisson"][0].update(sizes="pareto:0.5:25000"))
    with pytest.raises(ExperimentError, match=r"fct-short.toml: poisson flow of h1 of rcp: .*shape"):
        check_with_hosts(load_experiment(path))


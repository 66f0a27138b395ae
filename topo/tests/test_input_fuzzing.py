"""Structured random input to what reads an operator's input: the experiment format and the host binaries'
command lines (hypothesis). Whatever they are given, they either accept it or refuse it with one line that
says why, before anything runs: never a traceback, a panic, a hang or another exit status.

test_experiment_format.py mutates the shipped files one key at a time; here whole documents are drawn from
the format's grammar, every table and value at once, with values of every TOML type; and argument vectors
for every subcommand, from the options each takes, valid or not.
"""

from __future__ import annotations

import math
import os
import subprocess

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topo import hosts
from topo.experiment import (EVENT_KEYS, EXPERIMENT_KEYS, LONG_KEYS, POISSON_KEYS, RCP_KEYS, SCHEME_KEYS,
                             ExperimentError, load_invocation)
from topo.host_check import check_with_hosts

# Any TOML value, nested a little.
SCALARS = st.one_of(st.booleans(), st.integers(-2**63, 2**63 - 1), st.integers(-5, 100),
                    st.floats(allow_nan=True, allow_infinity=True), st.floats(0, 2), st.text(max_size=12),
                    st.sampled_from(["rcp", "tcp", "h1", "r1", "dumbbell", "pareto:1.2:25000", "fixed:0", "bdp"]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                            max_size=3), max_leaves=6)
KNOWN_KEYS = sorted(EXPERIMENT_KEYS | LONG_KEYS | POISSON_KEYS | EVENT_KEYS | SCHEME_KEYS | RCP_KEYS)


@st.composite
def valid_documents(draw):
    """An experiment the format accepts: a dumbbell, long flows and now and then Poisson traffic, gains,
    bandwidth events, a named scheme, a sweep."""
    duration = draw(st.floats(2, 60))
    pairs = draw(st.integers(2, 3))
    doc = {"topology": "dumbbell", "duration_s": duration,
           "schemes": draw(st.lists(st.sampled_from(["rcp", "tcp", "allegro", "vivace", "fixed:2mbit"]), min_size=1,
                                    max_size=3, unique=True)),
           "seeds": draw(st.lists(st.integers(1, 9), min_size=1, max_size=3, unique=True)),
           "topology_params": {"pairs": pairs, "bottleneck_mbps": draw(st.floats(5, 20)),
                               "rtt_ms": draw(st.floats(10, 200))},
           "long": [{"sender": f"h{i + 1}", "receiver": f"r{i + 1}", "start_s": draw(st.floats(0, duration / 2))}
                    for i in range(draw(st.integers(1, pairs - 1)))]}
    if draw(st.booleans()):
        doc["poisson"] = [{"sender": f"h{pairs}", "receiver": f"r{pairs}", "exact_load": draw(st.booleans()),
                           "sizes": draw(st.sampled_from(["pareto:1.2:25000", "pareto:1.2:25000:1000000",
                                                         "exp:30000", "fixed:100000"]))}]
        doc["load"] = draw(st.floats(0.05, 0.95))
    if draw(st.booleans()):
        doc["rcp"] = {"alpha": draw(st.floats(0.05, 1)), "beta": draw(st.floats(0.05, 1))}
    if draw(st.booleans()):
        doc["events"] = [{"at_s": draw(st.floats(0.5, duration - 0.5)), "bottleneck_scale": draw(st.floats(0.3, 2))}]
    if draw(st.booleans()):
        doc["scheme"] = {"papers": {"cc": "rcp", "rcp": {"alpha": 0.1, "beta": 1.0}}}
        doc["schemes"] = [*doc["schemes"], "papers"]
    if draw(st.booleans()):
        doc["sweep"] = {"rtt_ms": draw(st.lists(st.floats(10, 200), min_size=1, max_size=3, unique=True))}
    return doc


def _paths(data, prefix=()):
    """Every (path, container) of a value in nested tables and arrays."""
    items = data.items() if isinstance(data, dict) else enumerate(data)
    for key, value in items:
        yield prefix + (key,), data
        if isinstance(value, (dict, list)):
            yield from _paths(value, prefix + (key,))


@st.composite
def documents(draw):
    """A valid document and 0 to 4 corruptions anywhere in it: a value replaced by any TOML value, a key
    dropped, a key added (known elsewhere in the format, or unknown)."""
    doc = draw(valid_documents())
    corruptions = draw(st.sampled_from([0, 1, 1, 2, 2, 3, 4]))
    for _ in range(corruptions):
        where = list(_paths(doc))
        if not where:
            break
        path, parent = draw(st.sampled_from(where))
        op = draw(st.sampled_from(["replace", "drop", "add"]))
        if op == "replace":
            parent[path[-1]] = draw(VALUES)
        elif op == "drop":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(KNOWN_KEYS) | st.text(min_size=1, max_size=8))] = draw(VALUES)
    return doc, corruptions


def _toml(document: dict) -> str | None:
    try:
        return tomli_w.dumps(document)
    except (TypeError, ValueError):        # a value TOML cannot hold (a list of tables and values mixed, ...)
        return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(documents())
def test_any_experiment_document_loads_or_stops_with_one_line_naming_the_file(tmp_path, drawn):
    document, corruptions = drawn
    text = _toml(document)
    if text is None:
        return
    path = tmp_path / "drawn.toml"
    path.write_text(text)
    try:
        experiments = load_invocation(str(path))
        for exp in experiments:
            check_with_hosts(exp)
    except ExperimentError as e:
        assert "\n" not in str(e) and "drawn.toml" in str(e), repr(str(e))
        assert corruptions, f"a valid document was refused: {e}"
        return
    # accepted: then it is an experiment a runner can run
    for exp in experiments:
        assert exp.duration_s > 0 and math.isfinite(exp.duration_s) and exp.schemes and exp.seeds
        assert all(v.topology.switches for v in exp.variants())


# The host binaries' command lines.
DURATIONS = st.sampled_from(["1", "0.5", "30s", "0", "-1", "1e9", "soon", "", "5ms", "NaN", "inf"])
RATES = st.sampled_from(["15mbit", "1gbit", "10kbit", "0", "15", "-3mbit", "1e30gbit", "x"])
SIZES = st.sampled_from(["1000", "1k", "64KiB", "0", "-1", "5x", "1e3", "18446744073709551616", ""])
CCS = st.sampled_from(["rcp", "allegro", "allegro-ref", "vivace", "vivace-loss", "vivace-latency", "vivace-stop",
                       "vivace-loss-p4rcp", "fixed:5mbit", "fixed", "tcp", "tcp:reno", "tcp:", "bogus", ""])
ADDRESSES = st.sampled_from(["10.0.0.2", "10.0.0.2:7000", "300.1.1.1", "10.0.0.2:99999", "host", "", "::1"])
# Any argument a command line can hold: text, or bytes that are not UTF-8 (no NUL: an argument ends there).
ANY = st.one_of(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=10),
                st.binary(max_size=8).map(lambda b: b.replace(b"\0", b"")))
OPTIONS = {
    "send": {"--to": ADDRESSES, "--cc": CCS, "--mss": SIZES, "--max-rate": RATES, "--min-rate": RATES,
             "--timeout": DURATIONS, "--sample-interval": DURATIONS, "--tcp-port": st.integers(-1, 70000).map(str),
             "--bind": ADDRESSES, "--dscp": st.integers(-1, 70).map(str), "--size": SIZES, "--duration": DURATIONS,
             "--flow-id": st.integers(-1, 2**33).map(str), "--flows": st.integers(-1, 5).map(str)},
    "traffic": {"--to": ADDRESSES, "--cc": CCS, "--mss": SIZES, "--load": st.sampled_from(["0.9", "0", "1.5", "-1", "x"]),
                "--capacity": RATES, "--sizes": st.sampled_from(["pareto:1.2:25000", "pareto:1.2:25000:1000000",
                                                                 "fixed:1000", "exp:1000", "fixed:0", "pareto:0.5:25",
                                                                 "cdf:/nonexistent", "x:1"]),
                "--duration": DURATIONS, "--seed": st.integers(-1, 2**65).map(str), "--max-flows": SIZES,
                "--load-unit": st.sampled_from(["slots", "bytes", "packets"]), "--dscp": st.integers(-1, 70).map(str),
                "--arrivals": st.sampled_from(["poisson", "pareto:1.5", "pareto:1", "pareto:x", "gamma:2", ""])},
    "recv": {"--bind": ADDRESSES, "--tcp-port": st.integers(-1, 70000).map(str), "--idle-timeout": DURATIONS,
             "--duration": DURATIONS},
}
FLAGS = {"send": ["--stats"], "traffic": ["--exact-load"], "recv": []}
LINKEM = {"--if-a": st.sampled_from(["p4rcp-no-if0", ""]), "--if-b": st.sampled_from(["p4rcp-no-if1", "x" * 20]),
          "--delay": DURATIONS, "--loss": st.sampled_from(["0", "1.5", "100", "150", "-1", "x"]),
          "--loss-back": st.sampled_from(["0", "5", "x"]), "--reorder": st.sampled_from(["0", "50", "101"]),
          "--rate": RATES, "--limit": SIZES, "--seed": st.integers(-1, 2**65).map(str)}


@st.composite
def command_lines(draw):
    """A binary, a subcommand and a few of its options (now and then one it does not know, or a value
    anything may be), always with --check: it opens no socket, device or file."""
    which = draw(st.sampled_from(["send", "traffic", "recv", "linkem"]))
    options = LINKEM if which == "linkem" else OPTIONS[which]
    args = [str(hosts.LINKEM_BINARY)] if which == "linkem" else [str(hosts.HOST_BINARY), which]
    for name in draw(st.lists(st.sampled_from(sorted(options)), max_size=6)):
        args += [name, draw(st.one_of(options[name], ANY) if draw(st.booleans()) else options[name])]
    for flag in draw(st.lists(st.sampled_from(FLAGS.get(which, []) or ["--check"]), max_size=1)):
        args.append(flag)
    if draw(st.integers(0, 9)) == 0:
        args += [draw(st.sampled_from(["--bogus", "-x", "extra"]))]
    return args + ["--check"]


def _run(args: list[str | bytes]) -> subprocess.CompletedProcess:
    """The output as written (text mode would turn a carriage return in a quoted value into a line break)."""
    done = subprocess.run([os.fsencode(a) for a in args], capture_output=True, timeout=10)
    done.stdout, done.stderr = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    return done


@settings(max_examples=400, deadline=None)
@given(command_lines())
def test_any_command_line_is_accepted_or_refused_with_one_line(args):
    if not hosts.HOST_BINARY.is_file():
        pytest.skip(f"SKIPPED: {hosts.HOST_BINARY} not built (make hosts)")
    done = _run(args)
    assert done.returncode in (0, 2), (args, done.returncode, done.stderr[-2000:])
    assert "panicked" not in done.stderr, (args, done.stderr[-2000:])
    assert done.stdout == "", (args, done.stdout[:500])
    if done.returncode == 0:
        assert done.stderr == "", (args, done.stderr)
    else:
        # one line; the binaries quote a bad value as given, so line breaks inside an argument show in it
        assert done.stderr.endswith("\n") and done.stderr.count("\n") <= 1 + sum(os.fsencode(a).count(b"\n")
                                                                                 for a in args), \
            (args, done.stderr)
        assert done.stderr.startswith(("p4rcp-host: ", "p4rcp-linkem: ")), (args, done.stderr)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["rcp", "allegro", "vivace", "fixed:5mbit", "tcp", "tcp:reno"]),
       st.sampled_from(["1000", "1k", "64KiB", "3M"]), st.sampled_from(["15mbit", "1gbit", "200kbit"]),
       st.integers(0, 63), st.booleans())
def test_a_command_line_of_valid_values_is_accepted(cc, size, rate, dscp, timed):
    if not hosts.HOST_BINARY.is_file():
        pytest.skip(f"SKIPPED: {hosts.HOST_BINARY} not built (make hosts)")
    amount = ["--duration", "2.5"] if timed else ["--size", size]
    done = _run([str(hosts.HOST_BINARY), "send", "--check", "--to", "10.0.0.2", "--cc", cc, "--max-rate", rate,
                 "--dscp", str(dscp), *amount])
    assert (done.returncode, done.stderr) == (0, "")

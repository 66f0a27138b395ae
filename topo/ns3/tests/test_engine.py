"""The ns-3 engine's Python side without ns-3: what it refuses, its options, and the flows it starts."""

from __future__ import annotations

import pytest

from p4rcp.analysis import measured_load
from topo import hosts
from topo.experiment import load_experiment, resolve
from topo.ns3 import runner
from topo.ns3.engine import refusal, tcp_algorithm
from topo.ns3.network import RouterOptions
from topo.ns3.workload import LOAD_UNIT, POISSON_FLOW_BASE, arrivals_of, plan
from topo.schedule import Launch, RunDir, long_flow_id, schedule


def test_every_scheme_of_the_hosts_runs_and_external_programs_are_refused():
    exp = load_experiment(resolve("fct-short"))    # rcp, tcp, allegro, vivace
    assert all(refusal(exp, s) is None for s in ("rcp", "tcp", "allegro", "vivace"))
    lossy = load_experiment(resolve("lossy"))
    assert all(refusal(lossy, s) is None for s in lossy.schemes)
    references = load_experiment(resolve("lossy-references"))
    external = [s for s in references.schemes if references.scheme(s).is_external]
    assert external
    for name in external:
        why = refusal(references, name)
        assert name in why and "external program" in why and "Mininet" in why and "\n" not in why


def test_router_features_the_model_lacks_are_refused_naming_them(tmp_path):
    for name, says in [("weighted", "weighted sharing"), ("policing", "policing")]:
        exp = load_experiment(resolve(name))
        refused = {s: refusal(exp, s) for s in exp.schemes if exp.scheme(s).cc == "rcp"}
        assert any(why and says in why and "Mininet" in why for why in refused.values()), (name, refused)
    # the model has the other presets' settings, and the feedforward
    plain = load_experiment(resolve("flash-crowd"))
    assert all(refusal(plain, s) is None for s in ("rcp", "rcp-plain", "rcp-papers", "rcp-ns2"))
    path = tmp_path / "ff.toml"
    path.write_text('topology = "dumbbell"\nschemes = ["ff"]\nduration_s = 5\n[scheme.ff]\ncc = "rcp"\n'
                    'rcp = { feedforward = true }\n[[long]]\nsender = "h1"\nreceiver = "r1"\n')
    assert refusal(load_experiment(path), "ff") is None


def test_tcp_variants_map_to_ns3_congestion_controls(tmp_path):
    path = tmp_path / "tcps.toml"
    path.write_text('topology = "dumbbell"\nschemes = ["tcp", "tcp:reno", "tcp:bbr", "iw2", "rcp"]\nduration_s = 5\n'
                    '[scheme.iw2]\ncc = "tcp:cubic"\ninitcwnd = 2\n'
                    '[[long]]\nsender = "h1"\nreceiver = "r1"\n')
    exp = load_experiment(path)
    assert tcp_algorithm(exp, exp.scheme("tcp")) == "ns3::TcpCubic"
    assert tcp_algorithm(exp, exp.scheme("iw2")) == "ns3::TcpCubic"
    assert tcp_algorithm(exp, exp.scheme("tcp:reno")) == "ns3::TcpNewReno"
    assert tcp_algorithm(exp, exp.scheme("rcp")) is None
    assert "tcp:bbr" in refusal(exp, "tcp:bbr")
    assert tcp_algorithm(exp, exp.scheme("iw2")) and exp.scheme("iw2").initcwnd == 2


def test_tcp_flows_among_a_schemes_flows_run_as_ns3s_tcp(tmp_path):
    """tcp-mix's sweep runs its first long flows as TCP in an RCP run: one TCP per simulation, cubic; a run
    that would need two TCPs at once is refused."""
    mix = load_experiment(resolve("tcp-mix"))
    assert refusal(mix, "rcp") is None and tcp_algorithm(mix, mix.scheme("rcp")) == "ns3::TcpCubic"
    path = tmp_path / "two-tcps.toml"
    path.write_text('topology = "dumbbell"\nschemes = ["tcp:reno"]\nduration_s = 5\n[topology_params]\npairs = 2\n'
                    '[[long]]\nsender = "h1"\nreceiver = "r1"\n'
                    '[[long]]\nsender = "h2"\nreceiver = "r2"\ncc = "tcp"\n')
    two = load_experiment(path)
    why = refusal(two, "tcp:reno")
    assert "tcp, tcp:reno" in why and "one congestion control per simulation" in why


def test_what_a_scheme_ran_names_its_preset_and_its_parameters():
    exp = load_experiment(resolve("rtt-fairness"))
    said = runner.describe(exp, "rcp-ns2", RouterOptions())
    assert said.startswith("preset rcp-ns2: rcp senders") and "alpha 0.4, beta 0.4" in said and "d0 by ns2" in said
    assert runner.describe(exp, "tcp", RouterOptions()).startswith("ns-3's TCP (ns3::TcpCubic)")
    talk = load_experiment(resolve("talk-example1"))
    assert runner.describe(talk, "reno-iw2", RouterOptions()).startswith(
        "preset reno-iw2: ns-3's TCP (ns3::TcpNewReno), initial window 2 segments")


def test_engine_options_are_checked():
    assert runner.parse_options(["rtt_samples=arrival", "queue_sample=at-read", "jobs=3"]) == {
        "rtt_samples": "arrival", "queue_sample": "at-read", "jobs": "3"}
    for bad, says in [("rtt_samples=egress", "rtt_samples must be one of departure, arrival"),
                      ("queue=at-read", "KEY one of rtt_samples, queue_sample, jobs"),
                      ("jobs=0", "positive integer"), ("jobs", "KEY=VALUE")]:
        with pytest.raises(ValueError, match=says):
            runner.parse_options([bad])
    with pytest.raises(ValueError):
        RouterOptions(queue_sample="stale")


@pytest.mark.skipif(not hosts.HOST_BINARY.is_file(), reason=f"{hosts.HOST_BINARY} missing: run 'make hosts'")
def test_the_flows_are_those_the_hosts_would_start(tmp_path):
    """Poisson arrivals are the traffic generator's own plan for the run's command, with the load counted in
    bytes (an ns-3 link shapes bits); long flows start, stop and are numbered as the Mininet runner's schedule
    says."""
    exp = load_experiment(resolve("fct-short"), ["rcp"], 5, [3])
    variant = exp.variants()[0]
    out = RunDir(tmp_path)
    p = plan(exp, variant, exp.scheme("rcp"), 3, out)
    commands = {i.host: i.command for i in schedule(exp, variant, exp.scheme("rcp"), 3, out) if isinstance(i, Launch)}
    sizes = []
    for host, command in commands.items():
        arrivals = arrivals_of(command + ["--load-unit", LOAD_UNIT])
        assert arrivals != arrivals_of(command)     # Mininet's unit, slots, plans fewer flows for the same load
        sizes += [size for _, size in arrivals]
        mine = sorted((f.index, f.start_s, f.size_bytes, f.flow_id) for f in p.flows if f.host == host)
        assert mine == [(k, t, size, POISSON_FLOW_BASE + k) for k, (t, size) in enumerate(arrivals)]
        # each flow runs its command's scheme, its controller seeded from the generator's --seed
        seed = int(command[command.index("--seed") + 1])
        assert {(f.cc, f.generator_seed) for f in p.flows if f.host == host} == {("rcp", seed)}
        assert p.planned[host] == len(arrivals) > 0
        # the generator's --seed is the schedule's: another seed plans other flows
        other = list(command)
        other[other.index("--seed") + 1] = "99"
        assert arrivals_of(other) != arrivals
    # every seed offers the nominal load (exact_load), in the bits of the link
    topology = variant.topology
    offered = measured_load(sizes, topology.mss_bytes, topology.data_frame_bytes,
                            min(topology.switch(s).ports[p].capacity_bps for s, p in topology.bottlenecks),
                            exp.duration_s, LOAD_UNIT)
    assert offered == pytest.approx(variant.load, rel=0.03)
    conv = load_experiment(resolve("convergence-short"), ["rcp"], 10, [2])
    p = plan(conv, conv.variants()[0], conv.scheme("rcp"), 2, out)
    assert [(f.host, f.start_s, f.duration_s, f.flow_id, f.cc, f.generator_seed) for f in p.flows] == [
        (flow.sender, flow.start_s, 10 - flow.start_s, long_flow_id(2, i), "rcp", None)
        for i, flow in enumerate(conv.long_flows)]
    # a sweep point's TCP flows and a flow's own scheme are each flow's
    mix = load_experiment(resolve("tcp-mix"), ["rcp"], 10, [1])
    point = next(v for v in mix.variants() if v.tcp_flows == 2)
    assert [f.cc for f in plan(mix, point, mix.scheme("rcp"), 1, out).flows] == ["tcp", "tcp", "rcp", "rcp"]


@pytest.mark.skipif(not hosts.HOST_BINARY.is_file(), reason=f"{hosts.HOST_BINARY} missing: run 'make hosts'")
def test_a_plan_that_the_hosts_refuse_stops_with_their_line():
    def command(sizes):
        return [str(hosts.HOST_BINARY), "traffic", "--to", "10.0.0.3", "--cc", "rcp", "--load", "0.5",
                "--capacity", "10mbit", "--sizes", sizes, "--duration", "1"]
    with pytest.raises(RuntimeError, match="Pareto shape must be > 1"):
        arrivals_of(command("pareto:0.5:1000"))
    arrivals = arrivals_of(command("fixed:1000"))
    assert arrivals and all(size == 1000 and 0 <= t < 1 for t, size in arrivals)

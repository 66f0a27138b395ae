import re

import pytest

from topo.experiment import EXPERIMENTS_DIR, ExperimentError, load_experiment, load_suite, resolve
from topo.host_check import check_with_hosts


def test_every_shipped_experiment_loads_and_the_host_binary_accepts_it():
    for path in EXPERIMENTS_DIR.glob("*.toml"):
        suite = load_suite(path)
        for member in suite.members if suite else [path]:
            exp = load_experiment(member, suite.schemes if suite else None)
            check_with_hosts(exp)
            assert exp.variants(), member


def test_sweep_expands_variants():
    exp = load_experiment(resolve("rtt-fairness"))
    variants = exp.variants()
    assert [v.label for v in variants] == ["rtt_ms=10-20", "rtt_ms=10-50", "rtt_ms=10-100"]
    assert [v.topology.hosts["h2"].delay_ms for v in variants] == [10, 25, 50]
    loads = [v.load for v in load_experiment(resolve("short-flows")).variants()]
    assert loads == [0.05, 0.25, 0.5, 0.75]


def test_default_suite_is_fct_and_convergence_of_rcp_against_tcp():
    suite = load_suite(resolve("default"))
    assert [p.stem for p in suite.members] == ["fct-short", "convergence-short"]
    assert suite.schemes == ["rcp", "tcp"]


@pytest.mark.parametrize("text,message", [
    ('suite = ["fct-short"]\nschemes = "rcp"\n', "non-empty list"),
    ('suite = ["fct-short"]\nschemes = []\n', "non-empty list"),
    ('suite = ["fct-short"]\nseeds = [1]\n', "unknown key 'seeds'"),
    ('suite = ["no-such-experiment"]\n', "no experiment 'no-such-experiment'"),
])
def test_bad_suites_are_refused(tmp_path, text, message):
    path = tmp_path / "suite.toml"
    path.write_text(text)
    with pytest.raises(ExperimentError, match=re.escape(message)):
        load_suite(path)


@pytest.mark.parametrize("text,message", [
    ('topology = "dumbbell"\nduration_s = 5\n[topology_params]\npairs=1\nbottleneck_mbps=10\n', "no traffic"),
    ('topology = "ring"\nduration_s = 5\n[[long]]\nsender="h1"\nreceiver="r1"\n', "does not exist"),
    ('topology = "dumbbell"\nduration_s = 5\nschemes=["xcp"]\n[[long]]\nsender="h1"\nreceiver="r1"\n'
     '[topology_params]\npairs=1\nbottleneck_mbps=10\n', "unknown schemes"),
    ('topology = "dumbbell"\nduration_s = 5\n[[long]]\nsender="h9"\nreceiver="r1"\n'
     '[topology_params]\npairs=1\nbottleneck_mbps=10\n', "host 'h9'"),
    ('topology = "dumbbell"\nduration_s = 5\n[[poisson]]\nsender="h1"\nreceiver="r1"\nsizes="fixed:1"\n'
     '[topology_params]\npairs=1\nbottleneck_mbps=10\n', "total load"),
    ('duration_s = 5\n', "missing key"),
    ('topology = "dumbbell"\nduration_s = 5\nschemes=["fixed:4"]\n[[long]]\nsender="h1"\nreceiver="r1"\n'
     '[topology_params]\npairs=1\nbottleneck_mbps=10\n', "fixed:RATE"),
    ('topology = "dumbbell"\nduration_s = 5\n[[long]]\nsender="h1"\nreceiver="r1"\n[[long]]\nsender="h1"\n'
     'receiver="r2"\n[topology_params]\npairs=2\nbottleneck_mbps=10\n', "send more than one"),
    ('topology = "dumbbell"\nduration_s = 5\nseeds = [1, 1]\n[[long]]\nsender="h1"\nreceiver="r1"\n'
     '[topology_params]\npairs=1\nbottleneck_mbps=10\n', "seeds must be distinct"),
    ('topology = "dumbbell"\nduration_s = 5\nschemes = ["slow"]\n[scheme.slow]\ncc = "rcp"\ninitcwnd = 2\n'
     '[[long]]\nsender="h1"\nreceiver="r1"\n[topology_params]\npairs=1\nbottleneck_mbps=10\n', "for tcp only"),
    ('topology = "dumbbell"\nduration_s = 5\nschemes = ["x"]\n[scheme.x]\ncc = "xcp"\n'
     '[[long]]\nsender="h1"\nreceiver="r1"\n[topology_params]\npairs=1\nbottleneck_mbps=10\n', "unknown cc"),
    ('topology = "dumbbell"\nduration_s = 5\nschemes = ["x"]\n[scheme.x]\ncc = "rcp"\nrcp = {alpha = -1}\n'
     '[[long]]\nsender="h1"\nreceiver="r1"\n[topology_params]\npairs=1\nbottleneck_mbps=10\n', "RCP parameters of x"),
])
def test_bad_experiments_are_explained(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ExperimentError, match=message):
        check_with_hosts(load_experiment(path))


def test_unknown_experiment_lists_known_ones():
    with pytest.raises(ExperimentError, match="known: .*convergence"):
        resolve("nope")


def test_a_fixed_rate_scheme_is_accepted_for_calibration(tmp_path):
    path = tmp_path / "calibrate.toml"
    path.write_text('topology = "dumbbell"\nduration_s = 5\nschemes=["fixed:8.5mbit"]\n[[long]]\nsender="h1"\n'
                    'receiver="r1"\n[topology_params]\npairs=1\nbottleneck_mbps=10\n')
    exp = load_experiment(path)
    check_with_hosts(exp)
    assert exp.schemes == ["fixed:8.5mbit"]


def test_named_schemes_set_rcp_gains_and_tcp_windows(tmp_path):
    path = tmp_path / "named.toml"
    path.write_text('topology = "dumbbell"\nduration_s = 5\nschemes = ["rcp", "rcp-papers", "tcp:reno", "reno-iw2"]\n'
                    '[rcp]\nq0_bytes = 1000\n'
                    '[scheme.rcp-papers]\ncc = "rcp"\nrcp = {alpha = 0.1, beta = 1.0}\n'
                    '[scheme.reno-iw2]\ncc = "tcp:reno"\ninitcwnd = 2\n'
                    '[[long]]\nsender="h1"\nreceiver="r1"\n[topology_params]\npairs=1\nbottleneck_mbps=10\n')
    exp = load_experiment(path)
    papers = exp.rcp_params(exp.scheme("rcp-papers"))
    assert (papers.alpha, papers.beta, papers.q0_bytes) == (0.1, 1.0, 1000)      # the experiment's [rcp] too
    assert exp.rcp_params(exp.scheme("rcp")).alpha == 0.4
    assert exp.scheme("tcp:reno").cc == "tcp:reno" and exp.scheme("tcp:reno").initcwnd is None
    assert "reno" in exp.scheme("tcp:reno").describe(papers) and "Linux's default" in exp.scheme("tcp").describe(papers)
    assert "initial window 2 segments" in exp.scheme("reno-iw2").describe(papers)
    assert "alpha 0.1, beta 1" in exp.scheme("rcp-papers").describe(papers)


def test_the_summary_names_each_schemes_router_features():
    exp = load_experiment(resolve("weighted"))
    weighted = exp.scheme("rcp").describe(exp.rcp_params(exp.scheme("rcp")))
    assert "weights by DSCP 10: 0.5, 46: 0.25 (any other DSCP 1)" in weighted
    assert "weights" not in exp.scheme("rcp-unweighted").describe(exp.rcp_params(exp.scheme("rcp-unweighted")))
    flash = load_experiment(resolve("flash-crowd"))
    assert "feedforward" in flash.scheme("rcp-ff").describe(flash.rcp_params(flash.scheme("rcp-ff")))
    police = load_experiment(resolve("policing"))
    assert "policing" in police.scheme("rcp-police").describe(police.rcp_params(police.scheme("rcp-police")))

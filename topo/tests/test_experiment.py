import re
import subprocess

import pytest

from p4rcp.params import RcpParams
from p4rcp.presets import PRESETS
from topo import hosts
from topo.experiment import (DEFAULT_SCHEMES, EXPERIMENT_SETTINGS, EXPERIMENTS_DIR, ExperimentError, load_experiment,
                             load_suite, resolve)
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
    ('topology = "dumbbell"\nduration_s = 5\nschemes=["nosuch"]\n[[long]]\nsender="h1"\nreceiver="r1"\n'
     '[topology_params]\npairs=1\nbottleneck_mbps=10\n', "unknown scheme 'nosuch'"),
    ('topology = "dumbbell"\nduration_s = 5\n[[long]]\nsender="h9"\nreceiver="r1"\n'
     '[topology_params]\npairs=1\nbottleneck_mbps=10\n', "host 'h9'"),
    ('topology = "dumbbell"\nduration_s = 5\n[[poisson]]\nsender="h1"\nreceiver="r1"\nsizes="fixed:1"\n'
     '[topology_params]\npairs=1\nbottleneck_mbps=10\n', "total load"),
    ('topology = "dumbbell"\nduration_s = 5\nload = 0.5\n[[poisson]]\nsender="h1"\nreceiver="r1"\n'
     'sizes="fixed:1"\nrepeat_every_s = 6\n[topology_params]\npairs=1\nbottleneck_mbps=10\n',
     "repeats every 6 s, longer than the run's 5 s"),
    ('duration_s = 5\n', "missing key"),
    ('topology = "dumbbell"\nduration_s = 5\nschemes=["fixed:4"]\n[[long]]\nsender="h1"\nreceiver="r1"\n'
     '[topology_params]\npairs=1\nbottleneck_mbps=10\n', "fixed:RATE"),
    ('topology = "dumbbell"\nduration_s = 5\n[[long]]\nsender="h1"\nreceiver="r1"\n[[long]]\nsender="h1"\n'
     'receiver="r2"\n[topology_params]\npairs=2\nbottleneck_mbps=10\n', "send more than one"),
    ('topology = "dumbbell"\nduration_s = 5\nseeds = [1, 1]\n[[long]]\nsender="h1"\nreceiver="r1"\n'
     '[topology_params]\npairs=1\nbottleneck_mbps=10\n', "seeds must be distinct"),
    ('topology = "dumbbell"\nduration_s = 5\nschemes = ["slow"]\n[scheme.slow]\ncc = "rcp"\ninitcwnd = 2\n'
     '[[long]]\nsender="h1"\nreceiver="r1"\n[topology_params]\npairs=1\nbottleneck_mbps=10\n', "for tcp only"),
    ('topology = "dumbbell"\nduration_s = 5\nschemes = ["x"]\n[scheme.x]\ncc = "nosuch"\n'
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


def test_presets_resolve_by_name_on_top_of_the_experiments_own_settings(tmp_path):
    path = tmp_path / "named.toml"
    path.write_text(EXPERIMENT.format(schemes='"rcp", "rcp-papers", "tcp:reno", "reno-iw2"', tables='[rcp]\n'
                                      'dscp_weights = { "10" = 0.5 }\n'))
    exp = load_experiment(path)
    papers = exp.rcp_params(exp.scheme("rcp-papers"))
    assert (papers.alpha, papers.beta, papers.dscp_weights) == (0.1, 1.0, {10: 0.5})   # the experiment's [rcp] too
    assert exp.rcp_params(exp.scheme("rcp")) == RcpParams(dscp_weights={10: 0.5})
    assert exp.scheme("rcp-papers").preset == "rcp-papers" and exp.scheme("tcp:reno").preset is None
    assert exp.scheme("tcp:reno").cc == "tcp:reno" and exp.scheme("tcp:reno").initcwnd is None
    assert (exp.scheme("reno-iw2").cc, exp.scheme("reno-iw2").initcwnd) == ("tcp:reno", 2)
    assert "reno" in exp.scheme("tcp:reno").describe(papers) and "Linux's default" in exp.scheme("tcp").describe(papers)
    assert exp.scheme("reno-iw2").describe(papers).startswith("preset reno-iw2: kernel TCP, congestion control reno, "
                                                              "initial window 2 segments")
    assert exp.scheme("rcp-papers").describe(papers).startswith("preset rcp-papers: rcp senders; routers alpha 0.1, "
                                                                "beta 1,")


def test_the_parameters_of_a_run_take_the_topologys_data_frame():
    exp = load_experiment(resolve("rtt-fairness"))
    topology = exp.variants()[0].topology
    p = exp.rcp_params(exp.scheme("rcp-ns2"), topology)
    assert p == PRESETS["rcp-ns2"].params(queue_packet_bytes=topology.data_frame_bytes)


def test_an_experiment_may_not_redefine_a_preset_but_its_recorded_copy_says_what_ran(tmp_path):
    path = tmp_path / "copy.toml"
    path.write_text(EXPERIMENT.format(schemes='"rcp-papers"', tables='[scheme.rcp-papers]\ncc = "rcp"\n'
                                      'rcp = { alpha = 0.2 }\n'))
    with pytest.raises(ExperimentError, match=r"copy.toml \[scheme.rcp-papers\]: rcp-papers is a preset"):
        load_experiment(path)
    exp = load_experiment(path, recorded=True)
    assert exp.rcp_params(exp.scheme("rcp-papers")).alpha == 0.2


def test_a_scheme_name_that_cannot_name_a_directory_is_refused_on_one_line(tmp_path):
    path = tmp_path / "odd.toml"
    path.write_text(EXPERIMENT.format(schemes='"rcp"', tables='[scheme."a\\nb"]\ncc = "rcp"\n'))
    with pytest.raises(ExperimentError, match=r"^odd.toml: scheme name 'a\\nb' is not a name") as refused:
        load_experiment(path)
    assert "\n" not in str(refused.value)
    path.write_text(EXPERIMENT.format(schemes='"rcp", "../up"', tables=""))
    with pytest.raises(ExperimentError, match=r"scheme name '../up' is not a name"):
        load_experiment(path)


def test_an_unknown_scheme_is_refused_naming_the_presets(tmp_path):
    path = tmp_path / "retired.toml"
    path.write_text(EXPERIMENT.format(schemes='"rcp", "rcp-fast"', tables=""))
    with pytest.raises(ExperimentError, match="unknown scheme 'rcp-fast': not a \\[scheme.NAME\\] table, a preset "
                                              "\\(rcp, rcp-plain, rcp-papers, rcp-ns2, rcp-police, reno-iw2\\) or a "
                                              "scheme of the hosts: .*unknown --cc 'rcp-fast'"):
        check_with_hosts(load_experiment(path))


def test_a_presets_name_is_no_scheme_of_the_hosts():
    """A name means one thing: a preset, or the hosts' cc of that name (rcp, the preset of the defaults, runs the
    hosts' rcp)."""
    for name, p in PRESETS.items():
        assert hosts_accept(name) == (name == p.cc), name


def test_every_scheme_each_experiment_names_resolves():
    """To a table of the experiment, a preset, or a scheme of the hosts; suites' schemes and the default ones
    too (test_every_shipped_experiment_loads_and_the_host_binary_accepts_it checks every command of each)."""
    names = {name for exp in shipped_experiments() for name in exp.schemes if name not in exp.scheme_tables}
    suites = [load_suite(path) for path in EXPERIMENTS_DIR.glob("*.toml")]
    names |= {name for suite in suites if suite and suite.schemes for name in suite.schemes}
    unresolved = [n for n in sorted(names | set(DEFAULT_SCHEMES)) if n not in PRESETS and not hosts_accept(n)]
    assert not unresolved


def hosts_accept(cc: str) -> bool:
    command = hosts.single_flow("127.0.0.1", cc, 1) + ["--check"]
    return subprocess.run(command, capture_output=True, timeout=10).returncode == 0


def test_no_experiment_file_copies_a_preset():
    """Router settings and TCP variants are presets; an experiment's [rcp] and its [scheme.NAME] tables set only
    what is its own (EXPERIMENT_SETTINGS), and no table is a preset under another name."""
    for exp in shipped_experiments():
        assert not copies(exp), (exp.source.name, copies(exp))


@pytest.mark.parametrize("tables,copied", [
    ('[scheme.ff]\ncc = "rcp"\nrcp = { feedforward = true }\n', ["[scheme.ff] sets feedforward"]),
    ('[scheme.iw2]\ncc = "tcp:reno"\ninitcwnd = 2\n', ["[scheme.iw2] sets initcwnd", "[scheme.iw2] is reno-iw2"]),
    ('[scheme.mine]\ncc = "rcp"\n', ["[scheme.mine] is rcp"]),
    ('[rcp]\nalpha = 0.1\n', ["[rcp] sets alpha"]),
    ('[rcp]\ndscp_weights = { "10" = 0.5 }\n[scheme.one]\ncc = "rcp"\nrcp = { dscp_weights = { "10" = 1.0 } }\n', []),
])
def test_the_check_for_copies_finds_them(tmp_path, tables, copied):
    path = tmp_path / "copies.toml"
    path.write_text(EXPERIMENT.format(schemes='"rcp"', tables=tables))
    found = copies(load_experiment(path))
    # at least those named: a table of the defaults is rcp, and rcp-plain as long as the defaults are its law
    assert set(copied) <= set(found) and bool(found) == bool(copied), found


def copies(exp) -> list[str]:
    """What an experiment file sets that is a preset's to set."""
    found = [f"[rcp] sets {key}" for key in exp.rcp if key not in EXPERIMENT_SETTINGS]
    for name, table in exp.scheme_tables.items():
        if table.is_external:
            continue
        found += [f"[scheme.{name}] sets {key}" for key in table.rcp if key not in EXPERIMENT_SETTINGS]
        found += [f"[scheme.{name}] sets initcwnd"] if table.initcwnd is not None else []
        found += [f"[scheme.{name}] is {p.name}" for p in PRESETS.values()
                  if (table.cc, table.initcwnd, exp.rcp_params(table)) ==
                  (p.cc, p.initcwnd, exp.rcp_params(exp.scheme(p.name)))]
    return found


def test_the_summary_names_each_schemes_preset_and_router_features():
    exp = load_experiment(resolve("weighted"))
    weighted = exp.scheme("rcp").describe(exp.rcp_params(exp.scheme("rcp")))
    assert weighted.startswith("preset rcp: ") and "weights by DSCP 10: 0.5, 46: 0.25 (any other DSCP 1)" in weighted
    unweighted = exp.scheme("rcp-unweighted").describe(exp.rcp_params(exp.scheme("rcp-unweighted")))
    assert "weights" not in unweighted and not unweighted.startswith("preset")
    parking = load_experiment(resolve("parking-lot"))
    assert "d0 by ns2" in parking.scheme("rcp-ns2").describe(parking.rcp_params(parking.scheme("rcp-ns2")))
    police = load_experiment(resolve("policing"))
    assert "policing" in police.scheme("rcp-police").describe(police.rcp_params(police.scheme("rcp-police")))


def shipped_experiments():
    for path in sorted(EXPERIMENTS_DIR.glob("*.toml")):
        if load_suite(path) is None:
            yield load_experiment(path)


EXPERIMENT = ('topology = "dumbbell"\nduration_s = 5\nschemes = [{schemes}]\n{tables}'
              '[[long]]\nsender="h1"\nreceiver="r1"\n[topology_params]\npairs=1\nbottleneck_mbps=10\n')


def test_xcp_schemes_run_over_xcp_routers_and_the_others_over_rcp():
    from topo.experiment import load_invocation
    [exp] = load_invocation("talk-rcp-tcp-xcp")
    assert {name: exp.scheme(name).router for name in exp.schemes} == {"rcp": "rcp", "tcp": "rcp", "xcp": "xcp"}



import pytest

from topo.experiment import EXPERIMENTS_DIR, ExperimentError, load_experiment, resolve, suite_members


def test_every_shipped_experiment_loads():
    for path in EXPERIMENTS_DIR.glob("*.toml"):
        members = suite_members(path)
        for member in members or [path]:
            exp = load_experiment(member)
            assert exp.variants(), member


def test_sweep_expands_variants():
    exp = load_experiment(resolve("rtt-fairness"))
    variants = exp.variants()
    assert [v.label for v in variants] == ["rtt_ms=10-20", "rtt_ms=10-50", "rtt_ms=10-100"]
    assert [v.topology.hosts["h2"].delay_ms for v in variants] == [10, 25, 50]
    loads = [v.load for v in load_experiment(resolve("short-flows")).variants()]
    assert loads == [0.05, 0.25, 0.5, 0.75]


def test_default_suite_is_fct_and_convergence():
    assert [p.stem for p in suite_members(resolve("default"))] == ["fct-short", "convergence-short"]


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
])
def test_bad_experiments_are_explained(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ExperimentError, match=message):
        load_experiment(path)


def test_unknown_experiment_lists_known_ones():
    with pytest.raises(ExperimentError, match="known: .*convergence"):
        resolve("nope")


def test_a_fixed_rate_scheme_is_accepted_for_calibration(tmp_path):
    path = tmp_path / "calibrate.toml"
    path.write_text('topology = "dumbbell"\nduration_s = 5\nschemes=["fixed:8.5mbit"]\n[[long]]\nsender="h1"\n'
                    'receiver="r1"\n[topology_params]\npairs=1\nbottleneck_mbps=10\n')
    assert load_experiment(path).schemes == ["fixed:8.5mbit"]

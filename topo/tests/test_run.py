"""The runner's verdicts on a run's records (no Mininet)."""

import json

from topo import hosts
from topo.experiment import load_experiment, resolve
from topo.mininet.runner import host_problems
from topo.schedule import RunDir


def test_a_long_flow_that_did_not_complete_makes_the_run_void(tmp_path):
    exp = load_experiment(resolve("convergence"))          # four long flows, h1..h4 -> r1..r4
    out = RunDir(tmp_path)
    seed = 2
    for i, flow in enumerate(exp.long_flows):
        record = {"flow_id": 1000 * seed + i, "completed": True}
        if flow.sender == "h1":
            record = {**record, "completed": False, "error": "flow timeout before every byte was acknowledged"}
        if flow.sender != "h4":                            # h4 left no record at all
            out.flows(flow.sender).write_text(json.dumps(record) + "\n" + '{"cut by a kill')
    problems = host_problems([], out, exp, seed)
    assert problems == [
        "long flow h1->r1 (id 2000) did not complete: flow timeout before every byte was acknowledged",
        "long flow h4->r4 (id 2003) did not complete: no record",
    ]


def test_a_long_flows_timeout_outlasts_its_duration():
    cmd = hosts.long_flow("10.0.0.6", "rcp", 80.0, 1000, "out.jsonl", "trace.jsonl")
    assert float(cmd[cmd.index("--timeout") + 1]) > 80.0


def _rcp_commands(tmp_path, experiment: str) -> dict[str, list[str]]:
    """Per sending host, the command an experiment file's rcp run starts there."""
    from topo.schedule import Launch, schedule
    path = tmp_path / "exp.toml"
    path.write_text(experiment)
    exp = load_experiment(path)
    [variant] = exp.variants()
    return {item.host: item.command for item in schedule(exp, variant, exp.scheme("rcp"), 1, RunDir(tmp_path))
            if isinstance(item, Launch)}


def test_a_flow_of_its_own_scheme_a_dscp_and_tcp_flows_reach_the_senders_commands(tmp_path):
    commands = _rcp_commands(tmp_path, 'topology = "dumbbell"\nduration_s = 10\nschemes = ["rcp"]\ntcp_flows = 1\n'
                             '[topology_params]\npairs = 3\nbottleneck_mbps = 12\n'
                             '[[long]]\nsender = "h1"\nreceiver = "r1"\n'
                             '[[long]]\nsender = "h2"\nreceiver = "r2"\ndscp = 10\n'
                             '[[long]]\nsender = "h3"\nreceiver = "r3"\ncc = "fixed:9mbit"\n')
    cc = {host: cmd[cmd.index("--cc") + 1] for host, cmd in commands.items()}
    assert cc == {"h1": "tcp", "h2": "rcp", "h3": "fixed:9mbit"}
    assert commands["h2"][commands["h2"].index("--dscp") + 1] == "10" and "--dscp" not in commands["h1"]


def test_a_repeated_or_bursty_poisson_source_reaches_its_generators_command(tmp_path):
    commands = _rcp_commands(tmp_path, 'topology = "dumbbell"\nduration_s = 60\nschemes = ["rcp"]\nload = 0.5\n'
                             '[topology_params]\npairs = 2\nbottleneck_mbps = 12\n'
                             '[[poisson]]\nsender = "h1"\nreceiver = "r1"\nsizes = "fixed:10000"\n'
                             'repeat_every_s = 20\n'
                             '[[poisson]]\nsender = "h2"\nreceiver = "r2"\nsizes = "fixed:10000"\n'
                             'arrivals = "pareto:1.5"\n')
    assert commands["h1"][commands["h1"].index("--repeat-every") + 1] == "20.000"
    assert "--repeat-every" not in commands["h2"] and "--arrivals" not in commands["h1"]
    assert commands["h2"][commands["h2"].index("--arrivals") + 1] == "pareto:1.5"


def test_progress_gives_no_time_left_before_it_can_know_it():
    from topo.progress import Progress
    unknown = Progress(6)                      # the ns-3 engine: no estimate before a run ends
    assert unknown._prefix() == "run 1 of 6, time left known after the first run"
    unknown.done, unknown.started = 1, unknown.started - 60    # one run in 60 s: 5 more
    assert unknown._prefix() == "run 2 of 6, about 5 min left"
    estimated = Progress(4, run_estimate_s=90)
    assert estimated._prefix() == "run 1 of 4, about 6 min left"
    for p in (unknown, estimated):
        p.close()

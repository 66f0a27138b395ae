"""The evaluation suite: the targets' judgement, the rows and the table from synthetic runs, the suite's
conditions against the experiment files, and the ns-3 runs through Dask with a local cluster of two workers."""

from __future__ import annotations

import csv
import io
import json
import math
import textwrap

import pytest

from topo.evaluate.conditions import SEEDS, SUITE, Condition, invocations, select
from topo.evaluate.figures import SchemeRuns, fct_over, worst_bin
from topo.evaluate.table import FAIL, NOT_RUN, PASS, as_csv, as_json, headers, make_row, markdown, write_table
from topo.evaluate.targets import TARGETS, Target, judge
from topo.experiment import ExperimentError, load_experiment, load_invocation, resolve
from topo.ns3.engine import refusal, tcp_algorithm
from topo.schedule import RunDir, schedule


# ------------------------------------------------------------------------------------------------ targets

def test_a_target_judges_the_worst_seed_in_its_own_direction():
    at_most = Target("t", "at most 1.15", "fct_ratio_ps", "<=", 1.15)
    assert judge(at_most, [1.0, 1.1, 1.15]).passed
    verdict = judge(at_most, [1.0, 1.2, 1.1])
    assert not verdict.passed and verdict.measured == 1.2
    at_least = Target("u", "at least 0.95", "steady_utilisation", ">=", 0.95)
    assert judge(at_least, [0.99, 0.96]).passed
    assert judge(at_least, [0.99, 0.94]).measured == 0.94 and not judge(at_least, [0.99, 0.94]).passed
    strictly = Target("v", "under 5", "steady_queue_pkts", "<", 5)
    assert not judge(strictly, [4.0, 5.0]).passed and judge(strictly, [4.9]).passed


def test_a_figure_never_reached_or_not_measured_fails():
    refill = TARGETS["ex2-refill"]
    never = judge(refill, [0.8, math.inf])
    assert not never.passed and "never" in never.text()
    missing = judge(refill, [None, None])
    assert not missing.passed and missing.measured is None and "not measured" in missing.text()
    assert judge(refill, [None, 1.2]).passed            # the seeds that measured it decide


def test_zero_drops_means_zero():
    assert judge(TARGETS["ex1-lossless"], [0, 0, 0]).passed
    assert not judge(TARGETS["ex1-lossless"], [0, 1, 0]).passed


def test_targets_refuse_an_unknown_comparison_or_engine():
    with pytest.raises(ValueError, match="op"):
        Target("x", "", "drops", "==", 0)
    with pytest.raises(ValueError, match="engines"):
        Target("x", "", "drops", "<=", 0, engines=("ns2",))


# ------------------------------------------------------------------------------------------------- rows

def _runs(scheme, per_seed, valid=None, flows=()):
    runs = SchemeRuns(scheme)
    for seed, figures in enumerate(per_seed, start=1):
        runs.seeds.append(seed)
        runs.figures.append(figures)
        runs.valid.append(True if valid is None else valid[seed - 1])
    runs.fct_flows = list(flows)
    runs.problems = [f"{scheme} seed {i + 1}: died" for i, ok in enumerate(runs.valid) if not ok]
    return runs


EX1 = Condition("example", "talk Example 1", "talk-example1", targets=("ex1-lossless", "ex1-fct", "cell-vs-tcp"))


def test_a_row_passes_when_every_target_holds_for_every_seed():
    rcp = _runs("rcp", [{"drops": 0, "fct_ratio_ps": 1.1, "mean_fct_s": 1.0},
                        {"drops": 0, "fct_ratio_ps": 1.12, "mean_fct_s": 1.1}])
    tcp = _runs("tcp:reno", [{"drops": 50, "fct_ratio_ps": 3.0, "mean_fct_s": 3.0},
                             {"drops": 40, "fct_ratio_ps": 2.5, "mean_fct_s": 2.2}])
    row = make_row(EX1, "ns3", rcp, tcp)
    assert row.status == PASS, [v.text() for v in row.verdicts]
    assert row.rcp["fct_over_tcp"] == pytest.approx([1 / 3, 0.5])
    assert row.cell("tcp", "drops", ".0f") == "45 (40-50)"


def test_one_seeds_drop_fails_the_row_and_names_the_figure():
    rcp = _runs("rcp", [{"drops": 0, "fct_ratio_ps": 1.1, "mean_fct_s": 1.0},
                        {"drops": 7, "fct_ratio_ps": 1.1, "mean_fct_s": 1.0}])
    tcp = _runs("tcp:reno", [{"mean_fct_s": 3.0}, {"mean_fct_s": 3.0}])
    row = make_row(EX1, "ns3", rcp, tcp)
    assert row.status == FAIL
    assert [v.text() for v in row.verdicts if not v.passed] == ["ex1-lossless: 7 <= 0 FAIL"]


def test_a_void_run_fails_the_row_whatever_the_figures():
    good = {"drops": 0, "fct_ratio_ps": 1.0, "mean_fct_s": 1.0}
    rcp = _runs("rcp", [good, good], valid=[True, False])
    row = make_row(EX1, "ns3", rcp, _runs("tcp:reno", [{"mean_fct_s": 2.0}] * 2))
    assert row.status == FAIL and all(v.passed for v in row.verdicts)
    assert "1 void run" in row.note and "died" in row.note


def test_a_condition_that_cannot_be_expressed_says_why_and_runs_nothing():
    c = Condition("reverse", "congested reverse links", why_not="no reverse traffic")
    row = make_row(c, "ns3", None, None)
    assert row.status == NOT_RUN and "no reverse traffic" in row.note and not row.verdicts
    with pytest.raises(ValueError):
        Condition("both", "x", "fct-short", why_not="and a reason")
    failed = make_row(EX1, "ns3", None, None, failure="run failed: talk-example1 rcp seed 2: exited with status 1")
    assert failed.status == FAIL and "exited" in failed.note
    with pytest.raises(ValueError, match="unknown targets"):
        Condition("bad", "x", "fct-short", targets=("no-such-target",))


def test_engine_specific_targets_apply_on_their_engine_only():
    c = Condition("fct", "load", "fct", "load=0.7", targets=("fct-bins-ns3", "fct-bins-mininet"))
    flows = [{"packets": 5, "ps_ratio": 1.2, "fct_s": 1.0}] * 25
    rcp = _runs("rcp", [{}], flows=flows)
    assert [v.target.name for v in make_row(c, "ns3", rcp, None).verdicts] == ["fct-bins-ns3"]
    assert make_row(c, "ns3", rcp, None).status == FAIL           # 1.2 > 1.15
    assert make_row(c, "mininet", rcp, None).status == PASS       # 1.2 <= 1.25


def test_the_worst_bin_counts_bins_of_twenty_flows_or_more():
    small = [{"packets": 5, "ps_ratio": 1.1, "fct_s": 1.0}] * 20
    few_large = [{"packets": 500, "ps_ratio": 3.0, "fct_s": 9.0}] * 19
    assert worst_bin(small + few_large) == pytest.approx(1.1)
    assert worst_bin(few_large) is None


def test_rcp_is_compared_with_tcp_seed_by_seed():
    rcp = _runs("rcp", [{"mean_fct_s": 1.0}, {"mean_fct_s": 2.0}, {"mean_fct_s": 3.0}])
    tcp = _runs("tcp:reno", [{"mean_fct_s": 2.0}, {"mean_fct_s": 4.0}, {"mean_fct_s": 1.0}], valid=[True, False, True])
    assert fct_over(rcp, tcp) == [0.5, 3.0]


# ------------------------------------------------------------------------------------------------ table

def _rows():
    rcp = _runs("rcp", [{"drops": 0, "fct_ratio_ps": 1.1, "mean_fct_s": 1.0, "mean_queue_pkts": 0.5,
                         "max_queue_pkts": 12, "utilisation": 0.9}])
    tcp = _runs("tcp:reno", [{"drops": 3, "fct_ratio_ps": 2.0, "mean_fct_s": 2.0}])
    return [make_row(EX1, "ns3", rcp, tcp, results="talk-example1/summary.md"),
            make_row(Condition("reverse", "congested reverse links", why_not="no | reverse"), "ns3", None, None)]


def test_the_table_has_a_row_per_condition_in_markdown_csv_and_json(tmp_path):
    rows = _rows()
    text = write_table(rows, tmp_path, "# title")
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(lines) == 1 + len(rows)
    assert "[summary](talk-example1/summary.md)" in lines[1] and "| PASS |" in lines[1]
    assert "no \\| reverse" in lines[2] and "| NOT RUN |" in lines[2]
    assert "1 PASS, 0 FAIL, 1 not run, of 2 conditions." in text
    parsed = list(csv.reader(io.StringIO((tmp_path / "table.csv").read_text())))
    assert parsed[0] == headers() and len(parsed) == 3 and all(len(r) == len(headers()) for r in parsed)
    assert parsed[1][headers().index("RCP drops")] == "0" and parsed[1][headers().index("TCP drops")] == "3"
    data = json.loads((tmp_path / "table.json").read_text())
    assert [r["status"] for r in data["rows"]] == ["PASS", "NOT RUN"]
    assert data["rows"][0]["targets"][0] == {"target": "ex1-lossless", "measured": 0, "passed": True}
    assert set(data["targets"]) == set(TARGETS)
    assert markdown(rows) and as_csv(rows) and as_json(rows)


def test_json_writes_an_infinite_figure_as_a_word():
    c = Condition("ex2", "bandwidth change", "talk-example2", targets=("ex2-refill",))
    row = make_row(c, "ns3", _runs("rcp", [{"refill_s": math.inf}]), None)
    assert row.status == FAIL and row.cell("rcp", "refill_s", ".2f") == "never"
    assert json.loads(as_json([row]))["rows"][0]["targets"][0]["measured"] == "inf"


# ------------------------------------------------------------------------------------------- conditions

def test_every_condition_names_an_experiment_and_sweep_point_that_exist():
    for c in SUITE:
        if not c.runs:
            assert c.why_not
            continue
        exp = load_experiment(resolve(c.experiment))
        assert c.variant in [v.label for v in exp.variants()], c.name
        assert c.targets, c.name


def test_the_suite_covers_the_talks_list_of_conditions():
    talk = {"flow sizes", "mean flow size", "flow-size distributions", "non-Poisson arrivals", "load",
            "link capacity", "RTT", "flows with different RTTs", "multiple bottlenecks", "congested reverse links",
            "flash crowd", "bandwidth change", "talk Example 1", "TCP mix"}
    assert talk <= {c.varies for c in SUITE}


def test_each_experiment_runs_once_with_the_schemes_its_rows_need():
    invs = invocations(list(SUITE))
    names = [i.experiment for i in invs]
    assert len(names) == len(set(names))
    by = {i.experiment: i for i in invs}
    assert by["short-flows"].schemes == ("rcp", "tcp:reno") and by["tcp-mix-reno"].schemes == ("rcp",)
    assert by["talk-example2"].duration_s == 60 and by["fct"].seeds == (1, 2, 3)
    assert by["talk-example2"].command("ns3") == ["python", "-m", "topo.run", "talk-example2", "--engine", "ns3",
                                                  "--schemes", "rcp,tcp:reno", "--seeds", "1,2,3", "--duration", "60"]


def test_the_mininet_subset_leaves_out_what_the_emulation_cannot_reach():
    subset = select("mininet")
    experiments = {c.experiment for c in subset if c.runs}
    assert not experiments & {"talk-example1", "talk-example2", "fct-capacity"}
    assert {"fct-short", "convergence-short", "fct", "short-flows", "flash-crowd", "tcp-mix-reno"} <= experiments
    assert any(not c.runs for c in subset)            # the rows that cannot be expressed still say so
    assert len(select("ns3")) == len(SUITE)
    assert [c.name for c in select("ns3", ["flash crowd"])] == ["flash crowd"]
    with pytest.raises(ValueError, match="no condition"):
        select("ns3", ["flash mob"])


def test_tcp_flows_run_the_experiments_tcp_cc(tmp_path):
    [exp] = load_invocation("tcp-mix-reno")
    variant = next(v for v in exp.variants() if v.label == "tcp_flows=2")
    ccs = [item.command[item.command.index("--cc") + 1]
           for item in schedule(exp, variant, exp.scheme("rcp"), 1, RunDir(tmp_path))]
    assert ccs == ["tcp:reno", "tcp:reno", "rcp", "rcp"]
    assert refusal(exp, "rcp") is None and tcp_algorithm(exp, exp.scheme("rcp")) == "ns3::TcpNewReno"
    bad = tmp_path / "bad.toml"
    bad.write_text((resolve("tcp-mix-reno")).read_text().replace('tcp_cc = "tcp:reno"', 'tcp_cc = "rcp"'))
    with pytest.raises(ExperimentError, match="tcp_cc"):
        load_experiment(bad)


# ------------------------------------------------------------------------------------------------- Dask

TINY = textwrap.dedent("""\
    description = "two long flows for 2 s on 12 Mb/s, 40 ms: the evaluation suite's test of its Dask path"
    topology = "dumbbell"
    duration_s = 2
    seeds = [1]

    [topology_params]
    pairs = 2
    bottleneck_mbps = 12
    rtt_ms = 40

    [[long]]
    sender = "h1"
    receiver = "r1"

    [[long]]
    sender = "h2"
    receiver = "r2"
    start_s = 0.5
    """)


def test_a_run_that_fails_in_its_worker_is_reported_not_raised():
    pytest.importorskip("distributed")
    from topo.evaluate.cluster import run_jobs

    class Broken:                     # not a Job: the task fails before any ns-3 process starts
        label = "broken run"
        root = None
    said = []
    out = run_jobs([Broken()], workers=1, done=lambda job, meta, failure: said.append(failure))
    assert list(out) == [None] and isinstance(out[None], str) and said == [out[None]]


@pytest.mark.timeout(900)
def test_tiny_runs_through_a_local_dask_cluster_of_two_workers(tmp_path):
    pytest.importorskip("distributed")
    from topo.ns3 import build
    why = build.unavailable()
    if why:
        pytest.skip(f"the ns-3 engine cannot run here: {why}")
    from topo.evaluate.suite import run_suite

    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    c = Condition("tiny", "convergence", str(path), targets=("default-lossless", "conv-jain"))
    out = tmp_path / "out"
    said = []
    rows, text = run_suite([c], "ns3", out, workers=2, seeds=(1,), say=said.append)
    [row] = rows
    assert row.status in (PASS, FAIL) and not row.note, row.note
    assert [v.target.name for v in row.verdicts] == ["default-lossless", "conv-jain"]
    assert row.rcp["drops"] == [row.verdicts[0].measured] and row.tcp["drops"][0] is not None
    metas = [json.loads(p.read_text()) for p in sorted(out.glob("tiny/*/seed1/run.json"))]
    assert sorted(m["scheme"] for m in metas) == ["rcp", "tcp:reno"]
    assert all(m["parallel_runs"] == 2 and m["engine"] == "ns3" for m in metas)
    assert (out / "tiny" / "summary.md").is_file() and (out / "tiny" / "rcp" / "seed1" / "flows_h1.jsonl").is_file()
    assert (out / "table.md").read_text() == text and "[summary](tiny/summary.md)" in text
    assert any("2 ns-3 runs" in line for line in said) and sum("seed 1:" in line for line in said) == 2


def test_the_command_line_lists_without_running_and_refuses_bad_input(capsys, tmp_path):
    from topo.evaluate.__main__ import main

    assert main(["--list", "--engine", "mininet", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "congested reverse links: congested reverse links; not expressible" in out
    assert f"-m topo.run tcp-mix-reno --engine mininet --schemes rcp --seeds 1,2,3 --out {tmp_path}" in out
    assert not any(tmp_path.iterdir())
    assert main(["--seeds", "a"]) == 2 and "--seeds takes integers" in capsys.readouterr().err
    assert main(["--engine", "mininet", "--scheduler", "tcp://h:8786"]) == 2
    assert main(["--only", "flash mob"]) == 2 and "no condition 'flash mob'" in capsys.readouterr().err


def test_another_rcp_preset_is_judged_in_the_defaults_place(capsys):
    from topo.evaluate.__main__ import again, main

    assert main(["--list", "--preset", "rcp-plain", "--only", "talk Example 1;TCP mix 1 of 4 Reno"]) == 0
    out = capsys.readouterr().out
    assert "-m topo.run talk-example1 --engine ns3 --schemes rcp-plain,tcp:reno --seeds 1,2,3" in out
    assert "-m topo.run tcp-mix-reno --engine ns3 --schemes rcp-plain --seeds 1,2,3" in out
    assert again("ns3", None, (1,), "rcp-plain") == \
        ".venv/bin/python -m topo.evaluate --engine ns3 --seeds 1 --preset rcp-plain"
    assert again("ns3", None, SEEDS) == ".venv/bin/python -m topo.evaluate --engine ns3"
    assert main(["--preset", "reno-iw2"]) == 2 and "not the routers" in capsys.readouterr().err
    assert main(["--preset", "rcp-fast"]) == 2 and "no preset 'rcp-fast'" in capsys.readouterr().err


def test_the_estimate_counts_each_runs_import_and_the_packets_its_link_carries():
    from topo.evaluate.suite import CPU_S_PER_PACKET, IMPORT_CPU_S, estimate_cpu_s

    [ex1] = load_invocation("talk-example1", ["rcp", "tcp:reno"], None, [1, 2, 3])
    # 100 Mb/s in data frames (the link shapes whole packets per second), at load 0.5 for 30 s
    pps = 100e6 / (8 * 1078)
    assert estimate_cpu_s(ex1) == pytest.approx(6 * (IMPORT_CPU_S + CPU_S_PER_PACKET * pps * 0.5 * 30), rel=1e-3)
    [flash] = load_invocation("flash-crowd", ["rcp"], 15, [1])  # long flows fill the link
    assert estimate_cpu_s(flash) == pytest.approx(IMPORT_CPU_S + CPU_S_PER_PACKET * 12e6 / (8 * 1078) * 15, rel=1e-3)

"""The summary's numbers from hand-made runs (no Mininet)."""

import json
import shutil

import pytest

from p4rcp.toolchain import ROOT
from p4rcp.topology import load_topology
from topo.experiment import ExperimentError
from topo.report import void_runs
from topo.report.metrics import _times_to_fair_share, aggregate
from topo.report.tables import summary_table
from topo.run import report_again

TOPOLOGY = load_topology(ROOT / "topo" / "topologies" / "dumbbell.toml")


def _run(events, rates):
    return {"meta": {"events": events}, "rates": rates}


def test_time_to_fair_share_waits_for_the_slowest_flow():
    C = 16e6
    share = C / 2 * TOPOLOGY.mss_bytes / TOPOLOGY.data_frame_bytes / 2 / 1e3   # kb/s per flow after halving
    fast = [(100 + i / 10, share) for i in range(100)]
    slow = [(100 + i / 10, 2 * share if i < 30 else share) for i in range(100)]
    events = [{"unix_s": 100.0, "bottleneck_scale": 0.5}]
    [t] = _times_to_fair_share(_run(events, {"a": fast, "b": slow}), TOPOLOGY, C)
    assert 3.0 <= t <= 3.5


def test_a_flow_that_never_settles_before_the_next_event_says_never():
    C = 16e6
    half = C / 2 * TOPOLOGY.mss_bytes / TOPOLOGY.data_frame_bytes / 2 / 1e3
    stuck = [(100 + i / 10, 2 * half) for i in range(200)]      # keeps its old rate
    events = [{"unix_s": 100.0, "bottleneck_scale": 0.5}, {"unix_s": 110.0, "bottleneck_scale": 1.0}]
    assert _times_to_fair_share(_run(events, {"a": stuck, "b": stuck}), TOPOLOGY, C) == [None, 0.0]


def _m(seed=1, **figures):
    return {"seed": seed, "valid": True, "problems": [], "done": 2, "flows": 2, **figures}


def test_summary_has_a_settling_column_only_with_events():
    row = _m(utilisation=0.9)
    plain = summary_table([("rcp", aggregate([row]))])
    assert "fair share" not in plain
    table = summary_table([("rcp", aggregate([{**row, "to_fair_share_s": [0.8, None]}])),
                           ("tcp", aggregate([{**row, "valid": False, "problems": ["cpu"]}]))])
    header, _, rcp, tcp = table.splitlines()
    assert "to fair share after each event (s)" in header
    assert rcp.endswith("| 0.8 / never |")
    assert "INVALID: seed 1: cpu" in tcp and tcp.count("|") == header.count("|")


def test_an_event_some_seeds_never_reached_shows_the_others_and_the_count():
    runs = [_m(1, to_fair_share_s=[1.0, 0.4]), _m(2, to_fair_share_s=[None, 0.6]), _m(3, to_fair_share_s=[3.0, None])]
    rcp = summary_table([("rcp", aggregate(runs))]).splitlines()[2]
    assert rcp.endswith("| 2.0 (1.0-3.0), never in 1 of 3 / 0.5 (0.4-0.6), never in 1 of 3 |")
    all_never = summary_table([("rcp", aggregate([_m(1, to_fair_share_s=[None])]))]).splitlines()[2]
    assert all_never.endswith("| never |")


def test_summary_gives_the_mean_and_range_over_valid_seeds():
    runs = [_m(1, fct_ratio_ps=1.2, utilisation=0.9), _m(2, fct_ratio_ps=1.4, utilisation=0.9),
            {**_m(3, fct_ratio_ps=9.9), "valid": False, "problems": ["input overrun"]}]
    agg = aggregate(runs)
    assert (agg["valid_runs"], agg["runs"], agg["done"], agg["problems"]) == (2, 3, 4, ["seed 3: input overrun"])
    header, _, row = summary_table([("rcp", agg)]).splitlines()
    cells = dict(zip(header.strip("| ").split(" | "), row.strip("| ").split(" | ")))
    assert cells["valid runs"] == "2/3" and cells["flows done"] == "4/4"
    assert cells["mean FCT / FCT_PS"] == "1.30 (1.20-1.40)" and cells["utilisation"] == "0.90"
    assert "Jain" not in cells      # no run has one


def test_throughput_counts_only_the_time_the_flows_shared_the_link():
    from types import SimpleNamespace
    from topo.report.metrics import _steady_goodputs, _steady_window
    exp = SimpleNamespace(long_flows=[SimpleNamespace(start_s=0.0), SimpleNamespace(start_s=0.0)], duration_s=4.0)
    flows = [{"host": "h1", "flow_id": 1, "start_unix_s": 100.0}, {"host": "h2", "flow_id": 2, "start_unix_s": 100.0}]
    shared = [(100 + i / 10, 5000.0) for i in range(1, 101)]          # both at 5 Mb/s until 110 s
    alone = shared + [(110 + i / 10, 10000.0) for i in range(1, 31)]   # then h1 alone at 10 Mb/s
    run = {"flows": flows, "rates": {"h1/1": alone, "h2/2": shared}}
    assert _steady_goodputs(run, _steady_window(run, exp)) == [5000.0, 5000.0]


def test_fairness_is_judged_over_the_last_half_of_the_run():
    from types import SimpleNamespace
    from topo.report.metrics import _steady_goodputs, _steady_window
    exp = SimpleNamespace(long_flows=[SimpleNamespace(start_s=0.0), SimpleNamespace(start_s=1.0)], duration_s=20.0)
    flows = [{"host": "h1", "flow_id": 1, "start_unix_s": 100.0}, {"host": "h2", "flow_id": 2, "start_unix_s": 101.0}]
    times = [100 + i / 10 for i in range(11, 201)]
    converging = {"h1/1": [(t, 8000.0 if t < 110 else 5000.0) for t in times],    # fair from 110 s: the last half
                  "h2/2": [(t, 2000.0 if t < 110 else 5000.0) for t in times]}
    run = {"flows": flows, "rates": converging}
    assert _steady_goodputs(run, _steady_window(run, exp)) == [5000.0, 5000.0]


def test_a_flow_leaving_at_half_time_leaves_the_last_half_of_the_shared_time_as_the_window():
    from types import SimpleNamespace
    from topo.report.metrics import _steady_goodputs, _steady_window
    exp = SimpleNamespace(long_flows=[SimpleNamespace(start_s=0.0), SimpleNamespace(start_s=0.0)], duration_s=80.0)
    flows = [{"host": "h1", "flow_id": 1, "start_unix_s": 100.0}, {"host": "h2", "flow_id": 2, "start_unix_s": 100.0}]
    # h1 leaves at 40 s (its last sample 140.0); a last sample skewed by the departure is all the run's second
    # half holds of the time they shared
    h1 = [(100 + i / 2, 6000.0) for i in range(1, 80)] + [(140.0, 2000.0)]
    h2 = [(100 + i / 2, 3000.0) for i in range(1, 161)]
    run = {"flows": flows, "rates": {"h1/1": h1, "h2/2": h2}}
    assert _steady_window(run, exp) == (121.0, 140.0)
    assert _steady_goodputs(run, _steady_window(run, exp))[1] == 3000.0


def test_rtt_ratio_compares_the_shortest_and_longest_rtt_flows():
    from topo.report.metrics import _rtt_ratio
    mixed = load_topology(ROOT / "topo" / "topologies" / "dumbbell.toml", rtt_ms=[10, 100])
    flows = [{"host": "h2"}, {"host": "h1"}]           # h1: 10 ms, h2: 100 ms
    assert _rtt_ratio({"topology": mixed, "flows": flows}, [2000.0, 6000.0]) == 3.0
    assert _rtt_ratio({"topology": TOPOLOGY, "flows": flows}, [2000.0, 6000.0]) is None
    table = summary_table([("rcp", aggregate([_m(rtt_ratio=3.0)]))])
    header, _, rcp = table.splitlines()
    assert "throughput short / long RTT" in header and rcp.endswith("| 3.00 |")
    assert "short / long" not in summary_table([("rcp", aggregate([_m()]))])


def test_report_again_rebuilds_the_summary_from_a_results_directory(tmp_path):
    shutil.copy(ROOT / "topo" / "experiments" / "rtt-fairness.toml", tmp_path)
    for scheme in ("tcp", "rcp"):       # written in another order than the experiment's
        run = tmp_path / "rtt_ms=10-50" / scheme
        run.mkdir(parents=True)
        meta = {"experiment": "rtt-fairness", "variant": "rtt_ms=10-50", "scheme": scheme, "duration_s": 30.0,
                "load": None, "capacity_bps": {"s1:3": 12e6}, "events": [], "valid": False,
                "problems": [f"{scheme} broke"]}
        (run / "run.json").write_text(json.dumps(meta))
    text = report_again(tmp_path)
    assert text.index("INVALID: seed 1: rcp broke") < text.index("INVALID: seed 1: tcp broke")   # the experiment's order
    assert (tmp_path / "summary.md").read_text() == text
    with pytest.raises(ExperimentError, match="no run.json"):
        report_again(tmp_path / "rtt_ms=10-50" / "missing")


def test_parking_lot_gives_each_links_use_against_its_max_min_use():
    from topo.report.metrics import _per_link
    from topo.report.tables import max_min_table
    topo = load_topology(ROOT / "topo" / "topologies" / "parking_lot.toml")
    links = topo.bottlenecks                      # 12, 6 and 10 Mb/s in a chain
    capacity = {f"{sw}:{port}": topo.switch(sw).ports[port].capacity_bps for sw, port in links}
    flows = [{"host": h, "dst": f"{topo.hosts['r3'].ip}:5000"} for h in ("h1", "h2", "h3")]
    records = [{"switch": sw, "port": port, "time": 100 + t / 100, "period_s": 0.01, "q_bytes": 2 * 1078,
                "C_bps": capacity[f"{sw}:{port}"], "y_bps": use * capacity[f"{sw}:{port}"]}
               for (sw, port), use in zip(links, (0.3, 0.9, 0.95)) for t in range(300)]
    run = {"topology": topo, "meta": {"capacity_bps": capacity}, "flows": flows}
    per_link = _per_link(run, records)
    first, middle, last = (per_link[key] for key in capacity)
    # h1 and h2 share the 6 Mb/s link (2.78 Mb/s each), h3 takes the rest of the 10 Mb/s one; the 12 Mb/s
    # link carries only h1's 2.78 of its 11.13 Mb/s of payload
    assert first["max_min_use"] == pytest.approx(0.25, abs=0.01)
    assert middle["max_min_use"] == pytest.approx(1.0) and last["max_min_use"] == pytest.approx(1.0)
    assert [x["utilisation"] for x in (first, middle, last)] == pytest.approx([0.3, 0.9, 0.95])
    assert first["queue_pkts"] == pytest.approx(2.0)
    agg = aggregate([_m(1, max_min={"h1->r3": (2.5, 2.78)}, links=per_link),
                     _m(2, max_min={"h1->r3": (2.7, 2.78)}, links=per_link)])
    table = max_min_table([("rcp", agg)])
    assert f"| {links[0][0]}:{links[0][1]} | 11.13 | 0.25 | 0.30 (2.0) |" in table


def test_on_a_parking_lot_jain_is_of_goodput_over_the_max_min_share(tmp_path):
    from types import SimpleNamespace
    from topo.report.metrics import metrics
    topo = load_topology(ROOT / "topo" / "topologies" / "parking_lot.toml")
    capacity = {f"{sw}:{port}": topo.switch(sw).ports[port].capacity_bps for sw, port in topo.bottlenecks}
    exp = SimpleNamespace(long_flows=[SimpleNamespace(start_s=0.0)] * 3, duration_s=20.0)
    flows = [{"host": h, "flow_id": 1, "dst": f"{topo.hosts['r3'].ip}:5000", "start_unix_s": 100.0,
              "size_bytes": 0} for h in ("h1", "h2", "h3")]

    def run_of(goodputs_kbps):
        rates = {f"{f['host']}/1": [(100 + i / 10, g) for i in range(1, 201)] for f, g in zip(flows, goodputs_kbps)}
        return {"topology": topo, "flows": flows, "rates": rates, "control": {}, "metrics": {"seed": 1},
                "meta": {"capacity_bps": capacity, "valid": True, "problems": [], "duration_s": 20.0}}

    def figure_jain(run):
        """The rates figure's Jain's index over time, as drawn."""
        from topo.report import figures
        drawn = []
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(figures, "_save", lambda fig, path: drawn.append(fig) or path)
            figures.plot_rates(tmp_path / "rates.png", {"rcp": run})
        [line] = drawn[0].axes[1].get_lines()
        return list(line.get_ydata())

    # the max-min shares (2.78, 2.78, 3.71 Mb/s): perfectly fair, though the rates are not equal
    fair, unfair = run_of([2783.0, 2783.0, 3711.0]), run_of([3711.0, 2783.0, 2783.0])
    assert metrics(fair, exp)["jain"] == pytest.approx(1.0, abs=1e-3)
    assert metrics(unfair, exp)["jain"] < 0.96            # h1 above its share, h3 below
    # the figure judges as the table does
    assert figure_jain(fair) == pytest.approx([1.0] * len(figure_jain(fair)), abs=1e-3)
    assert max(figure_jain(unfair)) < 0.96


def test_void_runs_are_counted_over_every_experiment_of_an_invocation(tmp_path):
    def run(experiment, sub, valid, problems=()):
        d = tmp_path / experiment / "20261124-000000" / sub
        d.mkdir(parents=True)
        (d / "run.json").write_text(json.dumps({"valid": valid, "problems": list(problems)}))
        return d.parents[len(sub.split("/")) - 1]

    fct = run("fct", "0.9/rcp/seed1", True)
    run("fct", "0.9/allegro/seed1", False, ["s1: bmv2 did not read 58 of 31987 frames"])
    conv = run("convergence", "rcp/seed1", True)
    assert void_runs([fct, conv]) == (1, 3, ["fct/0.9/allegro/seed1: s1: bmv2 did not read 58 of 31987 frames"])


def test_router_figures_of_the_steady_state_leave_out_the_start_and_the_joins():
    from types import SimpleNamespace
    from topo.report.metrics import metrics
    exp = SimpleNamespace(long_flows=[SimpleNamespace(start_s=0.0), SimpleNamespace(start_s=2.0)], duration_s=20.0)
    flows = [{"host": "h1", "flow_id": 1, "start_unix_s": 100.0, "size_bytes": 0},
             {"host": "h2", "flow_id": 2, "start_unix_s": 102.0, "size_bytes": 0}]
    rates = {f"{f['host']}/{f['flow_id']}": [(100 + i / 10, 5000.0) for i in range(21, 201)] for f in flows}
    [(sw, port)] = TOPOLOGY.bottlenecks
    # half the link and a 20-packet queue while the flows start and join, then full and a 1-packet queue
    records = [{"switch": sw, "port": port, "time": 100 + t / 100, "period_s": 0.01, "C_bps": 12e6,
                "y_bps": (0.5 if t < 1000 else 1.0) * 12e6, "q_bytes": (20 if t < 1000 else 1) * 1078}
               for t in range(2000)]
    run = {"topology": TOPOLOGY, "flows": flows, "rates": rates, "control": {(sw, port): records},
           "meta": {"capacity_bps": {f"{sw}:{port}": 12e6}, "valid": True, "problems": [], "duration_s": 20.0,
                    "events": []}}
    m = metrics(run, exp)
    assert m["utilisation"] == pytest.approx(0.75) and m["mean_queue_pkts"] == pytest.approx(10.5)
    assert m["steady_utilisation"] == pytest.approx(1.0) and m["steady_queue_pkts"] == pytest.approx(1.0)


def test_retransmissions_and_queue_drops_are_figures_of_a_run():
    from topo.report.metrics import metrics
    run = {"meta": {"valid": True, "problems": [], "capacity_bps": {"s1:3": 12e6}, "duration_s": 10.0,
                    "bottleneck_drops": {"s1:3": 7}},
           "flows": [{"host": "h1", "flow_id": 1, "packets_sent": 300, "retransmissions": 3, "start_unix_s": 0.0},
                     {"host": "h2", "flow_id": 2, "packets_sent": 100, "retransmissions": 1, "start_unix_s": 0.0}],
           "rates": {}, "control": {}, "topology": TOPOLOGY}
    m = metrics(run, type("Exp", (), {"long_flows": [], "poisson": []})())
    assert m["retransmitted_pct"] == pytest.approx(1.0)
    assert m["bottleneck_drops"] == 7
    assert "dropped at the bottleneck (packets)" in summary_table([("rcp", aggregate([{**m, "seed": 1}]))])


def test_after_a_flash_crowd_the_peak_queue_and_the_time_to_a_full_link():
    from types import SimpleNamespace
    from topo.report.metrics import metrics
    exp = SimpleNamespace(long_flows=[SimpleNamespace(start_s=0.0, sender="h1"),
                                      SimpleNamespace(start_s=5.0, sender="h2"),
                                      SimpleNamespace(start_s=5.01, sender="h2")], duration_s=10.0)
    [(sw, port)] = TOPOLOGY.bottlenecks
    # full until the burst at 105 s, a 30-packet queue and half the link for 1.5 s, then full again
    records = [{"switch": sw, "port": port, "time": 100 + t / 100, "period_s": 0.01, "C_bps": 12e6,
                "y_bps": (0.5 if 500 <= t < 650 else 1.0) * 12e6, "q_bytes": (30 if 500 <= t < 520 else 1) * 1078}
               for t in range(1000)]
    run = {"topology": TOPOLOGY, "flows": [{"host": "h1", "flow_id": 1, "start_unix_s": 100.0, "size_bytes": 0}],
           "rates": {}, "control": {(sw, port): records},
           "meta": {"capacity_bps": {f"{sw}:{port}": 12e6}, "valid": True, "problems": [], "duration_s": 10.0,
                    "events": []}}
    m = metrics(run, exp)
    assert m["burst_peak_queue_pkts"] == pytest.approx(30)
    assert m["burst_to_full_s"] == pytest.approx(1.5)


def _rate_run(starts_s, rates):
    """Long flows of h1, h2 (dumbbell, RTT 40 ms) starting at starts_s with goodput samples (t, kb/s)."""
    flows = [{"host": h, "flow_id": i, "start_unix_s": t, "fct_s": None} for i, (h, t) in enumerate(starts_s)]
    return {"flows": flows, "rates": {f"{f['host']}/{f['flow_id']}": rates[i] for i, f in enumerate(flows)}}


def test_flows_joining_within_an_rtt_are_one_join_timed_by_the_slowest():
    from topo.report.metrics import _join_times
    C = 15e6
    half = TOPOLOGY.payload_bps(C) / 2 / 1e3
    ticks = [100 + i / 100 for i in range(300)]          # 3 s of 10 ms samples
    fast = [(t, half) for t in ticks]
    slow = [(t, half * (2 if t < 101.0 else 1)) for t in ticks]   # settles 1 s after the join
    # h1 alone from 99 s; h2 (and, 10 ms later, h1's second flow) join at 100 s: one join of two flows
    run = _rate_run([("h1", 99.0), ("h2", 100.0), ("h1", 100.01)],
                    [[(t, 2 * half) for t in ticks], fast, slow])
    half3 = TOPOLOGY.payload_bps(C) / 3 / 1e3
    run["rates"] = {k: [(t, v * half3 / half) for t, v in s] for k, s in run["rates"].items()}
    [rtts] = _join_times(run, TOPOLOGY, C)
    assert 25 <= rtts <= 26.5    # the slow flow: 1 s (25 RTTs) plus the one-RTT mean catching up


def test_flows_starting_an_rtt_apart_are_separate_joins():
    from topo.report.metrics import _join_times
    C = 15e6
    share2 = TOPOLOGY.payload_bps(C) / 2 / 1e3
    ticks = [100 + i / 100 for i in range(300)]
    run = _rate_run([("h1", 99.0), ("h2", 100.0), ("h1", 100.5)],
                    [[(t, share2) for t in ticks]] * 3)
    assert len(_join_times(run, TOPOLOGY, C)) == 2


def test_the_sweep_figure_takes_seeds_that_agree(tmp_path):
    from types import SimpleNamespace

    from p4rcp.analysis import Spread
    from topo.report.figures import plot_sweep
    agreed = Spread.of([0.1, 0.1, 0.1])            # fmean: 0.10000000000000002, which the error bars refused
    assert agreed.lo <= agreed.mean <= agreed.hi
    by_variant = {"a": [("rcp", {"jain": agreed})], "b": [("rcp", {"jain": Spread.of([0.5, 0.7])})]}
    assert plot_sweep(tmp_path / "sweep.png", SimpleNamespace(name="x"), by_variant).is_file()


def test_sweep_axes_span_at_least_a_tenth_of_the_values():
    from topo.report.figures import readable_ylim
    assert readable_ylim(0.99999999, 1.0) == pytest.approx((0.95, 1.05), abs=1e-6)
    assert readable_ylim(11.1275, 11.1280) == pytest.approx((11.1275 - 0.556, 11.1280 + 0.556), abs=1e-3)
    assert readable_ylim(0.5, 1.2) == (0.5, 1.2)          # data that already spans enough keeps its limits
    assert readable_ylim(0.0, 0.0) == (0.0, 0.0)


def test_two_flows_at_the_same_rate_both_show_in_the_rates_figure(tmp_path, monkeypatch):
    from topo.report import figures
    drawn = []
    monkeypatch.setattr(figures, "_save", lambda fig, path: drawn.append(fig) or path)
    samples = [(100 + i / 10, 5000.0) for i in range(100)]
    [(sw, port)] = TOPOLOGY.bottlenecks
    run = {"topology": TOPOLOGY, "flows": [], "rates": {"h1/1": samples, "h2/2": list(samples)},
           "control": {(sw, port): [{"time": 100.0}]}, "metrics": {"seed": 1},
           "meta": {"capacity_bps": {f"{sw}:{port}": 12e6}, "valid": True}}
    figures.plot_rates(tmp_path / "rates.png", {"rcp": run})
    first, second = [line for line in drawn[0].axes[0].get_lines() if "flow" in line.get_label()]
    assert list(first.get_ydata()) == list(second.get_ydata())
    # the second line is drawn over the first: it must be thinner and broken for the first to show
    assert second.get_linewidth() < first.get_linewidth() and second.get_linestyle() != first.get_linestyle()


def test_fct_over_exact_processor_sharing_of_the_runs_own_arrivals():
    """Two Poisson flows of one size arriving together share the link from the start: under exact processor
    sharing each takes 2 L / C. One finishing in 1.5 RTT + 2 L / C is at 1, one twice as long at 2."""
    from p4rcp.analysis import service_bytes
    from topo.report.metrics import _rtt, metrics
    C, size = 12e6, 100_000
    L = 8 * service_bytes(size, TOPOLOGY.mss_bytes, TOPOLOGY.data_frame_bytes, "bytes")
    exact = 1.5 * _rtt(TOPOLOGY, "h1") + 2 * L / C
    flows = [{"host": h, "flow_id": i, "index": i, "size_bytes": size, "start_unix_s": 100.0, "completed": True,
              "fct_s": k * exact, "fct_recv_s": k * exact} for i, (h, k) in enumerate((("h1", 1), ("h2", 2)))]
    run = {"meta": {"valid": True, "problems": [], "capacity_bps": {"s1:3": C}, "duration_s": 10.0, "load": 0.5,
                    "load_unit": "bytes"}, "flows": flows, "rates": {}, "control": {}, "topology": TOPOLOGY}
    m = metrics(run, type("Exp", (), {"long_flows": [], "poisson": []})())
    assert m["fct_ratio_ps_exact"] == pytest.approx(1.5)

"""The soak's judgments (topo/soak.py) on hand-made records: memory growth after the first window, void
windows, FCT per window. The hour itself is `make soak`."""

import pytest

from p4rcp.stalls import Stall
from p4rcp.topology import build_topology
from topo import soak

T0 = 1000.0


def test_memory_growth_is_measured_from_the_end_of_the_first_window():
    memory = [{"elapsed_s": t, "rss_bytes": {"s1 simple_switch": rss, "runner": 100}}
              for t, rss in ((0, 50), (60, 80), (600, 100), (660, 101), (1200, 104), (1800, 103))]
    memory.append({"elapsed_s": 1860, "rss_bytes": {"runner": 100}})      # the switch had stopped
    growth = soak.memory_growth(memory, 600)
    assert growth["s1 simple_switch"] == {"samples": 6, "base_bytes": 100, "max_after_bytes": 104,
                                          "growth": pytest.approx(0.04)}
    assert growth["runner"]["growth"] == 0
    assert soak.memory_growth([{"elapsed_s": 0, "rss_bytes": {"x": 1}}], 600)["x"]["growth"] is None


def cpu(t, total=50.0, other=0.0, s1=40.0, unread=0):
    return {"time": t, "total_pct": total, "other_pct": other, "s1_pct": s1, "s1_unread": unread}


def test_a_window_is_void_for_the_machines_causes_only_in_that_window():
    spans = soak.windows(T0, 30, 10)
    samples = [cpu(T0 + i * 0.5) for i in range(60)]
    for i in range(20, 24):                                   # second window: 4 of 20 samples saturated
        samples[i] = cpu(T0 + i * 0.5, total=99)
    for i in range(40, 60):                                   # third window: 20 frames lost for good
        samples[i] = cpu(T0 + i * 0.5, unread=0 if i < 50 else 20)
    stall = Stall("s1", 3, T0 + 25.0, "late answer", "it answered a control read after 30 ms")
    why = soak.void_windows(samples, [stall], spans, ["s1"])
    assert why[0] == []
    assert why[1] == ["total CPU saturated"]
    assert why[2][0] == "s1 lost 20 frames of input" and why[2][1].startswith("s1 stalled 5.0 s into the run")


def test_fct_per_window_counts_the_flows_that_started_in_it():
    topology = build_topology({"kind": "dumbbell", "pairs": 2, "rtt_ms": 200, "bottleneck_mbps": 15})
    flows = [{"host": "h1", "start_unix_s": T0 + t, "size_bytes": 25_000, "completed": done, "fct_recv_s": fct}
             for t, done, fct in ((1, True, 0.5), (2, True, 0.7), (12, True, 0.6), (13, False, None))]
    [first, second] = soak.fct_windows(flows, topology, 0.9, soak.windows(T0, 20, 10))
    assert (first["flows"], first["completed"], second["flows"], second["completed"]) == (2, 2, 2, 1)
    assert first["median_fct_s"] == pytest.approx(0.6) and second["median_fct_s"] == 0.6
    assert first["load_offered"] == pytest.approx(second["load_offered"]) and 0 < first["load_offered"] < 0.1
    assert first["mean_fct_ratio_ps"] == pytest.approx(second["mean_fct_ratio_ps"]) and first["mean_fct_ratio_ps"] > 0


def test_fct_ps_takes_the_load_each_window_offered_and_the_nominal_one_past_saturation():
    """The same flow and FCT in a window offering 0.5 and in one offering 0.8: the busier window's bound is
    longer, its ratio smaller, as 1 / (1 - load) says; a window offering more than the link takes the nominal."""
    topology = build_topology({"kind": "dumbbell", "pairs": 2, "rtt_ms": 200, "bottleneck_mbps": 15})
    probe = {"host": "h1", "size_bytes": 1_000_000, "completed": True, "fct_recv_s": 2.0}
    one = soak.fct_windows([dict(probe, start_unix_s=T0)], topology, 0.9, [(T0, T0 + 10)])[0]["load_offered"]

    def window(start, load):
        return [dict(probe, start_unix_s=start + i * 0.01) for i in range(round(load / one))]
    flows = window(T0, 0.5) + window(T0 + 10, 0.8) + window(T0 + 20, 1.5)
    a, b, c = soak.fct_windows(flows, topology, 0.9, soak.windows(T0, 30, 10))
    assert (a["load_offered"], b["load_offered"]) == (pytest.approx(0.5, abs=one), pytest.approx(0.8, abs=one))
    assert a["mean_fct_ratio_ps"] > b["mean_fct_ratio_ps"]
    assert c["load_offered"] > 1
    assert c["mean_fct_ratio_ps"] < b["mean_fct_ratio_ps"]          # bound at the nominal 0.9


def test_the_summary_names_windows_in_minutes_or_seconds():
    def result(window_s):
        return {"duration_s": 3 * window_s, "window_s": window_s, "run": "r", "valid": True, "problems": [],
                "memory": {}, "memory_growth_max": None, "void_windows": 0, "fct_ratio_ps": 1.2,
                "windows_replay_arrivals": True,
                "fct_spread": 0.01, "windows": [{"from_s": i * window_s, "to_s": (i + 1) * window_s, "void": [],
                                                 "flows": 1, "completed": 1, "load_offered": 0.9,
                                                 "mean_fct_ratio_ps": 1.2,
                                                 "median_fct_s": 0.5} for i in range(3)]}
    hour = soak.summary(result(600))
    assert "load 0.9, 30 min" in hour and "| 10 min to 20 min |" in hour and "after the first 10 min;" in hour
    short = soak.summary(result(20))
    assert "load 0.9, 60 s" in short and "| 20 s to 40 s |" in short
    assert "Every window replays the same arrivals" in hour
    assert "Arrivals drawn over the whole run" in soak.summary(result(600) | {"windows_replay_arrivals": False})


def test_every_window_of_the_soak_replays_one_windows_arrivals():
    exp = soak.soak_experiment(3600, 600)
    assert exp.duration_s == 3600 and exp.schemes == ["rcp"] and exp.seeds == [1] and exp.load == 0.9
    assert exp.poisson and all(src.repeat_every_s == 600 and src.exact_load for src in exp.poisson)


def test_the_verdict_names_each_target_and_its_figure():
    result = {"memory": {"runner": {"growth": 0.062}, "s1 simple_switch": {"growth": 0.01}},
              "memory_growth_max": 0.062, "valid": True, "void_windows": 0, "windows": [{}] * 6,
              "fct_spread": 0.045}
    memory, voids, fct = soak.verdict(result)
    assert memory.startswith("memory: FAIL, largest growth +6.2% (runner)")
    assert voids == "void windows: PASS, 0 of 6; target 0"
    assert fct.startswith("FCT: PASS, each window within 4.5%")
    assert soak.verdict(result | {"valid": False})[1].startswith("void windows: FAIL")

"""The run monitor (p4rcp/monitor.py): samples go to their file as they are taken and only tallies stay in
memory, which give the same verdict the samples would."""

import json
import os
import time

from p4rcp import monitor as m


def sample(t, total=50.0, other=0.0, s1=40.0, unread=0):
    return {"time": t, "total_pct": total, "steal_pct": 0.0, "other_pct": other, "s1_pct": s1, "s1_unread": unread}


def test_the_tally_counts_what_the_verdict_needs_and_keeps_the_worst_backlog():
    tally = m.SampleTally()
    samples = [sample(100 + i) for i in range(20)]
    samples[3] = sample(103, total=99, s1=99)
    samples[4] = sample(104, total=99, s1=99, unread=40)
    samples[5] = sample(105, other=50, unread=12)
    samples[6] = sample(106, s1=None)                        # the switch had exited
    for s in samples:
        tally.add(s, {"s1": 1})
    assert (tally.samples, tally.first_time, tally.total_hot, tally.other_busy) == (20, 100, 2, 1)
    assert tally.switch_busy == {"s1": 2} and tally.peak_unread["s1"]["time"] == 104


def test_a_monitor_streams_its_samples_and_judges_from_its_tallies(tmp_path):
    path = tmp_path / "cpu.jsonl"
    unread = iter(range(1000))
    mon = m.Monitor({"s1": os.getpid()}, lambda: {"s1": next(unread)}, samples_path=path).start()
    time.sleep(4 * m.CPU_SAMPLE_S + 0.2)
    mon.stop()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == mon._tally.samples >= 3
    assert [s["s1_unread"] for s in lines] == list(range(len(lines)))
    assert not hasattr(mon, "samples")                      # nothing kept per sample
    peak = mon.backlog_peak("s1")
    assert f"most unread, {len(lines) - 1} frames" in peak
    assert mon.backlog_peak("s9") == ""
    assert mon.last_total_pct == lines[-1]["total_pct"]

import pytest

from p4rcp.topology import TopologyError, build_topology, load_topology
from p4rcp.toolchain import ROOT


def test_dumbbell_expands_hosts_ports_and_capacity():
    t = build_topology({"kind": "dumbbell", "pairs": 3, "rtt_ms": [20, 40, 60], "bottleneck_mbps": 10,
                        "data_frame_bytes": 1000})
    assert t.senders == ["h1", "h2", "h3"] and t.receivers == ["r1", "r2", "r3"]
    assert [t.hosts[h].delay_ms for h in t.senders] == [10, 20, 30]
    s1 = t.switch("s1")
    [bottleneck] = s1.rcp_ports
    assert bottleneck.peer == "s2" and bottleneck.queue_rate_pps == 1250
    assert bottleneck.capacity_bps == 10e6
    [back] = [p for p in t.switch("s2").ports.values() if p.peer == "s1"]
    assert not back.is_rcp and back.queue_rate_pps is None     # ACKs: unshaped
    assert t.bottlenecks == [("s1", bottleneck.number)]
    assert len({h.ip for h in t.hosts.values()}) == 6
    assert len({p.mac for s in t.switches.values() for p in s.ports.values()}) == 8


def test_routes_follow_shortest_paths_with_next_hop_macs():
    t = build_topology({"kind": "parking_lot", "bottlenecks": 2, "bottleneck_mbps": 10})
    s1, s2 = t.switch("s1"), t.switch("s2")
    routes = {r.prefix: r for r in t.routes("s1")}
    r2 = t.hosts["r2"]
    to_s2 = next(p for p in s1.ports.values() if p.peer == "s2")
    s2_back = next(p for p in s2.ports.values() if p.peer == "s1")
    assert routes[f"{r2.ip}/32"].port == to_s2.number
    assert routes[f"{r2.ip}/32"].dst_mac == s2_back.mac
    h1 = t.hosts["h1"]
    assert routes[f"{h1.ip}/32"].port == h1.port and routes[f"{h1.ip}/32"].dst_mac == h1.mac
    assert len(routes) == len(t.hosts)


def test_parking_lot_paths_cross_links_i_to_j():
    t = build_topology({"kind": "parking_lot", "bottlenecks": 3, "bottleneck_mbps": [12, 6, 10], "rtt_ms": 40})
    link = {i + 1: b for i, b in enumerate(t.bottlenecks)}
    assert [t.switch(sw).ports[p].capacity_bps for sw, p in t.bottlenecks] == pytest.approx([12e6, 6e6, 10e6], rel=0.01)
    assert t.path("h1", "r1") == [link[1]]
    assert t.path("h1", "r3") == [link[1], link[2], link[3]]
    assert t.path("h2", "r3") == [link[2], link[3]]
    assert t.path("h3", "r3") == [link[3]]


def test_bottleneck_queue_defaults_to_one_bdp():
    # 15 Mb/s of 1078-byte frames = 1739 packets/s; 200 ms -> 348 packets
    [(sw, port)] = (t := build_topology({"kind": "dumbbell", "pairs": 2, "rtt_ms": [100, 200],
                                         "bottleneck_mbps": 15})).bottlenecks
    assert t.switch(sw).ports[port].queue_depth_pkts == 348
    # a small BDP keeps bmv2's 64; an explicit depth wins
    small = build_topology({"kind": "dumbbell", "pairs": 1, "rtt_ms": 10, "bottleneck_mbps": 10})
    assert [small.switch(s).ports[p].queue_depth_pkts for s, p in small.bottlenecks] == [64]
    fixed = build_topology({"kind": "dumbbell", "pairs": 1, "bottleneck_mbps": 15, "queue_packets": 20})
    assert [fixed.switch(s).ports[p].queue_depth_pkts for s, p in fixed.bottlenecks] == [20]


def test_senders_access_links_run_at_a_multiple_of_the_fastest_bottleneck():
    t = build_topology({"kind": "parking_lot", "bottlenecks": 3, "bottleneck_mbps": [12, 6, 10],
                        "access_speedup": 2})
    fastest_mbps = 2 * max(t.switch(s).ports[p].capacity_bps for s, p in t.bottlenecks) / 1e6
    assert [t.hosts[h].access_mbps for h in t.senders] == pytest.approx([fastest_mbps] * 3)
    assert fastest_mbps == pytest.approx(24, rel=0.01)
    assert all(t.hosts[r].access_mbps is None for r in t.receivers)     # ACKs only: not shaped
    unlimited = build_topology({"kind": "dumbbell", "pairs": 1, "bottleneck_mbps": 10})
    assert unlimited.hosts["h1"].access_mbps is None


@pytest.mark.parametrize("params,message", [
    ({"kind": "ring"}, "kind must be one of"),
    ({"kind": "dumbbell", "pairs": 0, "bottleneck_mbps": 10}, "pairs must be a positive integer"),
    ({"kind": "dumbbell", "pairs": 2, "rtt_ms": [10], "bottleneck_mbps": 10}, "rtt_ms needs 2"),
    ({"kind": "dumbbell", "pairs": 1, "bottleneck_mbps": -1}, "bottleneck_mbps must be a positive"),
    ({"kind": "dumbbell", "pairs": 1, "bottleneck_mbps": 10, "queue_packets": "big"}, "queue_packets must be"),
    ({"kind": "parking_lot", "bottlenecks": 2, "bottleneck_mbps": [10]}, "needs one positive rate or 2"),
    ({"kind": "dumbbell", "pairs": 1, "bottleneck_mbps": 10, "access_speedup": 0.5}, "access_speedup must be"),
    ({"kind": "dumbbell", "pairs": 1, "bottleneck_mbps": 10, "access_speedup": "fast"}, "access_speedup must be"),
])
def test_bad_topologies_are_explained(params, message):
    with pytest.raises(TopologyError, match=message):
        build_topology(params)


def test_missing_and_broken_files(tmp_path):
    with pytest.raises(TopologyError, match="does not exist"):
        load_topology(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("kind = ")
    with pytest.raises(TopologyError, match="bad.toml"):
        load_topology(bad)


def test_shipped_topologies_load():
    files = sorted((ROOT / "topo" / "topologies").glob("*.toml"))
    assert files, "no topology files shipped"
    for f in files:
        assert load_topology(f).switches

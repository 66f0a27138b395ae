"""One place decides which runs and flows count, and computes every figure of a run from them.

Tables and figures take what this module returns: a figure can never show runs or flows that the tables
left out, or the other way round.
"""

from __future__ import annotations

import math
import statistics

from p4rcp.analysis import (Spread, bin_fct, bound_load, data_packets, fct_ps, jain_index, load_unit, max_min_shares,
                           measured_load, percentile, ps_sojourns, service_bytes, time_to_share, utilisation)


def metrics(run: dict, exp) -> dict:
    """One run's figures. FCT is the receiver's (first SYN sent to last byte received, the RCP papers'), its
    bound FCT_PS uses the load the run's arrivals offered and the flow's data, both in the link's unit."""
    topo = run["topology"]
    C = min(run["meta"]["capacity_bps"].values())
    unit = load_unit(run["meta"])
    m = {"flows": len(run["flows"]), "valid": run["meta"]["valid"], "problems": run["meta"]["problems"]}
    sent = sum(f.get("packets_sent") or 0 for f in run["flows"])
    if sent:
        m["retransmitted_pct"] = 100 * sum(f.get("retransmissions") or 0 for f in run["flows"]) / sent
    if "bottleneck_drops" in run["meta"]:
        m["bottleneck_drops"] = sum(run["meta"]["bottleneck_drops"].values())
    done = [f for f in run["flows"] if f.get("completed") and f.get("fct_recv_s") is not None]
    m["done"] = len(done)
    load = run["meta"].get("load")
    if load:
        arrivals = [f["size_bytes"] for f in run["flows"] if "index" in f]     # the Poisson sources' flows
        m["load"] = load
        m["load_measured"] = measured_load(arrivals, topo.mss_bytes, topo.data_frame_bytes, C,
                                           run["meta"]["duration_s"], unit)
    if done:
        m["mean_fct_s"] = statistics.fmean(f["fct_recv_s"] for f in done)
        m["p50_fct_s"] = percentile([f["fct_recv_s"] for f in done], 50)
        m["p95_fct_s"] = percentile([f["fct_recv_s"] for f in done], 95)
        m["mean_fct_sender_s"] = statistics.fmean(f["fct_s"] for f in done)
    if done and load:
        # FCT_PS at the load the run's arrivals offered; a heavy-tailed draw can offer 1 or more, where the
        # bound does not exist: those runs use the nominal load, and the summary and the figure say so.
        m["bound_load"] = bound_load(m["load_measured"], load)
        m["bound_load_is_nominal"] = m["load_measured"] >= 1
        m["fct_flows"] = [{"size_bytes": f["size_bytes"], "packets": data_packets(f["size_bytes"], topo.mss_bytes),
                           "fct_s": f["fct_recv_s"],
                           "ps_ratio": f["fct_recv_s"] / fct_ps(service_bytes(f["size_bytes"], topo.mss_bytes,
                                                                              topo.data_frame_bytes, unit),
                                                                C, m["bound_load"], _rtt(topo, f["host"]))}
                          for f in done]
        m["fct_ratio_ps"] = statistics.fmean(f["ps_ratio"] for f in m["fct_flows"])
        if len(topo.bottlenecks) == 1:
            m["fct_ratio_ps_exact"] = _fct_over_exact_ps(run, done, C, unit)
    if load and run["flows"]:
        first = min(f["start_unix_s"] for f in run["flows"])
        ends = [f["start_unix_s"] + f["fct_s"] for f in run["flows"] if f.get("fct_s") is not None]
        m["drain_s"] = max(0.0, max(ends, default=first) - first - run["meta"]["duration_s"])
    # Router figures over the time traffic was offered (the flows' starts to the run's end), not the drain after.
    t0 = min((f["start_unix_s"] for f in run["flows"]), default=0.0)
    records = [r for link in run["control"].values() for r in link if t0 <= r["time"] <= t0 + run["meta"]["duration_s"]]
    if records:
        per_link = [utilisation([r for r in records if (r["switch"], r["port"]) == link]) for link in run["control"]]
        m["utilisation"] = Spread.of(per_link).mean if any(u is not None for u in per_link) else None
        m["mean_queue_pkts"] = statistics.fmean(r["q_bytes"] for r in records) / topo.data_frame_bytes
        m["max_queue_pkts"] = max(r["q_bytes"] for r in records) / topo.data_frame_bytes
        policing = [r for link in run["control"].values() for r in link if r.get("police_limit_bytes")]
        if policing:
            m["policed_packets"] = sum(r.get("policed_packets", 0) for link in run["control"].values() for r in link)
    if exp.long_flows and run["meta"].get("events"):
        m["to_fair_share_s"] = _times_to_fair_share(run, topo, C)
    if len({f.start_s for f in exp.long_flows}) > 1 and len(topo.bottlenecks) == 1:
        m["join_rtts"] = _join_times(run, topo, C)
    burst = _burst_start(exp, topo)
    if burst is not None and run["flows"]:
        m.update(_after_burst(run, min(f["start_unix_s"] for f in run["flows"]) + burst))
    if exp.long_flows:
        window = _steady_window(run, exp)
        shares = _steady_goodputs(run, window)
        m["throughput_mbps"] = sum(shares) / 1e3 if shares else None
        steady = [r for r in records if window and window[0] <= r["time"] <= window[1]]
        if steady and len(topo.bottlenecks) == 1:
            m["steady_utilisation"] = utilisation(steady)
            m["steady_queue_pkts"] = statistics.fmean(r["q_bytes"] for r in steady) / topo.data_frame_bytes
        weights = _flow_weights(run) if run["meta"].get("rcp_weights") else {}
        unlike = (len(topo.bottlenecks) > 1 or len(set(weights.values())) > 1
                  or len({f.get("scheme") for f in run["flows"]}) > 1)
        if shares and unlike:
            m["max_min"] = _against_max_min(run, shares, weights)
            m["class_share"] = _class_shares(run, m["max_min"])
        if shares and len(topo.bottlenecks) > 1:
            m["links"] = _per_link(run, records)
        if len(shares) >= 2:
            # Where flows are not alike (several bottlenecks, weights, schemes) fair is their (weighted) max-min
            # share, not an equal one: Jain's index of goodput over share (Jain et al. 1984).
            fair = [goodput / share for goodput, share in m["max_min"].values()] if "max_min" in m else shares
            m["jain"] = jain_index(fair)
            m["rtt_ratio"] = _rtt_ratio(run, shares)
    return m


def _fct_over_exact_ps(run: dict, done: list[dict], C: float, unit: str) -> float | None:
    """The mean of each completed Poisson flow's FCT over 1.5 RTT + its sojourn under exact processor sharing of
    the run's own arrivals at one bottleneck: FCT_PS without the luck of the draw (FCT_PS's L / (C (1 - rho)) is
    the mean over arrivals drawn for ever; a 30 s draw may load the link more, or less)."""
    topo = run["topology"]
    offered = [f for f in run["flows"] if "index" in f]
    bits = [8 * service_bytes(f["size_bytes"], topo.mss_bytes, topo.data_frame_bytes, unit) for f in offered]
    shared = ps_sojourns([(f["start_unix_s"], b) for f, b in zip(offered, bits)], C)
    sojourn = {id(f): s for f, s in zip(offered, shared)}
    ratios = [f["fct_recv_s"] / (1.5 * _rtt(topo, f["host"]) + sojourn[id(f)]) for f in done if id(f) in sojourn]
    return statistics.fmean(ratios) if ratios else None


def _burst_start(exp, topo) -> float | None:
    """When several long flows start within one RTT of each other after the others (a flash crowd): the first
    of them, seconds into the run; None without one."""
    starts = sorted(f.start_s for f in exp.long_flows if f.start_s > 0)
    rtt = max((2 * topo.hosts[h].delay_ms / 1000 for h in topo.senders), default=0.0)
    for i, first in enumerate(starts):
        if sum(1 for s in starts[i:] if s - first <= rtt) >= 2:
            return first
    return None


def _after_burst(run: dict, burst_unix_s: float, bin_s: float = 0.1, hold_s: float = 1.0) -> dict:
    """The bottleneck after a flash crowd: its peak queue (packets, as the control loop sampled it), and seconds
    until its input stays at 0.95 of C or more (per bin_s, for hold_s): 0 if it never fell below."""
    [records] = list(run["control"].values()) or [[]]
    after = [r for r in records if r["time"] >= burst_unix_s]
    if not after:
        return {}
    frame = run["topology"].data_frame_bytes
    bins: dict[int, list[dict]] = {}
    for r in after:
        bins.setdefault(int((r["time"] - burst_unix_s) / bin_s), []).append(r)
    full = {k: utilisation(rs, bin_s) >= 0.95 for k, rs in bins.items() if utilisation(rs, bin_s) is not None}
    needed = round(hold_s / bin_s)
    to_full = next((k * bin_s for k in sorted(full) if all(full.get(j, False) for j in range(k, k + needed))), None)
    return {"burst_peak_queue_pkts": max(r["q_bytes"] for r in after) / frame, "burst_to_full_s": to_full}


def _per_link(run: dict, records: list[dict]) -> dict[str, dict]:
    """Per shaped link ("s2:3"): its payload capacity, the share of it the long flows' max-min rates fill, and
    the run's utilisation and mean queue (the control loop's records over the time traffic was offered)."""
    topo = run["topology"]
    by_ip = {h.ip: name for name, h in topo.hosts.items()}
    paths = {f"{f['host']}->{by_ip[f['dst'].rsplit(':', 1)[0]]}": topo.path(f["host"], by_ip[f["dst"].rsplit(":", 1)[0]])
             for f in run["flows"]}
    capacity = {link: topo.payload_bps(run["meta"]["capacity_bps"][f"{link[0]}:{link[1]}"]) / 1e6
                for link in topo.bottlenecks}
    shares = max_min_shares(capacity, paths)
    links = {}
    for link in topo.bottlenecks:
        mine = [r for r in records if (r["switch"], r["port"]) == link]
        links[f"{link[0]}:{link[1]}"] = {
            "capacity_mbps": capacity[link],
            "max_min_use": sum(shares[n] for n, path in paths.items() if link in path) / capacity[link],
            "utilisation": utilisation(mine),
            "queue_pkts": statistics.fmean(r["q_bytes"] for r in mine) / topo.data_frame_bytes if mine else None}
    return links


def _flow_name(run: dict, f: dict) -> str:
    by_ip = {h.ip: name for name, h in run["topology"].hosts.items()}
    return f"{f['host']}->{by_ip[f['dst'].rsplit(':', 1)[0]]}"


def sample_shares(run: dict) -> dict[str, float]:
    """Per goodput series of run["rates"] ("h1/1000"): its flow's weighted max-min share with every long flow
    present, so that the figures judge fairness as the tables do, on goodput / share; empty where flows are
    alike (one bottleneck, no weights), where fair is equal."""
    weights = _flow_weights(run) if run["meta"].get("rcp_weights") else {}
    if len(run["topology"].bottlenecks) == 1 and not weights:
        return {}
    shares = _max_min_shares(run, weights)
    return {f"{f['host']}/{f['flow_id']}": shares[_flow_name(run, f)] for f in run["flows"]}


def _weight(run: dict, f: dict) -> float:
    """A flow's weight where the run's RCP routers weight its DSCP (run.json's "rcp_weights", DSCP -> weight;
    the flow record's "dscp"); 1 for every flow that does not follow R."""
    weights = run["meta"].get("rcp_weights", {})
    return float(weights.get(str(f.get("dscp", 0)), 1.0)) if f.get("scheme") == "rcp" else 1.0


def _flow_weights(run: dict) -> dict[str, float]:
    """Per long flow ("h1->r3"): its weight (_weight)."""
    return {_flow_name(run, f): _weight(run, f) for f in run["flows"]}


def _against_max_min(run: dict, goodputs_kbps: list[float], weights: dict[str, float]) -> dict[str, tuple[float, float]]:
    """Per long flow ("h1->r3"): (goodput, weighted max-min fair share), Mb/s of application bytes over the time
    all flows shared the network. RCP should give each flow the smallest R on its path (times its weight): its
    max-min share."""
    shares = _max_min_shares(run, weights)
    return {n: (g / 1e3, shares[n]) for n, g in zip((_flow_name(run, f) for f in run["flows"]), goodputs_kbps)}


def _max_min_shares(run: dict, weights: dict[str, float]) -> dict[str, float]:
    """Per long flow ("h1->r3"): its weighted max-min fair share of the bottlenecks on its path, Mb/s of
    application bytes, with every long flow present."""
    topo = run["topology"]
    capacity = {link: topo.payload_bps(run["meta"]["capacity_bps"][f"{link[0]}:{link[1]}"]) / 1e6
                for link in topo.bottlenecks}
    names = [_flow_name(run, f) for f in run["flows"]]
    return max_min_shares(capacity, {n: topo.path(*n.split("->")) for n in names}, weights)


def _class_shares(run: dict, against: dict[str, tuple[float, float]]) -> dict[str, float]:
    """Per scheme among the long flows (kernel TCP beside RCP, say): the mean of its flows' goodput over share."""
    classes: dict[str, list[float]] = {}
    for f in run["flows"]:
        goodput, share = against[_flow_name(run, f)]
        classes.setdefault(f.get("scheme", "?"), []).append(goodput / share)
    return {scheme: statistics.fmean(ratios) for scheme, ratios in classes.items()}


def _rtt_ratio(run: dict, shares: list[float]) -> float | None:
    """Goodput of the shortest-RTT long flow over that of the longest-RTT one; None when all RTTs are equal."""
    rtts = [_rtt(run["topology"], f["host"]) for f in run["flows"]]
    if len(set(rtts)) < 2:
        return None
    longest = shares[rtts.index(max(rtts))]
    return shares[rtts.index(min(rtts))] / longest if longest > 0 else math.inf


def _steady_window(run: dict, exp, settle_s: float = 2.0) -> tuple[float, float] | None:
    """The long flows' steady state (Unix s): the last half of the run, or from when the last flow started
    (+ settle_s) if that is later, to the last goodput sample of the first flow to stop. The PCC papers judge
    fairness after convergence, and the RCP papers utilisation and queue at equilibrium; a whole-run figure
    mixes in the start and the joins, and periods the flows did not share (a flow alone at the end gets the
    whole link). Where a flow leaves before the run's second half is under way (weighted: the first of three at
    40 s of 80), the last half of the time all flows shared the network instead. None when a long flow has no
    samples."""
    starts = [f["start_unix_s"] for f in run["flows"]]
    series = [run["rates"].get(f"{f['host']}/{f['flow_id']}", []) for f in run["flows"]]
    if not starts or not all(series):
        return None
    all_running = min(starts) + max(f.start_s for f in exp.long_flows) + settle_s
    begin = max(all_running, min(starts) + exp.duration_s / 2)
    end = min(samples[-1][0] for samples in series)
    if end - begin < (end - all_running) / 2:
        begin = all_running + (end - all_running) / 2
    return begin, end


def _steady_goodputs(run: dict, window: tuple[float, float] | None) -> list[float]:
    """Per long flow, mean goodput (kb/s) over the steady window (`_steady_window`; TCP's samples come from
    TCP_INFO, the others' from their acknowledgements). Empty when a flow has no samples there."""
    if window is None:
        return []
    begin, end = window
    series = [run["rates"][f"{f['host']}/{f['flow_id']}"] for f in run["flows"]]
    shares = []
    for samples in series:
        inside = [v for t, v in samples if begin <= t <= end]
        if not inside:
            return []
        shares.append(statistics.fmean(inside))
    return shares


def _times_to_fair_share(run: dict, topo, C_bps: float) -> list[float | None]:
    """Per bandwidth event: seconds until every long flow's goodput settled at its new fair share
    (the new capacity's payload rate over the flows), None if one never did before the next event."""
    events = run["meta"]["events"]
    ends = [e["unix_s"] for e in events[1:]] + [math.inf]
    times = []
    for event, until in zip(events, ends):
        share_kbps = topo.payload_bps(C_bps * event["bottleneck_scale"]) / len(run["rates"]) / 1e3 \
            if run["rates"] else 0
        per_flow = [time_to_share(samples, event["unix_s"], share_kbps, until_s=until)
                    for samples in run["rates"].values()] if share_kbps > 0 else [None]
        times.append(None if None in per_flow else max(per_flow))
    return times


def _join_times(run: dict, topo, C_bps: float) -> list[float | None]:
    """Per join, in RTTs: from the first SYN of the flows that join together until every one of them holds its
    new fair share (goodput averaged over one RTT within 20% of the capacity's payload rate over the flows then
    running, for 0.5 s); None if that did not happen before the next join or the first flow's end. The mean
    spans one RTT, not a fixed time: a flow's goodput is 0 until its first data is acknowledged, two RTTs
    after its SYN, and a longer mean would add its own length to every join, however fast. Flows whose
    SYNs leave within one RTT of each other join together (the talk's flash crowd: the offered load doubling
    within an RTT is one event, not several); the flows of the first start are not a join."""
    flows = sorted(run["flows"], key=lambda f: f["start_unix_s"])
    ends = [f["start_unix_s"] + (f.get("fct_s") or math.inf) for f in flows]
    payload = topo.payload_bps(C_bps) / 1e3      # kb/s of application bytes
    groups: list[list[dict]] = []
    for f in flows:
        if groups and f["start_unix_s"] - groups[-1][0]["start_unix_s"] <= _rtt(topo, groups[-1][0]["host"]):
            groups[-1].append(f)
        else:
            groups.append([f])
    times, running = [], len(groups[0]) if groups else 0
    for k, group in enumerate(groups[1:], start=1):
        running += len(group)
        event = group[0]["start_unix_s"]
        until = min([g[0]["start_unix_s"] for g in groups[k + 1:]] + ends)
        per_flow = []
        for f in group:
            samples = run["rates"].get(f"{f['host']}/{f['flow_id']}", [])
            t = time_to_share(samples, event, payload / running, until_s=until, window_s=_rtt(topo, f["host"]),
                              hold_s=0.5) if samples else None
            per_flow.append(None if t is None else t / _rtt(topo, f["host"]))
        times.append(None if None in per_flow else max(per_flow))
    return times


def _rtt(topo, host: str) -> float:
    """Base RTT of a flow from this sender: every topology puts the whole delay on the sender's link."""
    return 2 * topo.hosts[host].delay_ms / 1000


# A run's scalar figures, aggregated over seeds (tables.COLUMNS gives each a header), and its figures per
# event (one value per bandwidth change or join).
SCALARS = ("load_measured", "mean_fct_s", "p50_fct_s", "p95_fct_s", "fct_ratio_ps", "mean_fct_sender_s",
           "retransmitted_pct", "bottleneck_drops", "policed_packets", "utilisation", "mean_queue_pkts", "max_queue_pkts",
           "burst_peak_queue_pkts", "burst_to_full_s",
           "steady_utilisation", "steady_queue_pkts", "jain", "throughput_mbps", "rtt_ratio")
PER_EVENT = ("to_fair_share_s", "join_rtts")
# Flow-size bins of the FCT tables and figure, in DATA packets: decades, as the RCP papers plot FCT.
PACKET_DECADES = [1, 10, 100, 1000, 10_000, 100_000, 1_000_000]


def fct_by_size(valid: list[dict]) -> dict | None:
    """FCT per flow-size bin (PACKET_DECADES) over valid runs: every seed's flows pooled, and each seed's own
    rows keyed by the bin's lower edge (for the seeds' range). None when no run has FCTs."""
    runs = [m for m in valid if "fct_flows" in m]
    if not runs:
        return None
    return {"pooled": bin_fct([f for m in runs for f in m["fct_flows"]], PACKET_DECADES, "packets"),
            "per_seed": [{r["lo"]: r for r in bin_fct(m["fct_flows"], PACKET_DECADES, "packets")} for m in runs],
            "bound_loads": [m["bound_load"] for m in runs],
            "nominal_bound_seeds": [m["seed"] for m in runs if m["bound_load_is_nominal"]]}


def aggregate(per_seed: list[dict]) -> dict:
    """One scheme's runs (one per seed) as one row: each figure's Spread over the valid runs; flows pooled."""
    valid = [m for m in per_seed if m["valid"]]
    agg = {"runs": len(per_seed), "valid_runs": len(valid),
           "problems": [f"seed {m['seed']}: {p}" for m in per_seed if not m["valid"] for p in m["problems"]],
           "flows": sum(m["flows"] for m in valid), "done": sum(m["done"] for m in valid),
           "load": valid[0].get("load") if valid else None,
           "per_seed": valid}
    for key in SCALARS:
        agg[key] = Spread.of(m.get(key) for m in valid)
    agg["fct_by_size"] = fct_by_size(valid)
    for key in PER_EVENT:
        per_seed = [m[key] for m in valid if key in m]
        if per_seed:
            agg[key] = [list(times) for times in zip(*per_seed)]
    classes = sorted({c for m in valid for c in m.get("class_share", {})})
    if len(classes) > 1:
        agg["class_share"] = {c: Spread.of(m.get("class_share", {}).get(c) for m in valid) for c in classes}
    if any("max_min" in m for m in valid):
        flows = valid[0]["max_min"]
        agg["max_min"] = {f: (Spread.of(m["max_min"][f][0] for m in valid if f in m.get("max_min", {})), share)
                          for f, (_, share) in flows.items()}
    if any("links" in m for m in valid):
        links = next(m["links"] for m in valid if "links" in m)
        agg["links"] = {link: {"capacity_mbps": first["capacity_mbps"], "max_min_use": first["max_min_use"],
                               **{key: Spread.of(m["links"][link][key] for m in valid if "links" in m)
                                  for key in ("utilisation", "queue_pkts")}}
                        for link, first in links.items()}
    return agg



"""summary.md and plots of one experiment, from the runs' raw records.

Three rooms: metrics (which runs and flows count, and every figure of a run), tables (Markdown) and
figures (PNG with CSV beside each); `write_report` puts them together.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from p4rcp.analysis import load_unit
from topo.report.figures import make_plots
from topo.report.metrics import aggregate, metrics
from topo.report.runs import load_run, read_jsonl, void_runs
from topo.report.tables import class_table, max_min_table, setting, size_tables, summary_table

__all__ = ["read_jsonl", "void_runs", "write_report"]


def write_report(exp, root: Path, runs: list) -> str:
    """runs: (variant, scheme, run_dir, meta), one per seed. Writes summary.md, the figures and their CSV files;
    returns the text."""
    loaded = defaultdict(list)          # (variant label, scheme) -> runs, one per seed
    variants = {}
    for variant, scheme, run_dir, meta in runs:
        run = load_run(run_dir, meta, exp, variant.topology)
        run["metrics"] = dict(metrics(run, exp), seed=meta.get("seed", 1))
        loaded[(variant.label, scheme)].append(run)
        variants[variant.label] = variant
    by_variant = defaultdict(list)
    for (label, scheme), scheme_runs in loaded.items():
        by_variant[label].append((scheme, aggregate([r["metrics"] for r in scheme_runs])))
    reference = next((s for s in exp.schemes if exp.scheme(s).cc == "rcp"), None)
    plots = defaultdict(list)
    for caption, path in make_plots(exp, root, loaded, by_variant):
        plots[next((label for label in by_variant if label and path.stem.endswith(f"_{label}")), "")].append(
            (caption, path))
    metas = [meta for *_, meta in runs]
    parts = [f"# {exp.name}", "", exp.description, "", what_ran(metas), ""]
    simulated = simulation_note(metas)
    if simulated:
        parts += [simulated, ""]
    # What each scheme ran: as its runs recorded it (an engine other than Mininet's says so), else as the
    # experiment describes it.
    recorded = {m["scheme"]: m["scheme_description"] for m in metas if m.get("scheme_description")}
    parts += ["Schemes:", ""]
    parts += [f"- {s}: {recorded.get(s) or exp.scheme(s).describe(exp.rcp_params(exp.scheme(s)))}"
              for s in exp.schemes]
    parts += [""]
    for label, rows in by_variant.items():
        if label:
            parts += [f"## {label}", ""]
        label_metas = [m for v, _, _, m in runs if v.label == label]
        parts += [setting(exp, variants[label], load_unit(label_metas[0])), ""]
        label_simulated = simulation_note(label_metas) if len(by_variant) > 1 else ""
        if label_simulated:
            parts += [label_simulated, ""]
        workload = workload_note(exp, [r["metrics"] for s, rs in loaded.items() if s[0] == label for r in rs])
        if workload:
            parts += [workload, ""]
        parts += [summary_table(rows), ""]
        invalid = [f"- {scheme}, {p}" for scheme, agg in rows for p in agg["problems"]]
        if invalid:
            parts += ["Invalid runs (left out of the tables and figures):", *invalid, ""]
        for extra in (size_tables(rows, reference), max_min_table(rows), class_table(rows)):
            if extra:
                parts += [extra, ""]
        parts += embedded(plots.get(label, []))
    if "" not in by_variant:            # a sweep: its figure against the sweep points comes last
        parts += embedded(plots.get("", []))
    text = "\n".join(parts)
    (root / "summary.md").write_text(text)
    return text


def embedded(plots: list[tuple[str, Path]]) -> list[str]:
    """Markdown that shows each figure (on any Git host) with its caption and its data file."""
    lines = []
    for caption, path in plots:
        lines += [f"![{caption}]({path.name})", "", f"*{caption}* ({path.name}; data: {path.with_suffix('.csv').name})",
                  ""]
    return lines


def what_ran(metas: list[dict]) -> str:
    """The commit, the simple_switch and p4c builds and the kernel the runs recorded (run.json)."""
    environments = {tuple(sorted(m.get("environment", {}).items())) for m in metas}
    if environments == {()}:
        return "What ran: not recorded (runs of an older runner)."
    lines = []
    for env in sorted(environments):
        e = dict(env)
        # A simulator instead of the switches (topo/ns3): its version, not simple_switch's and p4c's.
        engine = e["engine"] if "engine" in e else f"simple_switch {e.get('simple_switch', '?')}, {e.get('p4c', '?')}"
        lines.append(f"p4rcp {e.get('commit', '?')}, {engine}, Linux {e.get('kernel', '?')}, {e.get('machine', '?')}")
    return "What ran: " + "; ".join(lines) + "."


def simulation_note(metas: list[dict]) -> str:
    """Runs in simulated time (topo/ns3): how long their simulations took in wall time per simulated
    second, over all runs and per run; "" for runs in real time."""
    simulated = [m for m in metas if m.get("simulated_s")]
    if not simulated:
        return ""
    per_run = [m["wall_s"] / m["simulated_s"] for m in simulated]
    wall, sim = sum(m["wall_s"] for m in simulated), sum(m["simulated_s"] for m in simulated)
    cpu = sum(m.get("cpu_s", m["wall_s"]) for m in simulated)
    at_once = max(m.get("parallel_runs", 1) for m in simulated)
    return (f"Simulated: {sim:.1f} s of simulated time in {wall:.0f} s of wall time over {len(simulated)} runs: "
            f"**{wall / sim:.2f} s of wall time per simulated second** (runs: {min(per_run):.2f}-{max(per_run):.2f}; "
            f"CPU time {cpu / sim:.2f} s per simulated second; {at_once} run(s) at a time, one process each; the "
            f"simulation only, without loading ns-3 and building the network).")


def workload_note(exp, per_run: list[dict]) -> str:
    """The Poisson workload in words: sizes, the load each seed offered, the drain after the nominal duration."""
    if not exp.poisson:
        return ""
    sizes = ", ".join(sorted({p.sizes for p in exp.poisson}))
    parts = [f"Flow sizes `{sizes}` (p4rcp-host --sizes; `pareto:SHAPE:MEAN:MAX` is a Pareto bounded at MAX bytes "
             f"whose mean is MEAN, hosts/README.md)."]
    by_seed = {m["seed"]: m for m in per_run if "load_measured" in m}
    if by_seed:
        parts.append("Load offered per seed: " + ", ".join(f"seed {s}: {m['load_measured']:.3f}"
                                                           for s, m in sorted(by_seed.items())) + ".")
    nominal = sorted({m["seed"] for m in per_run if m.get("bound_load_is_nominal")})
    if nominal:
        parts.append(f"Seed(s) {', '.join(map(str, nominal))} offered a load of 1 or more, where FCT_PS does not "
                     f"exist: their FCT_PS uses the nominal load.")
    drains = [m["drain_s"] for m in per_run if m.get("drain_s") is not None]
    if drains:
        parts.append(f"Flows arrive for {exp.duration_s:g} s; the runs then went on until their last flow finished, "
                     f"{min(drains):.1f}-{max(drains):.1f} s longer (the drain, shaded in the router figure).")
    return " ".join(parts)

"""An experiment against the host binary that will run it: the runner's step before any run starts.

Every command of the experiment's schedules (topo/schedule.py) goes to the host binary with --check, so that
every value the hosts will parse (scheme names, rates, size distributions, loads) is judged by the code that
will use it. The experiment model (topo/experiment.py) runs no program: reporting runs that ran with an older
binary loads their experiment without this step.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from p4rcp.presets import PRESETS
from topo import hosts
from topo.experiment import Experiment, ExperimentError
from topo.schedule import Launch, RunDir, first_error_line, receivers, schedule

CHECK_TIMEOUT_S = 10


def check_with_hosts(exp: Experiment) -> None:
    """Every host command of every scheme and sweep point, checked by the host binary (--check: it parses and
    validates its arguments as a start would, then exits without opening a socket or a file). Raises
    ExperimentError with the binary's one-line answer, naming the scheme and the flow."""
    if not hosts.HOST_BINARY.is_file():
        raise ExperimentError(f"{hosts.HOST_BINARY} is missing: run 'make hosts' (it judges schemes and workloads)")
    where = exp.source.name
    for name in exp.schemes:
        if exp.scheme(name).is_external:
            continue                      # another program's commands: p4rcp cannot judge them
        cc = exp.scheme(name).cc
        refused = _refused(hosts.single_flow("127.0.0.1", cc, 1))
        if refused and name in exp.scheme_tables:
            raise ExperimentError(f"{where}: [scheme.{name}]: unknown cc {cc!r}: {refused}")
        if refused:
            raise ExperimentError(f"{where}: unknown scheme {name!r}: not a [scheme.NAME] table, a preset "
                                  f"({', '.join(PRESETS)}) or a scheme of the hosts: {refused}")
    out = RunDir(Path("/nonexistent/p4rcp-check"))     # --check opens no file
    checked = set()
    for variant in exp.variants():
        for name in exp.schemes:
            scheme = exp.scheme(name)
            if scheme.is_external:
                continue
            commands = [(f"{where} of {name}", cmd) for where, cmd in
                        [(f"receiver {r}", hosts.recv(out.recv(r))) for r in receivers(exp)]
                        + [(f"{item.kind} flow of {item.host}", item.command)
                           for item in schedule(exp, variant, scheme, exp.seeds[0], out)
                           if isinstance(item, Launch)]]
            for what, cmd in commands:
                key = tuple(cmd)
                if key in checked:
                    continue
                checked.add(key)
                refused = _refused(cmd)
                if refused:
                    raise ExperimentError(f"{where}: {what}{' (' + variant.label + ')' if variant.label else ''}: "
                                     f"{refused}")


def _refused(command: list[str]) -> str | None:
    """None if the host binary accepts the command (--check), else the line that says why not."""
    done = subprocess.run(command + ["--check"], capture_output=True, text=True, timeout=CHECK_TIMEOUT_S)
    return first_error_line(done.stderr + done.stdout) if done.returncode != 0 else None

"""`python -m topo.evaluate.job JOB.pickle`: one ns-3 run (topo/ns3/engine.py, a pickled Job) in this fresh
process, as a Dask task starts it (topo/evaluate/cluster.py): ns-3's simulator and its attribute defaults are
process-wide, so no two runs may share a process. The run writes its directory, run.json included."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from topo.ns3.engine import run_job


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m topo.evaluate.job JOB.pickle", file=sys.stderr)
        return 2
    run_job(pickle.loads(Path(argv[0]).read_bytes()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

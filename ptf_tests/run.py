"""make ptf: veth pairs + simple_switch + ptf, always torn down.

python -m ptf_tests.run [--json build/p4rcp.json] [TEST ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from control_plane.simple_switch import SimpleSwitch
from p4rcp.toolchain import BUILD_DIR, BUILD_JSON, require_tool
from p4rcp.veth import VethPairs, free_tcp_port

ROOT = Path(__file__).resolve().parent.parent
NUM_PORTS = 4


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ptf_tests.run")
    ap.add_argument("--json", default=str(BUILD_JSON))
    ap.add_argument("--switch-log", help="simple_switch log file (off by default)")
    ap.add_argument("--pcap", metavar="DIR", help="keep bmv2's capture of every switch port in DIR (<interface>_in.pcap, "
                                                  "<interface>_out.pcap; tools/wireshark/rcp.lua dissects RCP)")
    ap.add_argument("tests", nargs="*", help="PTF test names (default: all)")
    args = ap.parse_args(argv)

    ptf = Path(sys.executable).with_name("ptf")
    if args.pcap:
        Path(args.pcap).mkdir(parents=True, exist_ok=True)
    require_tool("simple_switch")
    thrift_port = free_tcp_port()
    with VethPairs(NUM_PORTS, tag="pt") as veths, \
         SimpleSwitch(args.json, dict(enumerate(veths.switch_side)), thrift_port, log_file=args.switch_log,
                      pcap_dir=args.pcap, target_args=("--enable-swap",)):   # reset_state.py reloads the program
        cmd = [str(ptf), "--test-dir", str(ROOT / "ptf_tests" / "tests"),
               "--log-file", str(BUILD_DIR / "ptf.log"),
               "--test-params", f"thrift_port={thrift_port}"]
        for port, iface in enumerate(veths.host_side):
            cmd += ["--interface", f"{port}@{iface}"]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        return subprocess.run(cmd + args.tests, env=env, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())

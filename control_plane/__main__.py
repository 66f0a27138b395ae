"""python -m control_plane --topology FILE --switch NAME [options]

Programs the switch from the topology, then runs the RCP loop until SIGINT or
SIGTERM. One JSON object per port and interval goes to --log (or stdout).
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
import time
from pathlib import Path

from control_plane.bmv2_thrift import Bmv2ThriftDriver
from control_plane.driver import SwitchUnavailable
from control_plane.loop import ControlLoop, program_switch
from control_plane.p4runtime import P4RuntimeDriver, P4RuntimeUnsupported
from p4rcp.params import D0_ESTIMATORS, RcpParams
from p4rcp.toolchain import BUILD_P4INFO
from p4rcp.topology import TopologyError, load_topology


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m control_plane", description=__doc__.split("\n\n")[1])
    ap.add_argument("--topology", required=True, help="topology file (topo/topologies/*.toml)")
    ap.add_argument("--switch", required=True, help="switch name in the topology, e.g. s1")
    ap.add_argument("--thrift-host", default="127.0.0.1")
    ap.add_argument("--thrift-port", type=int, help="default: the topology's port for this switch")
    rt = ap.add_argument_group("P4Runtime (instead of bmv2's Thrift runtime; docs/control_plane.md)")
    rt.add_argument("--p4runtime", metavar="HOST:PORT", help="P4Runtime server, e.g. 127.0.0.1:9559")
    rt.add_argument("--p4info", default=str(BUILD_P4INFO), help="default: %(default)s")
    rt.add_argument("--device-config", help="pipeline to push (bmv2: build/p4rcp.json); default: push nothing")
    rt.add_argument("--device-id", type=int, default=1)
    rt.add_argument("--target", choices=("tna", "t2na", "v1model"), default="tna",
                    help="the switch: tna (Tofino 1), t2na (Tofino 2) or v1model, for its policing epoch and its "
                         "queue's unit (Tofino's cells); a Thrift side driver means v1model")
    rt.add_argument("--registers-over", choices=("p4runtime", "thrift"), default="p4runtime",
                    help="thrift for simple_switch_grpc, whose P4Runtime server has no register access")
    ap.add_argument("--log", help="JSON-lines interval log (default: stdout)")
    ap.add_argument("--duration", type=float, help="stop after this many seconds")
    ap.add_argument("--connect-timeout", type=float, default=10.0,
                    help="seconds to wait for the switch at start before giving up")
    d = RcpParams()
    ap.add_argument("--alpha", type=float, default=d.alpha)
    ap.add_argument("--beta", type=float, default=d.beta)
    ap.add_argument("--gamma", type=float, default=d.gamma)
    ap.add_argument("--q0-bytes", type=float, default=d.q0_bytes)
    ap.add_argument("--r-min-kbps", type=float, default=d.R_min_bps / 1000)
    ap.add_argument("--r-init-fraction", type=float, default=d.R_init_fraction)
    ap.add_argument("--d0-init-ms", type=float, default=d.d0_init_s * 1000)
    ap.add_argument("--d0-gain", type=float, default=d.d0_gain)
    ap.add_argument("--t-max-ms", type=float, default=d.T_max_s * 1000)
    ap.add_argument("--queue-packet-bytes", type=int, help="the data frame, a packet of bmv2's queue and "
                    "policing's frame; default: the topology's data_frame_bytes")
    ap.add_argument("--dscp-weight", action="append", default=[], metavar="DSCP=W",
                    help="weight (0 < W <= 1) of packets with this DSCP; repeat; unnamed DSCP values have weight 1 "
                         "(docs/protocol.md, 'Weights')")
    ap.add_argument("--police", action="store_true", help="police forward RCP flows above their stamp "
                    "(docs/dataplane.md, 'Policing')")
    ap.add_argument("--police-margin", type=float, default=d.police_margin)
    ap.add_argument("--police-slack-ms", type=float, default=d.police_slack_s * 1000)
    ap.add_argument("--police-burst-packets", type=float, default=d.police_burst_packets)
    ap.add_argument("--d0-estimator", choices=D0_ESTIMATORS, default=d.d0_estimator)
    ap.add_argument("--first-jitter", type=float, default=d.first_jitter)
    ap.add_argument("--feedforward", action="store_true", help="the flow-count feedforward "
                    "(docs/control_plane.md, 'Sudden load')")
    ap.add_argument("--feedforward-gain", type=float, default=d.feedforward_gain)
    return ap.parse_args(argv)


def params_from_args(args: argparse.Namespace, data_frame_bytes: int) -> RcpParams:
    """The RCP parameters the command line gives (ValueError: a bad one)."""
    return RcpParams(alpha=args.alpha, beta=args.beta, gamma=args.gamma, q0_bytes=args.q0_bytes,
                     R_min_bps=args.r_min_kbps * 1000, R_init_fraction=args.r_init_fraction,
                     d0_init_s=args.d0_init_ms / 1000, d0_gain=args.d0_gain, T_max_s=args.t_max_ms / 1000,
                     queue_packet_bytes=args.queue_packet_bytes or data_frame_bytes,
                     dscp_weights=dscp_weights(args.dscp_weight), police=args.police,
                     police_margin=args.police_margin, police_slack_s=args.police_slack_ms / 1000,
                     police_burst_packets=args.police_burst_packets, d0_estimator=args.d0_estimator,
                     first_jitter=args.first_jitter, feedforward=args.feedforward,
                     feedforward_gain=args.feedforward_gain)


def arguments_for(params: RcpParams) -> list[str]:
    """The command-line options that give `params` (the inverse of params_from_args): how a runner starts this
    controller with an experiment's parameters."""
    args = ["--alpha", repr(params.alpha), "--beta", repr(params.beta), "--gamma", repr(params.gamma),
            "--q0-bytes", repr(params.q0_bytes), "--r-min-kbps", repr(params.R_min_bps / 1000),
            "--r-init-fraction", repr(params.R_init_fraction), "--d0-init-ms", repr(params.d0_init_s * 1000),
            "--d0-gain", repr(params.d0_gain), "--t-max-ms", repr(params.T_max_s * 1000),
            "--queue-packet-bytes", str(params.queue_packet_bytes),
            "--police-margin", repr(params.police_margin), "--police-slack-ms", repr(params.police_slack_s * 1000),
            "--police-burst-packets", repr(params.police_burst_packets), "--d0-estimator", params.d0_estimator,
            "--first-jitter", repr(params.first_jitter), "--feedforward-gain", repr(params.feedforward_gain)]
    for dscp, weight in sorted(params.dscp_weights.items()):
        args += ["--dscp-weight", f"{dscp}={weight!r}"]
    return args + (["--police"] if params.police else []) + (["--feedforward"] if params.feedforward else [])


def dscp_weights(pairs: list[str]) -> dict[str, float]:
    out = {}
    for pair in pairs:
        dscp, sep, weight = pair.partition("=")
        try:
            out[dscp.strip()] = float(weight)
        except ValueError:
            raise ValueError(f"--dscp-weight wants DSCP=W, got {pair!r}") from None
        if not sep:
            raise ValueError(f"--dscp-weight wants DSCP=W, got {pair!r}")
    return out


def make_driver(args: argparse.Namespace, switch):
    thrift = Bmv2ThriftDriver(args.thrift_port or switch.thrift_port, host=args.thrift_host)
    if not args.p4runtime:
        return thrift
    return P4RuntimeDriver(args.p4runtime, Path(args.p4info), args.device_config and Path(args.device_config),
                           device_id=args.device_id, side=thrift if args.registers_over == "thrift" else None,
                           target=args.target)


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        topology = load_topology(args.topology)
        switch = topology.switch(args.switch)
        params = params_from_args(args, topology.data_frame_bytes)
        driver = make_driver(args, switch)
        if not switch.rcp_ports:
            driver.connect()
            program_switch(driver, switch, topology.routes(switch.name))
            driver.close()
            print(f"control_plane: {switch.name} has no RCP port; routes and queues installed, nothing to run")
            return 0
        out = open(args.log, "a", buffering=1) if args.log else sys.stdout
        loop = ControlLoop(switch, topology.routes(switch.name), driver, params,
                           emit=lambda record: out.write(json.dumps(record) + "\n"))
    except (TopologyError, ValueError, OSError, SwitchUnavailable, P4RuntimeUnsupported) as e:
        print(f"control_plane: {e}", file=sys.stderr)
        return 2

    give_up = time.monotonic() + args.connect_timeout
    while True:
        try:
            loop.resync()
            break
        except P4RuntimeUnsupported as e:
            print(f"control_plane: {e}", file=sys.stderr)
            return 2
        except SwitchUnavailable as e:
            if time.monotonic() > give_up:
                print(f"control_plane: switch {switch.name} unreachable: {e}", file=sys.stderr)
                return 1
            time.sleep(0.2)

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    if args.duration:
        timer = threading.Timer(args.duration, stop.set)
        timer.daemon = True
        timer.start()
    loop.run(stop)
    driver.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

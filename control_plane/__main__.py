"""python -m control_plane --topology FILE --switch NAME [--preset NAME] [--param KEY=VALUE ...] [options]

Programs the switch from the topology, then runs the RCP loop until SIGINT or
SIGTERM, with a preset's parameters (p4rcp/presets.py; default rcp, RcpParams'
defaults) and any field of RcpParams set on top of it by --param; with
--router xcp, XCP's loop (control_plane/xcp_loop.py) over bmv2's Thrift
runtime instead. One JSON object per port and interval goes to --log (or stdout).
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import fields
from pathlib import Path

from control_plane.bmv2_thrift import Bmv2ThriftDriver
from control_plane.driver import SwitchUnavailable
from control_plane.loop import ControlLoop, program_switch
from control_plane.p4runtime import P4RuntimeDriver, P4RuntimeUnsupported
from control_plane.xcp_loop import XcpCellsDriver, XcpLoop
from p4rcp.params import RcpParams
from p4rcp.presets import PRESETS, Preset, describe_routers, parse_param, router_preset
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
    ap.add_argument("--router", choices=("rcp", "xcp"), default="rcp",
                    help="the routers' protocol: rcp (default) or xcp (docs/xcp.md; bmv2's Thrift runtime only)")
    ap.add_argument("--log", help="JSON-lines interval log (default: stdout)")
    ap.add_argument("--duration", type=float, help="stop after this many seconds")
    ap.add_argument("--connect-timeout", type=float, default=10.0,
                    help="seconds to wait for the switch at start before giving up")
    rcp = ap.add_argument_group("RCP's parameters (p4rcp/presets.py, p4rcp/params.py; docs/control_plane.md)")
    rcp.add_argument("--preset", default="rcp", metavar="NAME",
                     help="the routers' settings by name: " + "; ".join(
                         f"{p.name}: {p.summary}" for p in PRESETS.values() if p.sets_routers) + " (default: rcp)")
    rcp.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                     help="set any RcpParams field on top of the preset, e.g. alpha=0.2, police=true, "
                          "d0_estimator=ns2, dscp_weights=10:0.5,46:0.25; repeat; queue_packet_bytes defaults to "
                          "the topology's data_frame_bytes")
    return ap.parse_args(argv)


def arguments_for(params: RcpParams) -> list[str]:
    """The command-line options that give `params` whole (the inverse of rcp_params): every field as a --param,
    on the default preset; how a runner starts this controller with an experiment's parameters."""
    args = ["--preset", "rcp"]
    for f in fields(RcpParams):
        value = getattr(params, f.name)
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, Mapping):
            text = ",".join(f"{dscp}:{weight!r}" for dscp, weight in sorted(value.items()))
        else:
            text = repr(value) if isinstance(value, float) else str(value)
        args += ["--param", f"{f.name}={text}"]
    return args


def rcp_params(preset_name: str, pairs: list[str], data_frame_bytes: int) -> tuple[Preset, RcpParams]:
    """The preset and the parameters the loop runs with: the preset on the topology's data frame, then --param."""
    preset = router_preset(preset_name)
    overrides = dict(parse_param(pair) for pair in pairs)
    try:
        return preset, preset.params({"queue_packet_bytes": data_frame_bytes}, **overrides)
    except ValueError as e:
        given = ", ".join(f"{k}={v}" for k, v in overrides.items())
        raise ValueError(f"preset {preset.name}{' with ' + given if given else ''}: {e}") from None


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
        if args.router == "xcp" and args.p4runtime:
            raise ValueError("--router xcp runs over bmv2's Thrift runtime, not P4Runtime")
        topology = load_topology(args.topology)
        switch = topology.switch(args.switch)
        preset, params = rcp_params(args.preset, args.param, topology.data_frame_bytes)
        driver = make_driver(args, switch)
        if not switch.rcp_ports:
            driver.connect()
            program_switch(driver, switch, topology.routes(switch.name))
            driver.close()
            print(f"control_plane: {switch.name} has no RCP port; routes and queues installed, nothing to run")
            return 0
    except (TopologyError, ValueError, OSError, SwitchUnavailable, P4RuntimeUnsupported) as e:
        print(f"control_plane: {e}", file=sys.stderr)
        return 2
    if args.router == "xcp":
        return run_xcp(args, switch, topology, driver)
    try:
        print(f"control_plane: {switch.name} runs preset {preset.name}"
              f"{' with ' + ' '.join(args.param) if args.param else ''}: {describe_routers(params)}", file=sys.stderr)
        out = open(args.log, "a", buffering=1) if args.log else sys.stdout
        loop = ControlLoop(switch, topology.routes(switch.name), driver, params,
                           emit=lambda record: out.write(json.dumps(record) + "\n"))
    except (TopologyError, ValueError, OSError, SwitchUnavailable, P4RuntimeUnsupported) as e:
        print(f"control_plane: {e}", file=sys.stderr)
        return 2

    try:
        if not _until_connected(loop.resync, switch.name, args.connect_timeout):
            return 1
    except P4RuntimeUnsupported as e:
        print(f"control_plane: {e}", file=sys.stderr)
        return 2
    _run_until_stopped(loop.run, args.duration)
    driver.close()
    return 0


def _until_connected(connect: Callable[[], None], name: str, timeout_s: float) -> bool:
    """connect(), again every 0.2 s while the switch is unavailable, for up to timeout_s; False: gave up, said so."""
    give_up = time.monotonic() + timeout_s
    while True:
        try:
            connect()
            return True
        except SwitchUnavailable as e:
            if time.monotonic() > give_up:
                print(f"control_plane: switch {name} unreachable: {e}", file=sys.stderr)
                return False
            time.sleep(0.2)


def _run_until_stopped(run: Callable[[threading.Event], None], duration_s: float | None) -> None:
    """run(stop) until SIGINT, SIGTERM or duration_s sets stop."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    if duration_s:
        timer = threading.Timer(duration_s, stop.set)
        timer.daemon = True
        timer.start()
    run(stop)


def run_xcp(args: argparse.Namespace, switch, topology, thrift: Bmv2ThriftDriver) -> int:
    """XCP's loop on the switch, at the average RTT of its XCP traffic, until SIGINT, SIGTERM or --duration."""
    driver = XcpCellsDriver(thrift, topology.data_frame_bytes)
    if not _until_connected(driver.connect, switch.name, args.connect_timeout):
        return 1
    out = open(args.log, "a", buffering=1) if args.log else sys.stdout
    try:
        loop = XcpLoop(switch, topology.routes(switch.name), driver, clock=time.monotonic, wall_clock=time.time,
                       emit=lambda record: out.write(json.dumps(record) + "\n"))
    except SwitchUnavailable as e:
        print(f"control_plane: switch {switch.name}: {e}", file=sys.stderr)
        return 1
    # the word a runner waits for, as RCP's loop logs it (topo/mininet/network.py)
    print(f"control_plane: {switch.name}: synchronised, XCP on ports {sorted(loop.ports)}", file=sys.stderr)
    _run_until_stopped(loop.run, args.duration)
    driver.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`python -m control_plane`'s RCP parameters: a preset by name, any RcpParams field set on top of it with
--param, and a one-line refusal for an unknown preset, key or value, before any switch is contacted."""

import pytest

from control_plane.__main__ import main, parse_args, rcp_params
from p4rcp.params import RcpParams
from p4rcp.presets import PRESETS
from p4rcp.toolchain import ROOT

TOPOLOGY = str(ROOT / "topo" / "topologies" / "dumbbell.toml")


def test_without_a_preset_the_loop_runs_the_defaults_on_the_topologys_data_frame():
    args = parse_args(["--topology", TOPOLOGY, "--switch", "s1"])
    preset, params = rcp_params(args.preset, args.param, 1078)
    assert preset is PRESETS["rcp"] and params == RcpParams(queue_packet_bytes=1078)


def test_a_preset_with_params_on_top():
    args = parse_args(["--topology", TOPOLOGY, "--switch", "s1", "--preset", "rcp-papers", "--param", "beta=0.5",
                       "--param", "police=true", "--param", "dscp_weights=10:0.5", "--param", "queue_packet_bytes=1500"])
    preset, params = rcp_params(args.preset, args.param, 1078)
    assert preset.name == "rcp-papers"
    assert params == RcpParams(alpha=0.1, beta=0.5, queue_reads=1, overload_floor=False, feedforward=False,
                               tcp_coupling=False, police=True, dscp_weights={10: 0.5}, queue_packet_bytes=1500)


@pytest.mark.parametrize("argv,message", [
    (["--preset", "rcp-fast"], "no preset 'rcp-fast'; the presets: rcp, rcp-plain"),
    (["--preset", "reno-iw2"], "preset 'reno-iw2' sets the hosts' congestion control (tcp:reno), not the routers"),
    (["--param", "alhpa=0.2"], "no RCP parameter 'alhpa'; did you mean 'alpha'?"),
    (["--param", "alpha=high"], "--param alpha takes a number, got 'high'"),
    (["--preset", "rcp-ns2", "--param", "d0_estimator=ns3"],
     "preset rcp-ns2 with d0_estimator=ns3: d0_estimator must be one of ewma, ns2"),
    (["--param", "feedforward=maybe"], "feedforward takes true or false"),
])
def test_a_bad_preset_or_param_stops_with_one_line_before_any_switch(argv, message, capsys):
    assert main(["--topology", TOPOLOGY, "--switch", "s1", "--thrift-port", "1", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("control_plane: ") and message in err[0], err


def test_xcp_runs_over_thrift_only(capsys):
    assert main(["--topology", TOPOLOGY, "--switch", "s1", "--router", "xcp", "--p4runtime", "127.0.0.1:1"]) == 2
    assert "--router xcp runs over bmv2's Thrift runtime" in capsys.readouterr().err

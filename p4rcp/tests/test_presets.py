"""The named schemes (p4rcp/presets.py): each builds the routers' parameters it says, the presets that must keep
their meaning when RcpParams' defaults change write it out, and a command line's KEY=VALUE is typed by the field
it sets."""

from dataclasses import fields

import pytest

from p4rcp.params import RcpParams
from p4rcp.presets import PRESETS, UnknownPreset, describe_routers, parse_param, preset, router_preset

FIELDS = {f.name for f in fields(RcpParams)}


def test_every_preset_builds_the_routers_parameters_from_fields_that_exist():
    for name, p in PRESETS.items():
        assert p.name == name and p.summary and "\n" not in p.summary
        assert set(p.rcp) <= FIELDS, (name, set(p.rcp) - FIELDS)
        assert isinstance(p.params(), RcpParams)
        assert (p.initcwnd is None or p.cc.startswith("tcp")) and (p.cc == "rcp" or not p.rcp), name


def test_rcp_is_the_defaults_whatever_they_are():
    assert dict(PRESETS["rcp"].rcp) == {} and PRESETS["rcp"].params() == RcpParams()


@pytest.mark.parametrize("name,meaning", [
    ("rcp-plain", {"alpha": 0.4, "beta": 0.4, "queue_reads": 1, "overload_floor": False, "feedforward": False,
      "tcp_coupling": False}),
    ("rcp-papers", {"alpha": 0.1, "beta": 1.0, "queue_reads": 1, "overload_floor": False, "feedforward": False,
      "tcp_coupling": False}),
    ("rcp-ns2", {"alpha": 0.4, "beta": 0.4, "queue_reads": 1, "overload_floor": False, "feedforward": False,
      "tcp_coupling": False, "d0_estimator": "ns2"}),
])
def test_presets_of_a_fixed_law_write_out_every_field_their_meaning_rests_on(name, meaning):
    # Written out, not left to the defaults: a change of RcpParams' defaults leaves these as they are.
    assert dict(PRESETS[name].rcp) == meaning
    # The rest of the papers' law comes from the defaults: if one of these changes, the preset must write it out.
    p = PRESETS[name].params()
    assert (p.gamma, p.q0_bytes, p.police, p.dscp_weights) == (1.0, 0.0, False, {})


def test_rcp_police_is_the_default_with_policing():
    assert PRESETS["rcp-police"].params() == RcpParams(police=True)


def test_reno_iw2_is_the_hosts_tcp_with_two_segments():
    p = PRESETS["reno-iw2"]
    assert (p.cc, p.initcwnd, dict(p.rcp)) == ("tcp:reno", 2, {})


def test_a_preset_cannot_be_changed_in_place():
    with pytest.raises(TypeError):
        PRESETS["rcp-papers"].rcp["alpha"] = 0.4


def test_params_takes_settings_under_the_preset_and_overrides_over_it():
    papers = PRESETS["rcp-papers"]
    p = papers.params({"queue_packet_bytes": 1500, "alpha": 0.7}, beta=0.5)
    assert (p.queue_packet_bytes, p.alpha, p.beta) == (1500, 0.1, 0.5)


def test_unknown_names_and_tcp_presets_for_routers_are_refused_naming_the_known_ones():
    with pytest.raises(UnknownPreset, match="no preset 'rcp-fast'; the presets: rcp, rcp-plain, rcp-papers"):
        preset("rcp-fast")
    with pytest.raises(UnknownPreset, match=r"sets the hosts' congestion control \(tcp:reno\).*rcp-police"):
        router_preset("reno-iw2")
    assert router_preset("rcp-ns2") is PRESETS["rcp-ns2"]


def test_describe_names_every_setting_that_differs_between_presets():
    assert "alpha 0.1, beta 1," in describe_routers(PRESETS["rcp-papers"].params())
    assert "d0 by ns2" in describe_routers(PRESETS["rcp-ns2"].params())
    assert "policing" in describe_routers(PRESETS["rcp-police"].params())
    assert "feedforward" in describe_routers(RcpParams())
    assert "feedforward" not in describe_routers(PRESETS["rcp-plain"].params())
    assert "weights by DSCP 10: 0.5, 46: 0.25" in describe_routers(RcpParams(dscp_weights={"46": 0.25, "10": 0.5}))


@pytest.mark.parametrize("text,parsed", [
    ("alpha=0.2", ("alpha", 0.2)),
    ("q0-bytes=6000", ("q0_bytes", 6000.0)),
    ("r_min_bps=20000", ("R_min_bps", 20000.0)),
    ("queue_packet_bytes=1078", ("queue_packet_bytes", 1078)),
    ("police=true", ("police", True)),
    ("feedforward=False", ("feedforward", False)),
    ("d0_estimator=ns2", ("d0_estimator", "ns2")),
    ("dscp_weights=10:0.5,46:0.25", ("dscp_weights", {"10": 0.5, "46": 0.25})),
    ("dscp_weights=", ("dscp_weights", {})),
])
def test_a_param_is_typed_by_the_field_it_sets(text, parsed):
    assert parse_param(text) == parsed


@pytest.mark.parametrize("text,message", [
    ("alpah=0.2", "no RCP parameter 'alpah'; did you mean 'alpha'?"),
    ("colour=blue", "no RCP parameter 'colour'; the keys: alpha, beta"),
    ("alpha", "--param takes KEY=VALUE, got 'alpha'"),
    ("alpha=fast", "--param alpha takes a number, got 'fast'"),
    ("queue_packet_bytes=1078.5", "--param queue_packet_bytes takes an integer"),
    ("police=yes", "--param police takes true or false"),
    ("dscp_weights=10=0.5", "--param dscp_weights takes DSCP:W[,DSCP:W ...]"),
])
def test_a_bad_param_is_refused_naming_key_and_type(text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("[", r"\[").replace(".", r"\.")):
        parse_param(text)


def test_the_parameters_own_checks_judge_a_param_in_range_of_its_type():
    key, value = parse_param("alpha=-1")
    with pytest.raises(ValueError, match="alpha must be > 0"):
        PRESETS["rcp"].params(**{key: value})

"""The P4Runtime driver against a fake Tofino (control_plane/tests/fake_p4runtime.py): state kept per pipe,
the stamp convention, queue cells in bytes per target, and the control loop over P4Runtime alone."""

import time
from pathlib import Path

import finsy as fy
import pytest

from control_plane.loop import ControlLoop
from control_plane.p4info_interface import interface, interface_changes, read_p4info
from control_plane.p4runtime import P4RuntimeDriver
from control_plane.tests.fake_p4runtime import FakeTofino
from p4rcp import dataplane as dp
from p4rcp.params import RcpParams
from p4rcp.toolchain import BUILD_DIR
from p4rcp.topology import build_topology

FIXTURE = Path(__file__).with_name("fixtures") / "p4rcp.p4info.txtpb"
SCHEMA = fy.P4Schema(FIXTURE)
# Tofino's ports 0-127 are pipe 0, 128-255 pipe 1: port 1's egress runs in pipe 0, port 130's in pipe 1.
PIPE_OF = {1: 0, 130: 1}


def _driver(fake, target="tna"):
    driver = P4RuntimeDriver(fake.address, FIXTURE, target=target, timeout_s=5.0)
    driver.connect()
    return driver


@pytest.mark.parametrize("per_pipe", [True, False], ids=["one entity per pipe", "the pipes' sum"])
def test_a_ports_counts_are_its_input_over_every_pipe_and_its_own_pipes_registers(per_pipe):
    with FakeTofino(SCHEMA, pipes=2, per_pipe=per_pipe) as fake:
        fake.ensure_cells(PIPE_OF)
        for port, pipe in PIPE_OF.items():
            # Input to the port arrives on both pipes' ports; the egress counts are in the port's pipe only.
            fake.count(dp.COUNTER_INPUT, port, 0, 1000 * port, 10 * port)
            fake.count(dp.COUNTER_INPUT, port, 1, 500 * port, 5 * port)
            fake.count(dp.COUNTER_POLICED, port, 1, 100, 1)
            fake.count(dp.COUNTER_RTT_COUNT, port, pipe, 0, 4)
            fake.set_register(dp.REG_RTT_SUM, port, pipe, 2**32 - 10)
            fake.set_register(dp.REG_QUEUE_DEPTH, port, pipe, 12)
            fake.set_register(dp.REG_LONG_ARRIVALS, port, pipe, 7)
            fake.set_register(dp.REG_COMMITTED_ARRIVALS, port, pipe, 9)
            fake.set_register(dp.REG_COMMITTED_DEPARTURES, port, pipe, 2)
        driver = _driver(fake)
        try:
            read = driver.read_counters(sorted(PIPE_OF), time.monotonic)
        finally:
            driver.close()
    for port in PIPE_OF:
        c = read.ports[port]
        assert (c.input_bytes, c.input_packets) == (1500 * port, 15 * port)
        assert (c.policed_bytes, c.policed_packets, c.rtt_count) == (100, 1, 4)
        assert (c.rtt_sum_us, c.queue_depth) == (2**32 - 10, 12)
        assert (c.long_arrivals, c.committed_arrivals, c.committed_departures) == (7, 9, 2)


def test_stamps_are_written_as_their_complement_to_every_pipe_and_none_is_the_reset_value():
    """A cell holds RATE_NONE - stamp: a stamp that caps nothing is 0, the value of a cell never written."""
    with FakeTofino(SCHEMA, pipes=4) as fake:
        driver = _driver(fake)
        try:
            driver.write_rates_kbps({dp.rate_cell(1, 0): 5000, dp.UNCLASSIFIED_CELL: dp.RATE_NONE})
            driver.write_syn_grants({1: dp.SynGrants.none()})
            read_back = driver.read_stamps_kbps([dp.rate_cell(1, 0), dp.UNCLASSIFIED_CELL, dp.rate_cell(2, 0)])
        finally:
            driver.close()
        assert fake.register(dp.REG_RATE, dp.rate_cell(1, 0)) == [0xFFFFFFFF - 5000] * 4
        assert fake.register(dp.REG_RATE, dp.UNCLASSIFIED_CELL) == [0] * 4
        assert fake.register(dp.REG_ARRIVALS_BASE, 1) == [0] * 4
        assert fake.register(dp.REG_SHORT_RATE, 1) == [0] * 4
        assert all(fake.register(dp.REG_SYN_RATE, dp.syn_cell(1, k)) == [0] * 4
                   for k in range(1, dp.SYN_RATES + 1))
    assert read_back == {dp.rate_cell(1, 0): 5000, dp.UNCLASSIFIED_CELL: dp.RATE_NONE,
                         dp.rate_cell(2, 0): dp.RATE_NONE}


def test_policing_is_written_in_the_programs_layout():
    """The fixture is the v1model program: the allowance and the limit go into one 64-bit cell of rcp_police."""
    with FakeTofino(SCHEMA, pipes=2) as fake:
        driver = _driver(fake, target="v1model")
        try:
            driver.write_police({dp.rate_cell(1, 2): (3000, 9000)})
        finally:
            driver.close()
        assert fake.register(dp.REG_POLICE, dp.rate_cell(1, 2)) == [3000 << 32 | 9000] * 2


TOPO = build_topology({"kind": "dumbbell", "pairs": 1, "rtt_ms": 40, "bottleneck_mbps": 12,
                       "data_frame_bytes": 1000})
S1 = TOPO.switch("s1")
PORT = S1.rcp_ports[0].number


@pytest.mark.parametrize("target, cell_bytes", [("tna", 80), ("t2na", 176)])
def test_the_loop_runs_over_p4runtime_alone_and_counts_queue_cells_in_bytes(target, cell_bytes):
    """No side driver: the loop programs routes, stamps and classes (queues are the traffic manager's own
    configuration), reads the pipes, and takes the queue register in cells of the target."""
    with FakeTofino(SCHEMA, pipes=2) as fake:
        fake.ensure_cells(S1.ports)
        driver = P4RuntimeDriver(fake.address, FIXTURE, target=target)
        loop = ControlLoop(S1, TOPO.routes("s1"), driver, RcpParams(d0_init_s=0.01), rt_priority=None,
                           switch_interval_s=None)
        try:
            loop.resync()
            writes = fake.writes
            assert (max(i for i, name in enumerate(writes) if name == dp.REG_RATE)
                    < writes.index(dp.TABLE_WEIGHT_CLASSIFIER)), "a class pointed at a stamp not yet written"
            assert fake.register(dp.REG_RATE, dp.UNCLASSIFIED_CELL) == [dp.stamp_cell_value(dp.RATE_NONE)] * 2
            assert all(fake.register(dp.REG_SYN_RATE, dp.syn_cell(p, 1)) == [dp.stamp_cell_value(dp.RATE_NONE)] * 2
                       for p in S1.ports)
            assert len(fake.tables[SCHEMA.tables[dp.TABLE_WEIGHT_CLASSIFIER].id]) == dp.NUM_DSCP
            assert len(fake.tables[SCHEMA.tables[dp.TABLE_ROUTING_V4].id]) == len(TOPO.routes("s1"))
            loop.step()                                          # the baseline
            fake.set_register(dp.REG_QUEUE_DEPTH, PORT, 1, 25)   # 25 cells behind the last packet to leave
            time.sleep(0.02)
            [record] = loop.step()
        finally:
            driver.close()
    assert record["q_bytes"] == 25 * cell_bytes


def test_a_controller_started_against_a_running_switch_resumes_its_R_and_rewrites_no_table_entry():
    """The first controller programs the switch and dies; the next one, started against the running switch,
    takes the R its stamps hold and finds the tables as they should be: it changes no entry (a clear and
    refill would have dropped and unclassified packets meanwhile)."""
    with FakeTofino(SCHEMA, pipes=2) as fake:
        fake.ensure_cells(S1.ports)
        first = P4RuntimeDriver(fake.address, FIXTURE, target="tna")
        ControlLoop(S1, TOPO.routes("s1"), first, RcpParams(), rt_priority=None, switch_interval_s=None).resync()
        first.write_rates_kbps({dp.rate_cell(PORT): 4321})     # the R it had reached when it died
        first.close()
        fake.writes.clear()
        driver = P4RuntimeDriver(fake.address, FIXTURE, target="tna")
        loop = ControlLoop(S1, TOPO.routes("s1"), driver, RcpParams(), rt_priority=None, switch_interval_s=None)
        try:
            loop.resync()
        finally:
            driver.close()
        assert loop.ports[PORT].R_bps == pytest.approx(4321e3)
        assert dp.TABLE_ROUTING_V4 not in fake.writes and dp.TABLE_WEIGHT_CLASSIFIER not in fake.writes
        assert fake.register(dp.REG_RATE, dp.rate_cell(PORT)) == [dp.stamp_cell_value(4321)] * 2


# bf-p4c's P4Info of each profile of the TNA program (Tofino 1; Tofino 2's gives the same interface), as
# `make check-tna-backend` writes it into build/tna/PROFILE/TARGET/.
TNA_FIXTURES = Path(__file__).with_name("fixtures") / "tna"
TNA_BUILD = BUILD_DIR / "tna"


def _profile(profile: str) -> Path:
    return TNA_FIXTURES / f"{profile}.p4info.txtpb"


@pytest.mark.parametrize("target, arch", [("tofino", "tna"), ("tofino2", "t2na")])
@pytest.mark.parametrize("profile", list(dp.PROFILE_FEATURES))
def test_each_profiles_fixture_gives_the_interface_bf_p4c_makes_of_p4src(profile, target, arch):
    built = TNA_BUILD / profile / target / "p4rcp_tna.p4info.txtpb"
    if not built.is_file():
        pytest.skip(f"SKIPPED: {built} not built (needs bf-p4c, p4c's Tofino back end; run 'make check-tna-backend')")
    # One fixture for both targets: Tofino 2's P4Info differs in its architecture's name only.
    expected = {**interface(read_p4info(_profile(profile))), "arch": arch}
    changes = interface_changes(expected, interface(read_p4info(built)))
    assert not changes, (f"p4src/ changed the {profile} profile's P4Info interface ({'; '.join(changes)}): copy "
                         f"{TNA_BUILD}/PROFILE/tofino/p4rcp_tna.p4info.txtpb to {TNA_FIXTURES}/PROFILE.p4info.txtpb "
                         "and check these tests still hold")


def _settings_using(features) -> RcpParams:
    """Settings that use every feature a program has, and no other."""
    return RcpParams(d0_init_s=0.01, feedforward=dp.FEATURE_FEEDFORWARD in features,
                     police=dp.FEATURE_POLICING in features,
                     dscp_weights={10: 0.5} if dp.FEATURE_WEIGHTS in features else {})


def test_the_features_of_a_program_are_what_its_p4info_holds():
    assert P4RuntimeDriver("127.0.0.1:1", FIXTURE).features == dp.ALL_FEATURES
    for profile, features in dp.PROFILE_FEATURES.items():
        assert P4RuntimeDriver("127.0.0.1:1", _profile(profile)).features == features


@pytest.mark.parametrize("profile", list(dp.PROFILE_FEATURES))
def test_the_loop_runs_each_profiles_program_and_touches_nothing_it_lacks(profile):
    """With settings that use a profile's features: stamps, the three additions and the queue, and what the
    features bring; nothing of a feature the program lacks written, and the counts it would make read as 0."""
    p4info = _profile(profile)
    features = dp.PROFILE_FEATURES[profile]
    with FakeTofino(fy.P4Schema(p4info), pipes=2) as fake:
        fake.ensure_cells(S1.ports)
        driver = P4RuntimeDriver(fake.address, p4info, target="tna")
        loop = ControlLoop(S1, TOPO.routes("s1"), driver, _settings_using(features), rt_priority=None,
                           switch_interval_s=None)
        try:
            loop.resync()
            loop.step()
            fake.count(dp.COUNTER_INPUT, PORT, 0, 3000, 3)
            time.sleep(0.02)
            [record] = loop.step()
        finally:
            driver.close()
    assert record["input_bytes"] == 3000 and record["policed_bytes"] == 0
    written_by = {dp.FEATURE_WEIGHTS: {dp.TABLE_WEIGHT_CLASSIFIER},
                  dp.FEATURE_POLICING: {dp.REG_POLICE_BYTES, dp.REG_POLICE_LIMIT},   # TNA's layout of the cells
                  dp.FEATURE_FEEDFORWARD: {dp.REG_SYN_RATE, dp.REG_SHORT_RATE, dp.REG_ARRIVALS_BASE,
                                           dp.REG_GRANT_PACKETS, dp.REG_LONG_PACKETS}}
    expected = {dp.REG_RATE, dp.TABLE_ROUTING_V4}.union(*(written_by.get(f, set()) for f in features))
    assert set(fake.writes) == expected, sorted(set(fake.writes) ^ expected)


@pytest.mark.parametrize("feature, params", [
    (dp.FEATURE_FEEDFORWARD, RcpParams()),
    (dp.FEATURE_POLICING, RcpParams(feedforward=False, police=True)),
    (dp.FEATURE_WEIGHTS, RcpParams(feedforward=False, dscp_weights={10: 0.5}))])
def test_settings_that_need_a_feature_the_program_lacks_are_refused_naming_both(feature, params):
    driver = P4RuntimeDriver("127.0.0.1:1", _profile("core"), target="tna")
    with pytest.raises(ValueError, match=f"program has no {feature}, which .* need: load a program that has it "
                                         rf"\(on Tofino and SUME, the profile {feature} or full; .*Profiles"):
        ControlLoop(S1, TOPO.routes("s1"), driver, params, rt_priority=None, switch_interval_s=None)

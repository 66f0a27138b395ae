"""The P4Runtime driver's messages, encoded against the program's P4Info, without a switch.

The P4Info is a fixture so that these tests run without p4c; the last test
checks that it still gives the interface p4c makes of p4src/ when the build is there.
"""

from pathlib import Path

import finsy as fy
import pytest
from finsy.proto import p4d, p4r

from control_plane import p4runtime as pr
from control_plane.driver import PortCounters, SwitchUnavailable
from control_plane.p4info_interface import interface, interface_changes, read_p4info
from p4rcp import dataplane as dp
from p4rcp.toolchain import BUILD_P4INFO
from p4rcp.topology import Route

FIXTURE = Path(__file__).with_name("fixtures") / "p4rcp.p4info.txtpb"
BUILT = BUILD_P4INFO
BITS = {name: 32 for name in dp.RCP_REGISTERS_READ}


@pytest.fixture(scope="module")
def schema():
    return fy.P4Schema(FIXTURE)


def test_route_entry_is_an_lpm_entry_with_the_next_hop(schema):
    route = Route(prefix="10.0.1.0/24", port=3, src_mac="00:00:00:00:01:01", dst_mac="0a:00:00:00:00:02")
    msg = pr.route_entry(route).encode(schema).table_entry
    assert msg.table_id == schema.tables[dp.TABLE_ROUTING_V4].id
    [field] = msg.match
    assert field.field_id == schema.tables[dp.TABLE_ROUTING_V4].match_fields[dp.MATCH_IPV4_DST].id
    assert (field.lpm.value, field.lpm.prefix_len) == (bytes([10, 0, 1, 0]), 24)
    action = msg.action.action
    assert action.action_id == schema.actions[dp.ACTION_SET_NEXT_HOP].id
    # P4Runtime's canonical byte strings: big-endian, leading zero bytes dropped.
    assert [(p.param_id, p.value) for p in action.params] == [
        (1, b"\x03"), (2, b"\x01\x01"), (3, bytes.fromhex("0a0000000002"))]


@pytest.mark.parametrize("route", [
    Route("10.0.0.2/32", 1, "00:00:00:00:01:01", "00:00:00:00:00:02"),
    Route("192.168.0.0/16", 511, "ff:ff:ff:ff:ff:fe", "02:00:00:00:00:01"),
])
def test_route_read_back_is_the_route_written(schema, route):
    msg = pr.route_entry(route).encode(schema)
    assert pr.route_from_entry(fy.P4TableEntry.decode(msg, schema)) == route


def test_rates_are_register_cells_indexed_by_port_holding_the_stamps_complement(schema):
    """A cell holds RATE_NONE - stamp, so that a cell at its reset value, 0, stamps nothing."""
    msgs = [e.encode(schema).register_entry for e in pr.rate_entries({7: dp.RATE_NONE, 2: 5000, 3: 0})]
    assert [m.register_id for m in msgs] == [schema.registers[dp.REG_RATE].id] * 3
    assert [(m.index.index, int.from_bytes(m.data.bitstring, "big")) for m in msgs] == [
        (2, 0xFFFFFFFF - 5000), (3, 0xFFFFFFFF), (7, 0)]


def test_stamps_read_back_are_decoded_and_a_cell_whose_pipes_disagree_holds_none(schema):
    cells = [_register_cell(schema, dp.REG_RATE, 2, dp.stamp_cell_value(5000)),
             _register_cell(schema, dp.REG_RATE, 3, 0),
             _register_cell(schema, dp.REG_RATE, 4, dp.stamp_cell_value(700)),
             _register_cell(schema, dp.REG_RATE, 4, dp.stamp_cell_value(800))]
    assert pr.stamps_from_entries(cells, [2, 3, 4, 5]) == {2: 5000, 3: dp.RATE_NONE, 4: dp.RATE_NONE,
                                                           5: dp.RATE_NONE}


def test_counts_are_read_as_whole_arrays_in_one_request(schema):
    msgs = [e.encode(schema) for e in pr.counter_reads()]
    counters = [m.counter_entry for m in msgs if m.HasField("counter_entry")]
    registers = [m.register_entry for m in msgs if m.HasField("register_entry")]
    assert [m.counter_id for m in counters] == [schema.counters[n].id for n in dp.RCP_COUNTERS]
    assert [m.register_id for m in registers] == [schema.registers[n].id for n in dp.RCP_REGISTERS_READ]
    assert not any(m.HasField("index") for m in (*counters, *registers))     # no index: every cell


def _register_cell(schema, name: str, index: int, value: int) -> fy.P4RegisterEntry:
    """A register cell as a switch would return it, decoded by finsy."""
    msg = p4r.Entity(register_entry=p4r.RegisterEntry(
        register_id=schema.registers[name].id, index=p4r.Index(index=index),
        data=p4d.P4Data(bitstring=value.to_bytes(8, "big").lstrip(b"\0") or b"\0")))
    return fy.P4RegisterEntry.decode(msg, schema)


def _counter_cell(schema, name: str, index: int, nbytes: int, packets: int) -> fy.P4CounterEntry:
    msg = p4r.Entity(counter_entry=p4r.CounterEntry(
        counter_id=schema.counters[name].id, index=p4r.Index(index=index),
        data=p4r.CounterData(byte_count=nbytes, packet_count=packets)))
    return fy.P4CounterEntry.decode(msg, schema)


def test_port_counters_from_the_cells_read(schema):
    cells = [_register_cell(schema, dp.REG_RTT_SUM, p, 2**32 - p) for p in (1, 2, 3)]
    cells += [_register_cell(schema, dp.REG_QUEUE_DEPTH, p, p) for p in (1, 2, 3)]
    cells += [_counter_cell(schema, dp.COUNTER_INPUT, p, 2**62 + p, 10 * p) for p in (1, 2, 3)]
    cells += [_counter_cell(schema, dp.COUNTER_RTT_COUNT, p, 1000 * p, 4 * p) for p in (1, 2, 3)]
    cells += [_counter_cell(schema, dp.COUNTER_POLICED, p, 100 * p, p) for p in (1, 2, 3)]
    cells += [_register_cell(schema, dp.REG_LONG_ARRIVALS, p, 7 * p) for p in (1, 2, 3)]
    cells += [_register_cell(schema, dp.REG_COMMITTED_ARRIVALS, p, 9 * p) for p in (1, 2, 3)]
    cells += [_register_cell(schema, dp.REG_COMMITTED_DEPARTURES, p, 5 * p) for p in (1, 2, 3)]
    assert pr.port_counters(cells, [1, 3], BITS) == {
        1: PortCounters(input_bytes=2**62 + 1, input_packets=10, rtt_sum_us=2**32 - 1, rtt_count=4,
                        queue_depth=1, policed_bytes=100, policed_packets=1, long_arrivals=7,
                        committed_arrivals=9, committed_departures=5),
        3: PortCounters(input_bytes=2**62 + 3, input_packets=30, rtt_sum_us=2**32 - 3, rtt_count=12,
                        queue_depth=3, policed_bytes=300, policed_packets=3, long_arrivals=21,
                        committed_arrivals=27, committed_departures=15)}


def test_each_pipes_cells_add_up_registers_modulo_their_width(schema):
    """A server that answers with one entity per pipe: counters are the pipes' sum; a register's cell is
    written in one pipe only (the port's egress), the others read 0, and the sum wraps at the width."""
    bits = {name: pr.register_bits(schema, name) for name in dp.RCP_REGISTERS_READ}
    cells = [_register_cell(schema, name, 1, v) for name in dp.RCP_REGISTERS_READ for v in (0, 3, 2**bits[name] - 1)]
    cells += [_counter_cell(schema, name, 1, 100 * v, v) for name in dp.RCP_COUNTERS for v in (0, 3, 2**32 - 1)]
    [c] = pr.port_counters(cells, [1], bits).values()
    assert (c.input_bytes, c.input_packets, c.rtt_count) == (100 * (2**32 + 2), 2**32 + 2, 2**32 + 2)
    # (3 + 2^w - 1) mod 2^w
    assert (c.rtt_sum_us, c.queue_depth, c.long_arrivals, c.committed_arrivals, c.committed_departures) == (2,) * 5


def test_stamps_and_policing_are_register_cells_of_port_and_class(schema):
    cell = dp.rate_cell(2, 3)
    assert cell == 2 * 8 + 3
    [stamp] = [e.encode(schema).register_entry for e in pr.rate_entries({cell: 750})]
    assert (stamp.register_id, stamp.index.index, int.from_bytes(stamp.data.bitstring, "big")) == (
        schema.registers[dp.REG_RATE].id, cell, dp.RATE_NONE - 750)
    # v1model (the fixture's program): allowance and limit in one 64-bit cell
    [m] = [e.encode(schema).register_entry for e in pr.police_entries({cell: (3000, 9000)}, packed=True)]
    assert (m.register_id, m.index.index, int.from_bytes(m.data.bitstring, "big")) == (
        schema.registers[dp.REG_POLICE].id, cell, 3000 << 32 | 9000)
    # TNA: a register each (names only: the fixture has no such registers to encode against)
    assert [(e.register_id, e.index, e.data) for e in pr.police_entries({cell: (3000, 9000)}, packed=False)] == [
        (dp.REG_POLICE_BYTES, cell, 3000), (dp.REG_POLICE_LIMIT, cell, 9000)]


def test_syn_grants_are_the_ports_base_its_k_th_long_syns_stamps_the_short_stamp_and_p(schema):
    grants = dp.SynGrants(41, (900, 800, 0, 0, 0, 0, 0, 700), 650, 120, 60)
    msgs = [e.encode(schema).register_entry for e in pr.syn_grant_entries({2: grants})]
    values = [(m.register_id, m.index.index, int.from_bytes(m.data.bitstring, "big")) for m in msgs]
    reg = {name: schema.registers[name].id for name in (dp.REG_ARRIVALS_BASE, dp.REG_SYN_RATE, dp.REG_SHORT_RATE,
                                                          dp.REG_GRANT_PACKETS, dp.REG_LONG_PACKETS)}
    syn, none = reg[dp.REG_SYN_RATE], dp.RATE_NONE
    assert values[0] == (reg[dp.REG_ARRIVALS_BASE], 2, 41)
    # the stamps as the data plane holds them, complemented (stamp_cell_value); P and the threshold as they are
    assert values[1:3] == [(syn, 2 * 8, none - 900), (syn, 2 * 8 + 1, none - 800)]
    assert values[8] == (syn, 2 * 8 + 7, none - 700)
    assert values[9:] == [(reg[dp.REG_SHORT_RATE], 2, none - 650), (reg[dp.REG_GRANT_PACKETS], 2, 120),
                          (reg[dp.REG_LONG_PACKETS], 2, 60)]


def test_weight_classes_map_every_dscp_of_every_port_to_its_cell(schema):
    entries = pr.weight_class_entries([1, 4], {10: 2, 46: 1})
    assert len(entries) == 2 * 64
    table = schema.tables[dp.TABLE_WEIGHT_CLASSIFIER]
    by_key = {}
    for e in entries:
        msg = e.encode(schema).table_entry
        assert msg.table_id == table.id
        fields = {f.field_id: int.from_bytes(f.exact.value, "big") for f in msg.match}
        key = (fields[table.match_fields[dp.MATCH_PORT].id], fields[table.match_fields[dp.MATCH_DSCP].id])
        assert msg.action.action.action_id == schema.actions[dp.ACTION_SET_CELL].id
        [param] = msg.action.action.params
        by_key[key] = int.from_bytes(param.value, "big")
    assert by_key[1, 10] == dp.rate_cell(1, 2) and by_key[4, 46] == dp.rate_cell(4, 1)
    assert by_key[4, 0] == dp.rate_cell(4, 0) and by_key[1, 63] == dp.rate_cell(1, 0)     # no class: weight 1
    assert len(by_key) == 128


def test_a_read_without_a_ports_cell_is_no_counter_value(schema):
    cells = [_register_cell(schema, name, 1, 10) for name in dp.RCP_REGISTERS_READ]
    cells += [_counter_cell(schema, dp.COUNTER_INPUT, 1, 100, 1)]
    with pytest.raises(SwitchUnavailable, match=dp.COUNTER_RTT_COUNT):
        pr.port_counters(cells, [1], BITS)


def test_counter_widths_come_from_the_program_and_p4runtime(schema):
    assert pr.rtt_sum_bits(schema) == dp.RTT_SUM_BITS
    driver = pr.P4RuntimeDriver("127.0.0.1:1", FIXTURE)
    assert (driver.counter_bits, driver.rtt_sum_bits, driver.queue_rate_unit) == (64, 32, "bytes")


@pytest.mark.parametrize("target, unit, epoch", [("tna", 80, 2**24 * 1e-9), ("t2na", 176, 2**24 * 1e-9),
                                                 ("v1model", None, 2**14 * 1e-6)])
def test_the_target_gives_the_queue_unit_and_the_policing_epoch(target, unit, epoch):
    driver = pr.P4RuntimeDriver("127.0.0.1:1", FIXTURE, target=target)
    assert (driver.queue_unit_bytes, driver.police_epoch_s) == (unit, pytest.approx(epoch))


def test_an_unknown_target_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown target 'tofino3'.*t2na"):
        pr.P4RuntimeDriver("127.0.0.1:1", FIXTURE, target="tofino3")


def test_without_a_side_driver_queues_are_refused_clearly():
    driver = pr.P4RuntimeDriver("127.0.0.1:1", FIXTURE)
    with pytest.raises(pr.P4RuntimeUnsupported, match="not part of P4Runtime"):
        driver.set_queue(1, 1000, 64)


def test_calls_before_connect_say_not_connected():
    driver = pr.P4RuntimeDriver("127.0.0.1:1", FIXTURE)
    with pytest.raises(SwitchUnavailable, match="not connected"):
        driver.write_rates_kbps({1: 100})


def test_nothing_listening_is_switch_unavailable_not_a_hang():
    driver = pr.P4RuntimeDriver("127.0.0.1:1", FIXTURE, timeout_s=3.0)
    with pytest.raises(SwitchUnavailable):
        driver.connect()
    driver.close()


def test_fixture_gives_the_interface_p4c_makes_of_p4src():
    """The same interface to the control plane, whatever else the installed p4c writes differently."""
    if not BUILT.is_file():
        pytest.skip(f"SKIPPED: {BUILT} not built (needs p4c-bm2-ss; run 'make build')")
    changes = interface_changes(interface(read_p4info(FIXTURE)), interface(read_p4info(BUILT)))
    assert not changes, (f"p4src/ changed its P4Info's interface ({'; '.join(changes)}): copy {BUILT} to "
                         f"{FIXTURE} and check these tests still hold")

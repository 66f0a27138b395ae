"""The P4Info's interface to the control plane (control_plane/p4info_interface.py): what two compilers may
write differently leaves it alone; what the control plane encodes by changes it."""

from __future__ import annotations

from pathlib import Path

import pytest
from finsy.proto import p4i

from control_plane.p4info_interface import interface, interface_changes, read_p4info
from p4rcp import dataplane as dp

FIXTURE = Path(__file__).with_name("fixtures") / "p4rcp.p4info.txtpb"


@pytest.fixture
def p4info() -> p4i.P4Info:
    return read_p4info(FIXTURE)


def changes_after(p4info: p4i.P4Info, edit) -> list[str]:
    before = interface(p4info)
    edited = p4i.P4Info()
    edited.CopyFrom(p4info)
    edit(edited)
    return interface_changes(before, interface(edited))


def entity(entities, name: str):
    [found] = [e for e in entities if e.preamble.name == name]
    return found


def test_order_annotations_docs_and_informational_fields_are_no_change(p4info):
    def rewrite(info: p4i.P4Info) -> None:
        for kind in ("tables", "actions", "counters", "registers"):
            entities = list(getattr(info, kind))[::-1]
            del getattr(info, kind)[:]
            getattr(info, kind).extend(entities)
        table = entity(info.tables, dp.TABLE_WEIGHT_CLASSIFIER)
        table.preamble.annotations.append("@brief(\"DSCP to rate cell\")")
        table.preamble.doc.brief = "a port's and DSCP's rate cell"
        fields = list(table.match_fields)[::-1]
        del table.match_fields[:]
        table.match_fields.extend(fields)
        table.match_fields[0].annotations.append("@format(IPV4_ADDRESS)")
        table.initial_default_action.action_id = table.const_default_action_id
        table.has_initial_entries = True
        entity(info.registers, dp.REG_RATE).type_spec.bitstring.annotations.append("@hidden")
        info.pkg_info.name = "p4rcp"
        info.pkg_info.doc.description = "another compiler's package information"
    assert changes_after(p4info, rewrite) == []


def test_a_register_of_another_width_is_a_change(p4info):
    def narrow(info: p4i.P4Info) -> None:
        entity(info.registers, dp.REG_RATE).type_spec.bitstring.bit.bitwidth = 16
    assert changes_after(p4info, narrow) == [f"registers/{dp.REG_RATE}/type_spec/bitstring/bit/bitwidth: 32 -> 16"]


@pytest.mark.parametrize("edit, change", [
    (lambda key: setattr(key, "bitwidth", 24), "bitwidth: 32 -> 24"),
    (lambda key: setattr(key, "match_type", p4i.MatchField.TERNARY), "match_type: 'LPM' -> 'TERNARY'"),
    (lambda key: setattr(key, "id", 2), "id: 1 -> 2"),
])
def test_a_table_key_of_another_width_kind_or_id_is_a_change(p4info, edit, change):
    def edit_key(info: p4i.P4Info) -> None:
        edit(entity(info.tables, dp.TABLE_ROUTING_V4).match_fields[0])
    key = f"tables/{dp.TABLE_ROUTING_V4}/match_fields/{dp.MATCH_IPV4_DST}"
    assert changes_after(p4info, edit_key) == [f"{key}/{change}"]


def test_renamed_ids_sizes_and_removed_entities_are_changes(p4info):
    def edit(info: p4i.P4Info) -> None:
        entity(info.tables, dp.TABLE_ROUTING_V4).match_fields[0].name = "dst"
        entity(info.actions, dp.ACTION_SET_NEXT_HOP).preamble.id += 1
        entity(info.counters, dp.COUNTER_INPUT).size = 256
        info.registers.remove(entity(info.registers, dp.REG_QUEUE_DEPTH))
    assert changes_after(p4info, edit) == [
        f"actions/{dp.ACTION_SET_NEXT_HOP}/id: {entity(p4info.actions, dp.ACTION_SET_NEXT_HOP).preamble.id} -> "
        f"{entity(p4info.actions, dp.ACTION_SET_NEXT_HOP).preamble.id + 1}",
        f"counters/{dp.COUNTER_INPUT}/size: 512 -> 256",
        f"registers/{dp.REG_QUEUE_DEPTH}: removed",
        f"tables/{dp.TABLE_ROUTING_V4}/match_fields/dst: added",
        f"tables/{dp.TABLE_ROUTING_V4}/match_fields/{dp.MATCH_IPV4_DST}: removed"]


def test_text_that_is_no_p4info_is_refused_by_name(tmp_path):
    path = tmp_path / "p4rcp.json"
    path.write_text('{"header_types": []}\n')
    with pytest.raises(ValueError, match="p4rcp.json is not a P4Info in protobuf text format"):
        read_p4info(path)

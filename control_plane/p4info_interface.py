"""What a controller relies on in a P4Info: the interface that p4c gives a program's control plane.

Two compilers, or two versions of one, write the same program's P4Info differently: entities in another
order, other annotations and documentation, fields that only inform (p4c 1.2.5 adds each table's
initial_default_action). A controller encodes and decodes its messages by what is kept here: each entity's
name, alias and id; a table's keys (id, name, width, match kind), actions, constant default action, size
and whether it is constant; an action's parameters; a counter's or meter's unit and size; a register's
type and size; the types they name; and the architecture.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableSequence
from pathlib import Path

from finsy.proto import p4i
from google.protobuf import text_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

# For each kind of entity, the fields beside its preamble's name, alias and id that a controller relies on.
ENTITY_FIELDS = {
    "tables": ("match_fields", "action_refs", "const_default_action_id", "implementation_id",
               "direct_resource_ids", "size", "idle_timeout_behavior", "is_const_table"),
    "actions": ("params",),
    "action_profiles": ("table_ids", "with_selector", "size", "max_group_size", "sum_of_weights",
                        "sum_of_members", "weights_disallowed"),
    "counters": ("spec", "size"),
    "direct_counters": ("spec", "direct_table_id"),
    "meters": ("spec", "size"),
    "direct_meters": ("spec", "direct_table_id"),
    "registers": ("type_spec", "size"),
    "digests": ("type_spec",),
    "controller_packet_metadata": ("metadata",),
    "value_sets": ("match", "size"),
}
# Wherever they appear: for people and tools, not for the messages a controller sends.
NOT_RELIED_ON = frozenset({"annotations", "annotation_locations", "structured_annotations", "doc"})


def read_p4info(path: str | Path) -> p4i.P4Info:
    """A P4Info in protobuf text format (p4c's --p4runtime-files *.txtpb)."""
    try:
        return text_format.Parse(Path(path).read_text(), p4i.P4Info())
    except text_format.ParseError as e:
        raise ValueError(f"{path} is not a P4Info in protobuf text format: {e}") from None


def interface(p4info: p4i.P4Info) -> dict:
    """The P4Info's meaning to a controller: entities keyed by kind and name, their members by name,
    unordered where P4Runtime names them by id, as plain values."""
    meaning: dict = {"arch": p4info.pkg_info.arch, "type_info": _meaning(p4info.type_info)}
    for kind, fields in ENTITY_FIELDS.items():
        entities = {}
        for entity in getattr(p4info, kind):
            if entity.preamble.name in entities:
                raise ValueError(f"the P4Info has two {kind} named {entity.preamble.name!r}")
            entities[entity.preamble.name] = {"id": entity.preamble.id, "alias": entity.preamble.alias,
                                              **_meaning(entity, keep=fields)}
        meaning[kind] = entities
    return meaning


def interface_changes(before: dict, after: dict, path: str = "") -> list[str]:
    """Each difference between two interfaces, as 'kind/name/field...: before -> after'."""
    changes = []
    for key in sorted(before.keys() | after.keys(), key=str):
        where = f"{path}/{key}" if path else str(key)
        if key not in after:
            changes.append(f"{where}: removed")
        elif key not in before:
            changes.append(f"{where}: added")
        elif isinstance(before[key], dict) and isinstance(after[key], dict):
            changes += interface_changes(before[key], after[key], where)
        elif before[key] != after[key]:
            changes.append(f"{where}: {before[key]!r} -> {after[key]!r}")
    return changes


def _meaning(message: Message, keep: tuple[str, ...] | None = None) -> dict:
    return {field.name: _value(field, value) for field, value in message.ListFields()
            if field.name not in NOT_RELIED_ON and (keep is None or field.name in keep)}


def _value(field: FieldDescriptor, value):
    if isinstance(value, Mapping):                      # a map field (type_info's named types)
        return {key: _value(field.message_type.fields_by_name["value"], v) for key, v in value.items()}
    if isinstance(value, MutableSequence):              # a repeated field
        items = [_single(field, v) for v in value]
        # Members with an id (keys, parameters, action references, packet metadata) are found by it, so
        # their order means nothing; members without one (a struct's) keep theirs.
        if field.type == FieldDescriptor.TYPE_MESSAGE and "id" in field.message_type.fields_by_name:
            return {item.get("name", item.get("id", 0)): item for item in items}
        return sorted(items) if field.type != FieldDescriptor.TYPE_MESSAGE else items
    return _single(field, value)


def _single(field: FieldDescriptor, value):
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return _meaning(value)
    if field.type == FieldDescriptor.TYPE_ENUM:
        return field.enum_type.values_by_number[value].name
    return value

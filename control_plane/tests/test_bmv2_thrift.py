"""The Thrift driver's batching transport and deferred write answers, without a switch."""

import io

import pytest
from bm_runtime.standard.Standard import bm_register_read_all_result, bm_register_write_result
from bm_runtime.standard.ttypes import InvalidRegisterOperation, RegisterOperationErrorCode
from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TMessageType
from thrift.transport import TTransport

from control_plane.bmv2_thrift import Bmv2ThriftDriver, _BatchingTransport
from control_plane.driver import SwitchUnavailable


class Wire(TTransport.TTransportBase):
    """Records every write that reaches the socket."""

    def __init__(self):
        self.writes: list[bytes] = []

    def write(self, buf):
        self.writes.append(bytes(buf))

    def flush(self):
        pass


def test_requests_in_a_batch_leave_in_one_write():
    wire = Wire()
    transport = _BatchingTransport(wire)
    with transport.batch():
        for request in (b"one", b"two", b"three"):
            transport.write(request)
            transport.flush()                 # what each generated send_* does
        assert wire.writes == []
    assert wire.writes == [b"onetwothree"]


def test_outside_a_batch_each_flush_writes():
    wire = Wire()
    transport = _BatchingTransport(wire)
    for request in (b"one", b"two"):
        transport.write(request)
        transport.flush()
    assert wire.writes == [b"one", b"two"]


class Switch(Wire):
    """The switch's end of a connection: records what the driver writes, answers from a queue."""

    def __init__(self):
        super().__init__()
        self.answers = io.BytesIO()

    def queue(self, name: str, result) -> None:
        out = TTransport.TMemoryBuffer()
        protocol = TBinaryProtocol.TBinaryProtocol(out)
        protocol.writeMessageBegin(name, TMessageType.REPLY, 0)
        result.write(protocol)
        protocol.writeMessageEnd()
        position = self.answers.tell()
        self.answers.seek(0, io.SEEK_END)
        self.answers.write(out.getvalue())
        self.answers.seek(position)

    def read(self, sz):
        data = self.answers.read(sz)
        if not data:
            raise EOFError("the driver read an answer the switch has not sent")
        return data

    def unread(self) -> int:
        return len(self.answers.getbuffer()) - self.answers.tell()


def connected_driver():
    switch = Switch()
    driver = Bmv2ThriftDriver(9090)
    driver._transport = _BatchingTransport(switch)
    driver._clients(driver._transport)
    return driver, switch


def test_rate_writes_leave_together_and_their_answers_are_read_before_the_next_request():
    driver, switch = connected_driver()
    driver.write_rates_kbps({2: 100, 3: 200})          # no answer yet: reading one would fail
    assert len(switch.writes) == 1
    switch.queue("bm_register_write", bm_register_write_result())
    switch.queue("bm_register_write", bm_register_write_result())
    switch.queue("bm_register_read_all", bm_register_read_all_result(success=[7, 8, 9]))
    assert driver.read_register("rcp_rate") == [7, 8, 9]
    assert switch.unread() == 0


def test_an_error_in_a_deferred_write_answer_surfaces_in_the_next_call_and_drops_the_connection():
    driver, switch = connected_driver()
    driver.write_rates_kbps({2: 100, 3: 200})
    switch.queue("bm_register_write", bm_register_write_result(
        ouch=InvalidRegisterOperation(RegisterOperationErrorCode.INVALID_INDEX)))
    switch.queue("bm_register_write", bm_register_write_result())
    with pytest.raises(InvalidRegisterOperation):
        driver.read_register("rcp_rate")
    with pytest.raises(SwitchUnavailable, match="not connected"):
        driver.read_register("rcp_rate")


def test_close_reads_the_answers_of_the_writes_first():
    """bmv2 stops serving a connection at the first answer it cannot send: a close with answers unread
    loses the writes behind them."""
    driver, switch = connected_driver()
    driver.write_rates_kbps({2: 100, 3: 200})
    switch.queue("bm_register_write", bm_register_write_result())
    switch.queue("bm_register_write", bm_register_write_result())
    driver.close()
    assert switch.unread() == 0


def requests(wire_bytes: bytes) -> list[tuple[str, object]]:
    """The requests in what the driver wrote: (method, its arguments)."""
    from bm_runtime.standard import Standard
    buffer = TTransport.TMemoryBuffer(wire_bytes)
    protocol = TBinaryProtocol.TBinaryProtocol(buffer)
    out = []
    while buffer.cstringio_buf.tell() < len(wire_bytes):
        name, _, _ = protocol.readMessageBegin()
        method = name.split(":", 1)[1]
        args = getattr(Standard, f"{method}_args")()
        args.read(protocol)
        protocol.readMessageEnd()
        out.append((method, args))
    return out


def test_xcp_coefficients_leave_as_fixed_point_cells_in_one_write_and_turn_xcp_on_or_off():
    from p4rcp import dataplane as dp
    driver, switch = connected_driver()
    driver.write_xcp_cells({2: dp.XcpControl.of(3e8, 20.0, 900, 100), 3: dp.XcpControl(0, 7, 1, 2), 4: None})
    [batch] = switch.writes
    sent = [(a.register_array_name, a.index, a.value) for m, a in requests(batch) if m == "bm_register_write"]
    assert len(sent) == len(requests(batch))
    left = (dp.REG_XCP_POSITIVE_LEFT, dp.REG_XCP_NEGATIVE_LEFT)
    assert sent == [(dp.REG_XCP_XI_P, 2, dp.xcp_xi_p_cell(3e8)), (dp.REG_XCP_XI_N, 2, dp.xcp_xi_n_cell(20.0)),
                    (left[0], 2, 900), (left[1], 2, 100), (dp.REG_XCP_ON, 2, 1),
                    (dp.REG_XCP_XI_P, 3, 0), (dp.REG_XCP_XI_N, 3, 7), (left[0], 3, 1), (left[1], 3, 2),
                    (dp.REG_XCP_ON, 3, 1),
                    (dp.REG_XCP_XI_P, 4, 0), (dp.REG_XCP_XI_N, 4, 0), (left[0], 4, 0), (left[1], 4, 0),
                    (dp.REG_XCP_ON, 4, 0)]
    for _ in sent:
        switch.queue("bm_register_write", bm_register_write_result())
    driver.wait_for_writes()
    assert switch.unread() == 0


def test_xcp_cells_are_read_and_the_minimum_queue_restarted_in_one_round_trip():
    from bm_runtime.standard.Standard import bm_counter_read_result, bm_register_read_result
    from bm_runtime.standard.ttypes import BmCounterValue

    from control_plane.driver import XcpCells
    from p4rcp import dataplane as dp
    driver, switch = connected_driver()
    for port, sum_x in ((1, -2), (4, 5)):          # a 64-bit sum past 2^63 comes back negative over Thrift
        switch.queue("bm_counter_read", bm_counter_read_result(success=BmCounterValue(bytes=1000 * port, packets=1)))
        for value in (sum_x, 30, 40, dp.XCP_MIN_QUEUE_NONE, 6):
            switch.queue("bm_register_read", bm_register_read_result(success=value))
        switch.queue("bm_register_write", bm_register_write_result())
    cells = driver.read_xcp_cells([1, 4])
    assert cells == {1: XcpCells(1000, 2**64 - 2, 30, 40, dp.XCP_MIN_QUEUE_NONE, 6),
                     4: XcpCells(4000, 5, 30, 40, dp.XCP_MIN_QUEUE_NONE, 6)}
    assert switch.unread() == 0 and len(switch.writes) == 1
    sent = requests(switch.writes[0])
    port_1 = [(m, getattr(a, "counter_name", None) or a.register_array_name, getattr(a, "index", None) or a.idx)
              for m, a in sent[:7]]
    assert port_1 == [("bm_counter_read", dp.COUNTER_INPUT, 1), ("bm_register_read", dp.REG_XCP_SUM_X, 1),
                      ("bm_register_read", dp.REG_XCP_SUM_RTT_X, 1), ("bm_register_read", dp.REG_XCP_SUM_S, 1),
                      ("bm_register_read", dp.REG_XCP_MIN_QUEUE, 1), ("bm_register_read", dp.REG_QUEUE_DEPTH, 1),
                      ("bm_register_write", dp.REG_XCP_MIN_QUEUE, 1)]
    assert sent[6][1].value == dp.XCP_MIN_QUEUE_NONE and len(sent) == 14

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

"""The Thrift driver's batching transport, without a switch."""

from thrift.transport import TTransport

from control_plane.bmv2_thrift import _BatchingTransport


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

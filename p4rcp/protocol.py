"""The RCP header of docs/protocol.md as a Scapy layer: the one Python definition.

Importing this module binds the layer to UDP port 6577 in both directions, so
``Ether(raw_bytes)`` or ``rdpcap(...)`` dissect RCP headers wherever they appear.
"""

from scapy.fields import BitEnumField, BitField, ByteField, IntField, ShortField
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_layers

RCP_UDP_PORT = 6577
RCP_VERSION = 1
RCP_HEADER_LEN = 16
# Valid RTT samples satisfy 0 < rtt_us <= RCP_MAX_RTT_US = 2^23 - 1 (8.39 s; p4src/shared/defines.p4: a power
# of two, which routers test on the high bits).
RCP_RTT_BITS = 23
RCP_MAX_RTT_US = (1 << RCP_RTT_BITS) - 1
# The lowest rate RCP gives a flow: routers clamp R there and senders send no slower.
RCP_MIN_RATE_KBPS = 10

DATA, ACK, SYN, SYNACK, FIN, FINACK, REF, REFACK = range(8)
# flags: the first transmission of a flow's last DATA packet (routers count departures by it).
FLAG_LAST = 0x01
RCP_TYPES = {DATA: "DATA", ACK: "ACK", SYN: "SYN", SYNACK: "SYNACK", FIN: "FIN", FINACK: "FINACK", REF: "REF",
             REFACK: "REFACK"}
# Stamped and RTT-sampled by routers (docs/protocol.md); REF is a slow sender's probe for R.
FORWARD_TYPES = (DATA, SYN, REF)


class RCP(Packet):
    name = "RCP"
    fields_desc = [
        BitField("version", RCP_VERSION, 4),
        BitEnumField("type", DATA, 4, RCP_TYPES),
        ByteField("flags", 0),
        ShortField("reserved", 0),
        IntField("rate_kbps", 0),
        IntField("rtt_us", 0),
        IntField("feedback_kbps", 0),
    ]

    def mysummary(self):
        return self.sprintf("RCP %type% rate=%rate_kbps%kb/s rtt=%rtt_us%us fb=%feedback_kbps%kb/s")


bind_layers(UDP, RCP, dport=RCP_UDP_PORT)
bind_layers(UDP, RCP, sport=RCP_UDP_PORT)

"""The RCP header of docs/protocol.md as a Scapy layer: the one Python definition.

Its constants are the Rust hosts' (hosts/src/transport/wire.rs, the one definition of the wire format), read
from the C header generated from it, hosts/include/p4rcp_wire.h.

Importing this module binds the layer to UDP port 6577 in both directions, so
``Ether(raw_bytes)`` or ``rdpcap(...)`` dissect RCP headers wherever they appear.
"""

import re
from pathlib import Path

from scapy.fields import BitEnumField, BitField, ByteField, IntField, ShortField, SignedIntField
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_layers

WIRE_HEADER = Path(__file__).resolve().parent.parent / "hosts" / "include" / "p4rcp_wire.h"


def read_wire_header(path: Path = WIRE_HEADER) -> dict[str, int]:
    """Every `#define P4RCP_NAME VALUE` of the header, without its prefix: NAME -> VALUE."""
    macros = {}
    for name, value in re.findall(r"^#define P4RCP_(\w+) (0x[0-9A-Fa-f]+|\d+)(?:u|ull)?$", path.read_text(),
                                  re.MULTILINE):
        macros[name] = int(value, 0)
    return macros


WIRE = read_wire_header()

RCP_UDP_PORT = WIRE["UDP_PORT"]
RCP_VERSION = WIRE["VERSION"]
RCP_HEADER_LEN = WIRE["HEADER_LEN"]
# Valid RTT samples satisfy 0 < rtt_us <= RCP_MAX_RTT_US = 2^23 - 1 (8.39 s; p4src/shared/defines.p4: a power
# of two, which routers test on the high bits).
RCP_RTT_BITS = WIRE["RTT_BITS"]
RCP_MAX_RTT_US = WIRE["MAX_RTT_US"]
# The lowest rate RCP gives a flow: routers clamp R there and senders send no slower.
RCP_MIN_RATE_KBPS = WIRE["MIN_RATE_KBPS"]
# What a sender asks for in its SYN, unless told otherwise (p4rcp-host --max-rate's default).
HOSTS_MAX_RATE_KBPS = WIRE["DEFAULT_MAX_RATE_KBPS"]

TYPE_NAMES = ("DATA", "ACK", "SYN", "SYNACK", "FIN", "FINACK", "REF", "REFACK")
DATA, ACK, SYN, SYNACK, FIN, FINACK, REF, REFACK = (WIRE[f"TYPE_{name}"] for name in TYPE_NAMES)
RCP_TYPES = {WIRE[f"TYPE_{name}"]: name for name in TYPE_NAMES}
# flags: the first DATA packet a flow sends once its unsent data takes at most one round trip (routers count
# its departure by it, weighed by its size).
FLAG_ENDING = WIRE["FLAG_ENDING"]
# size on SYN and ENDING: the flow's DATA packets, saturating; this value when unknown or that large.
SIZE_UNKNOWN_PACKETS = WIRE["SIZE_UNKNOWN_PACKETS"]
# Stamped and RTT-sampled by routers (docs/protocol.md); REF is a slow sender's probe for R.
FORWARD_TYPES = tuple(t for t in sorted(RCP_TYPES) if WIRE["FORWARD_TYPES_MASK"] >> t & 1)


class RCP(Packet):
    name = "RCP"
    fields_desc = [
        BitField("version", RCP_VERSION, 4),
        BitEnumField("type", DATA, 4, RCP_TYPES),
        ByteField("flags", 0),
        ShortField("size", 0),
        IntField("rate_kbps", 0),
        IntField("rtt_us", 0),
        IntField("feedback_kbps", 0),
    ]

    def mysummary(self):
        return self.sprintf("RCP %type% rate=%rate_kbps%kb/s size=%size% rtt=%rtt_us%us fb=%feedback_kbps%kb/s")

    def guess_payload_class(self, payload):
        if self.flags & FLAG_XCP:
            return XCP
        return super().guess_payload_class(payload)


bind_layers(UDP, RCP, dport=RCP_UDP_PORT)
bind_layers(UDP, RCP, sport=RCP_UDP_PORT)


# XCP's congestion header (docs/xcp.md): XCP_HEADER_LEN bytes between the RCP header and the hosts' header when the
# RCP header's flags hold FLAG_XCP. H_rtt is the RCP header's rtt_us.
FLAG_XCP = WIRE["FLAG_XCP"]
XCP_HEADER_LEN = WIRE["XCP_HEADER_LEN"]


class XCP(Packet):
    name = "XCP"
    fields_desc = [
        IntField("cwnd_bytes", 0),      # H_cwnd, bytes of Ethernet frames
        IntField("x_ns", 0),            # x = rtt s / cwnd in ns, computed by the sender
        SignedIntField("feedback", 0),  # H_feedback, bytes: the sender's request, lowered by routers; echoed in answers
    ]

    def mysummary(self):
        return self.sprintf("XCP cwnd=%cwnd_bytes% x=%x_ns%ns fb=%feedback%")

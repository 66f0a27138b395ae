/* p4rcp's wire constants (docs/protocol.md), generated from hosts/src/transport/wire.rs by
 * hosts/src/ffi/wire_header.rs: do not edit. `P4RCP_WRITE_HEADER=1 cargo test wire_header`
 * rewrites it; cargo test fails while it differs. */
#ifndef P4RCP_WIRE_H
#define P4RCP_WIRE_H

/* The RCP header: the first 16 bytes of the UDP payload, big-endian (docs/protocol.md). */
/* Byte 0 holds the version (high 4 bits) and the type (low 4 bits). */
#define P4RCP_UDP_PORT 6577
#define P4RCP_VERSION 1
#define P4RCP_HEADER_LEN 16
#define P4RCP_FLAGS_OFFSET 1
#define P4RCP_SIZE_OFFSET 2
#define P4RCP_RATE_OFFSET 4
#define P4RCP_RTT_OFFSET 8
#define P4RCP_FEEDBACK_OFFSET 12

/* Packet types; forward types (a bit each in the mask) are stamped and RTT-sampled by routers. */
#define P4RCP_TYPE_DATA 0
#define P4RCP_TYPE_ACK 1
#define P4RCP_TYPE_SYN 2
#define P4RCP_TYPE_SYNACK 3
#define P4RCP_TYPE_FIN 4
#define P4RCP_TYPE_FINACK 5
#define P4RCP_TYPE_REF 6
#define P4RCP_TYPE_REFACK 7
#define P4RCP_FORWARD_TYPES_MASK 0x45

/* Flags: the first DATA packet sent once a flow's unsent data fits in one round trip at its rate */
/* (routers count the departure by it). Size: a flow's size in DATA packets on SYN and ENDING; */
/* P4RCP_SIZE_UNKNOWN_PACKETS when unknown or that large. */
#define P4RCP_FLAG_ENDING 0x01
#define P4RCP_SIZE_UNKNOWN_PACKETS 65535

/* A valid RTT sample: 0 < rtt_us <= P4RCP_MAX_RTT_US = 2^P4RCP_RTT_BITS - 1. */
/* Rates are kb/s of Ethernet frames; no flow is given less than P4RCP_MIN_RATE_KBPS; */
/* a sender asks for P4RCP_DEFAULT_MAX_RATE_KBPS unless told otherwise (--max-rate). */
#define P4RCP_RTT_BITS 23
#define P4RCP_MAX_RTT_US 8388607
#define P4RCP_MIN_RATE_KBPS 10
#define P4RCP_DEFAULT_MAX_RATE_KBPS 1000000

/* The hosts' transport header behind the RCP header: offsets from the UDP payload's start, */
/* and each type's datagram length (an ACK's grows by a SACK block each, a DATA's by its payload). */
#define P4RCP_FLOW_ID_OFFSET 16
#define P4RCP_PKT_SEQ_OFFSET 20
#define P4RCP_TS_OFFSET 24
#define P4RCP_BODY_OFFSET 28
#define P4RCP_SYN_LEN 40
#define P4RCP_SYNACK_LEN 32
#define P4RCP_DATA_HEADER_LEN 36
#define P4RCP_ACK_LEN 44
#define P4RCP_SACK_LEN 16
#define P4RCP_MAX_SACKS 4
#define P4RCP_FIN_LEN 36
#define P4RCP_FINACK_LEN 40
#define P4RCP_REF_LEN 28
#define P4RCP_SIZE_UNKNOWN 0xFFFFFFFFFFFFFFFFull
#define P4RCP_STATUS_VERIFIED 0x01
#define P4RCP_FRAME_OVERHEAD 42

/* The XCP congestion header (docs/xcp.md): P4RCP_XCP_HEADER_LEN bytes between the RCP header and the */
/* hosts' header when the RCP header's flags hold P4RCP_FLAG_XCP (the host offsets below then move */
/* by that much). Offsets from the UDP payload's start: H_cwnd (u32, frame bytes), x = rtt s / cwnd */
/* (u32, ns), H_feedback (i32, bytes); H_rtt is the RCP header's rtt_us. */
#define P4RCP_FLAG_XCP 0x80
#define P4RCP_XCP_HEADER_LEN 12
#define P4RCP_XCP_CWND_OFFSET 16
#define P4RCP_XCP_X_OFFSET 20
#define P4RCP_XCP_FEEDBACK_OFFSET 24

/* Scheme codes of the SYN: the macro names the scheme (VIVACE_LOSS_P4RCP: vivace-loss-p4rcp). */
#define P4RCP_SCHEME_OTHER 0
#define P4RCP_SCHEME_RCP 1
#define P4RCP_SCHEME_ALLEGRO 2
#define P4RCP_SCHEME_VIVACE 3
#define P4RCP_SCHEME_VIVACE_LOSS 4
#define P4RCP_SCHEME_VIVACE_LATENCY 5
#define P4RCP_SCHEME_FIXED 6
#define P4RCP_SCHEME_ALLEGRO_REF 7
#define P4RCP_SCHEME_VIVACE_STOP 8
#define P4RCP_SCHEME_VIVACE_LOSS_P4RCP 9
#define P4RCP_SCHEME_XCP 10

#endif

/* The p4rcp hosts' transport as a C library: libp4rcp_host.a, built by `cargo build --release` in hosts/
 * (hosts/src/ffi/). The same state machine as the hosts' event loops, driven by the caller's clock and
 * datagrams: create a sender (one flow, with its controller) or a receiver (every flow to one address),
 * hand it a datagram or a timer with the time `now` (seconds) and an outbox, send the datagrams it leaves
 * there, call it again at its next wake, and read its records, which are the JSON lines the hosts write.
 *
 * Every function that can fail returns P4RCP_OK or an error code, and p4rcp_last_error() says why. A handle
 * on which the library failed (P4RCP_ERR_INTERNAL) is unusable; free it. Handles are not thread-safe.
 * Strings the library returns stay valid until the next call on the same handle (the p4rcp_tcp_* functions:
 * the next p4rcp_tcp_* call on the same thread), datagrams until their outbox is handed to a call again. */
#ifndef P4RCP_HOST_H
#define P4RCP_HOST_H

#include "p4rcp_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum
{
    P4RCP_OK = 0,
    P4RCP_ERR_ARGUMENT = 1,  /* an invalid argument: nothing changed */
    P4RCP_ERR_MALFORMED = 2, /* not a well-formed p4rcp datagram: dropped */
    P4RCP_ERR_INTERNAL = 3,  /* the library failed: the handle is unusable */
};

/* The message of the last failing call on this thread. */
const char* p4rcp_last_error(void);

/* An IPv4 address and a UDP port, in host byte order. */
typedef struct
{
    uint32_t ip;
    uint16_t port;
} p4rcp_addr;

/* Bytes the library owns (not NUL-terminated). */
typedef struct
{
    const char* ptr;
    size_t len;
} p4rcp_str;

typedef struct
{
    const uint8_t* data;
    size_t len;
    p4rcp_addr dst;
} p4rcp_datagram;

/* Where a call leaves the datagrams to send, in order (emptied by every call it is handed to). One outbox
 * serves any number of senders and receivers: its buffer is reused. */
typedef struct p4rcp_outbox p4rcp_outbox;
p4rcp_outbox* p4rcp_outbox_new(void);
void p4rcp_outbox_free(p4rcp_outbox* outbox);
size_t p4rcp_outbox_len(const p4rcp_outbox* outbox);
p4rcp_datagram p4rcp_outbox_get(const p4rcp_outbox* outbox, size_t i);

/* ---- sender: one flow (p4rcp-host send's arguments, hosts/README.md) ---- */

typedef struct
{
    uint32_t flow_id;
    int64_t index;          /* position in a traffic generator's workload; negative: none */
    const char* scheme;     /* as --cc: rcp, allegro, vivace-loss, fixed:10mbit, ... (not tcp) */
    uint64_t size;          /* application bytes, or P4RCP_SIZE_UNKNOWN: new data for duration_s */
    double duration_s;
    uint32_t mss;
    double max_rate_kbps;
    double min_rate_kbps;
    double timeout_s;       /* gives up this long after the SYN */
    bool trace;             /* trace lines: rate changes, monitor intervals, samples */
    double sample_interval_s; /* period of the samples (0: none) */
    uint8_t dscp;
    uint64_t seed;          /* the controller's randomness; see p4rcp_traffic_flow_seed */
    p4rcp_addr dst;
} p4rcp_flow_params;

typedef struct p4rcp_sender p4rcp_sender;

/* A flow that sends its SYN at its first p4rcp_sender_on_timer; its record's times are epoch_unix + now. */
int p4rcp_sender_new(const p4rcp_flow_params* params, double now, double epoch_unix, p4rcp_sender** out);
void p4rcp_sender_free(p4rcp_sender* sender);
int p4rcp_sender_on_timer(p4rcp_sender* sender, double now, p4rcp_outbox* out);
/* A datagram of this flow (p4rcp_datagram_flow_id) arrived. */
int p4rcp_sender_on_datagram(p4rcp_sender* sender,
                             double now,
                             const uint8_t* data,
                             size_t len,
                             p4rcp_outbox* out);
/* The run is over: the flow ends now. */
int p4rcp_sender_interrupt(p4rcp_sender* sender);
/* When p4rcp_sender_on_timer is next due; infinity: never. */
double p4rcp_sender_next_wake(const p4rcp_sender* sender);
bool p4rcp_sender_is_done(const p4rcp_sender* sender);
/* The flow's record: one JSON object. */
int p4rcp_sender_record(p4rcp_sender* sender, p4rcp_str* json);
/* The trace lines since the last call: JSON lines, each ending in a newline. */
int p4rcp_sender_take_trace(p4rcp_sender* sender, p4rcp_str* lines);

/* ---- receiver: every flow sent to one address ---- */

typedef struct p4rcp_receiver p4rcp_receiver;

/* Forgets flows idle for idle_timeout_s, buffers window bytes beyond a flow's cumulative ack. */
int p4rcp_receiver_new(double idle_timeout_s, uint32_t window, double epoch_unix, p4rcp_receiver** out);
void p4rcp_receiver_free(p4rcp_receiver* receiver);
int p4rcp_receiver_on_datagram(p4rcp_receiver* receiver,
                               double now,
                               const uint8_t* data,
                               size_t len,
                               p4rcp_addr from,
                               p4rcp_outbox* out);
int p4rcp_receiver_on_timer(p4rcp_receiver* receiver, double now);
double p4rcp_receiver_next_wake(const p4rcp_receiver* receiver);
/* The run is over: every open flow is recorded as incomplete. */
int p4rcp_receiver_close_all(p4rcp_receiver* receiver, double now);
/* The records of the flows that ended since the last call: JSON lines. */
int p4rcp_receiver_take_records(p4rcp_receiver* receiver, p4rcp_str* lines);

/* ---- the rest ---- */

/* The flow id of a p4rcp datagram, from its headers (P4RCP_ERR_MALFORMED if they are not a p4rcp datagram's). */
int p4rcp_datagram_flow_id(const uint8_t* data, size_t len, uint32_t* flow_id);
/* The controller seed of flow `index` of `p4rcp-host traffic --seed seed` (a long flow's: its flow id). */
uint64_t p4rcp_traffic_flow_seed(uint64_t seed, uint64_t index);

/* Records of TCP flows that another TCP carried (ns-3's), as the hosts record theirs. */
typedef struct
{
    uint32_t flow_id;
    int64_t index;           /* negative: none */
    const char* scheme;      /* tcp, tcp:reno, ... */
    p4rcp_addr dst;
    uint8_t dscp;
    double start_unix_s;     /* just before connect() */
    uint64_t size_bytes;
    bool confirmed;          /* the receiver's confirmation was read: */
    double fct_s;            /*   this long after the start, */
    uint64_t confirmed_bytes; /*  confirming this many bytes */
    const char* error;       /* null or empty: none */
    uint64_t retransmissions;
    uint64_t segments;
    double srtt_s;           /* not > 0: never measured */
    double min_rtt_s;
} p4rcp_tcp_flow;

typedef struct
{
    uint32_t flow_id;
    p4rcp_addr peer;
    uint64_t size;           /* announced, or P4RCP_SIZE_UNKNOWN */
    uint64_t bytes_delivered;
    bool completed;
    double start_unix_s;
    double duration_s;
    double last_byte_unix_s; /* negative: never */
} p4rcp_tcp_recv;

int p4rcp_tcp_flow_record(const p4rcp_tcp_flow* flow, p4rcp_str* json);
int p4rcp_tcp_recv_record(const p4rcp_tcp_recv* flow, p4rcp_str* json);
int p4rcp_tcp_sample_line(uint32_t flow_id,
                          double t_s,
                          double cwnd_kbps,
                          double srtt_s,
                          double goodput_kbps,
                          p4rcp_str* json);

#ifdef __cplusplus
}
#endif

#endif

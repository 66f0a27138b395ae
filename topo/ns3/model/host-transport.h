// The hosts' transport library (hosts/include/p4rcp_host.h, libp4rcp_host.a) from C++: owning handles,
// and a check that stops the simulation with the library's message when a call fails (a failure is a bad
// plan or a bug, not something to simulate).
#ifndef P4RCP_HOST_TRANSPORT_H
#define P4RCP_HOST_TRANSPORT_H

#include "p4rcp_host.h"

#include "ns3/abort.h"
#include "ns3/inet-socket-address.h"
#include "ns3/ipv4-address.h"
#include "ns3/packet.h"
#include "ns3/socket.h"

#include <memory>
#include <string>

namespace p4rcp
{

inline void
Require(int code, const char* what)
{
    NS_ABORT_MSG_IF(code != P4RCP_OK, what << ": " << p4rcp_last_error());
}

struct SenderFree
{
    void operator()(p4rcp_sender* s) const { p4rcp_sender_free(s); }
};

struct ReceiverFree
{
    void operator()(p4rcp_receiver* r) const { p4rcp_receiver_free(r); }
};

struct OutboxFree
{
    void operator()(p4rcp_outbox* o) const { p4rcp_outbox_free(o); }
};

using SenderHandle = std::unique_ptr<p4rcp_sender, SenderFree>;
using ReceiverHandle = std::unique_ptr<p4rcp_receiver, ReceiverFree>;
using OutboxHandle = std::unique_ptr<p4rcp_outbox, OutboxFree>;

// The largest UDP payload: what a datagram from a socket may hold.
constexpr size_t MAX_DATAGRAM = 65507;

inline p4rcp_addr
ToAddr(ns3::Ipv4Address ip, uint16_t port)
{
    return p4rcp_addr{ip.Get(), port};
}

inline std::string
ToString(p4rcp_str s)
{
    return std::string(s.ptr, s.len);
}

// Sends every datagram of `outbox` from `socket`, in IP packets of DSCP `dscp`.
inline void
SendAll(const p4rcp_outbox* outbox, ns3::Ptr<ns3::Socket> socket, uint8_t dscp = 0)
{
    size_t n = p4rcp_outbox_len(outbox);
    for (size_t i = 0; i < n; ++i)
    {
        p4rcp_datagram d = p4rcp_outbox_get(outbox, i);
        auto packet = ns3::Create<ns3::Packet>(d.data, static_cast<uint32_t>(d.len));
        if (dscp != 0)
        {
            ns3::SocketIpTosTag tos;
            tos.SetTos(dscp << 2);
            packet->AddPacketTag(tos);
        }
        socket->SendTo(packet, 0, ns3::InetSocketAddress(ns3::Ipv4Address(d.dst.ip), d.dst.port));
    }
}

} // namespace p4rcp

#endif

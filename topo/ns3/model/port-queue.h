// What both routers' port queue discs (RcpQueueDisc, XcpQueueDisc) do alike: their configuration, one
// drop-tail FIFO, and telling a forward RCP packet from the others by its first bytes.
#ifndef P4RCP_PORT_QUEUE_H
#define P4RCP_PORT_QUEUE_H

#include "rcp-header.h"

#include "ns3/drop-tail-queue.h"
#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/object-factory.h"
#include "ns3/queue-disc.h"

#include <cstddef>
#include <cstdint>

namespace p4rcp
{

constexpr uint32_t UDP_HEADER = 8;

// A disc's CheckConfig when it is one drop-tail FIFO of its MaxSize: no classes, no filters, and the internal
// queue, added here unless one was given.
inline bool
CheckSingleFifo(ns3::QueueDisc& disc)
{
    if (disc.GetNQueueDiscClasses() > 0 || disc.GetNPacketFilters() > 0)
    {
        return false;
    }
    if (disc.GetNInternalQueues() == 0)
    {
        disc.AddInternalQueue(ns3::CreateObjectWithAttributes<ns3::DropTailQueue<ns3::QueueDiscItem>>(
            "MaxSize",
            ns3::QueueSizeValue(disc.GetMaxSize())));
    }
    return disc.GetNInternalQueues() == 1;
}

// Copies the first N bytes of a queued packet (its UDP header, the RCP header at b + UDP_HEADER and what
// follows) into b when it is a forward RCP packet: an unfragmented UDP datagram of N bytes or more to or from
// the RCP port whose RCP header has p4rcp's version and a forward type. False for any other packet, which the
// disc forwards untouched.
template <std::size_t N>
bool
CopyForwardRcp(ns3::Ptr<ns3::QueueDiscItem> item, uint8_t (&b)[N])
{
    static_assert(N >= UDP_HEADER + P4RCP_HEADER_LEN, "the UDP and RCP headers at least");
    auto ip = ns3::DynamicCast<ns3::Ipv4QueueDiscItem>(item);
    if (!ip)
    {
        return false;
    }
    const ns3::Ipv4Header& h = ip->GetHeader();
    if (h.GetProtocol() != 17 || !h.IsLastFragment() || h.GetFragmentOffset() != 0)
    {
        return false;
    }
    ns3::Ptr<ns3::Packet> p = item->GetPacket();
    if (p->GetSize() < N || p->CopyData(b, N) != N)
    {
        return false;
    }
    uint16_t src = (b[0] << 8) | b[1];
    uint16_t dst = (b[2] << 8) | b[3];
    uint16_t udpLength = (b[4] << 8) | b[5];
    const uint8_t* rcp = b + UDP_HEADER;
    return (src == P4RCP_UDP_PORT || dst == P4RCP_UDP_PORT) && udpLength >= N && (rcp[0] >> 4) == P4RCP_VERSION &&
           IsForward(rcp[0] & 0x0f);
}

} // namespace p4rcp

#endif

#include "rcp-queue-disc.h"

#include "port-queue.h"
#include "rcp-header.h"

#include "ns3/enum.h"
#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/tcp-l4-protocol.h"
#include "ns3/udp-header.h"

#include <algorithm>

namespace p4rcp
{

using namespace ns3;

NS_OBJECT_ENSURE_REGISTERED(RcpQueueDisc);

TypeId
RcpQueueDisc::GetTypeId()
{
    static TypeId tid =
        TypeId("p4rcp::RcpQueueDisc")
            .SetParent<QueueDisc>()
            .SetGroupName("p4rcp")
            .AddConstructor<RcpQueueDisc>()
            .AddAttribute("MaxSize",
                          "Drop-tail limit of the port's queue",
                          QueueSizeValue(QueueSize("64p")),
                          MakeQueueSizeAccessor(&QueueDisc::SetMaxSize, &QueueDisc::GetMaxSize),
                          MakeQueueSizeChecker())
            .AddAttribute("RttSamples",
                          "Where RTT samples are taken: departure (p4rcp's egress) or arrival (ns-2's rcp.cc)",
                          EnumValue(RTT_AT_DEPARTURE),
                          MakeEnumAccessor<RttSamples>(&RcpQueueDisc::m_rttSamples),
                          MakeEnumChecker(RTT_AT_DEPARTURE, "departure", RTT_AT_ARRIVAL, "arrival"))
            .AddAttribute("QueueSample",
                          "The queue the control plane reads: the queue the last departure left behind "
                          "(p4rcp's deq_qdepth), its enqueue depth (an older p4rcp's enq_qdepth) "
                          "or the queue at the read (ns-2's rcp.cc)",
                          EnumValue(DEPTH_BEHIND_LAST_DEPARTURE),
                          MakeEnumAccessor<QueueSample>(&RcpQueueDisc::m_queueSample),
                          MakeEnumChecker(DEPTH_BEHIND_LAST_DEPARTURE,
                                          "departure-depth",
                                          ENQUEUE_DEPTH_OF_LAST_DEPARTURE,
                                          "enqueue-depth",
                                          AT_READ,
                                          "at-read"))
            .AddTraceSource("Stamp",
                            "A forward RCP packet departs: its rate_kbps before and after, and R",
                            MakeTraceSourceAccessor(&RcpQueueDisc::m_stampTrace),
                            "p4rcp::RcpQueueDisc::StampTracedCallback");
    return tid;
}

RcpQueueDisc::RcpQueueDisc()
    : QueueDisc(QueueDiscSizePolicy::SINGLE_INTERNAL_QUEUE, QueueSizeUnit::PACKETS),
      m_rttSamples(RTT_AT_DEPARTURE),
      m_queueSample(DEPTH_BEHIND_LAST_DEPARTURE),
      m_uniform(CreateObject<UniformRandomVariable>())
{
}

uint32_t
RcpQueueDisc::QueueDepthPackets() const
{
    switch (m_queueSample)
    {
    case AT_READ:
        return GetNPackets();
    case ENQUEUE_DEPTH_OF_LAST_DEPARTURE:
        return m_lastEnqueueDepth;
    default:
        return m_lastDepartureDepth;
    }
}

void
RcpQueueDisc::SetClassicDrop(double p)
{
    NS_ABORT_MSG_IF(!(p >= 0 && p <= 1), "a drop probability is in [0, 1], got " << p);
    m_classicDrop = p;
}

bool
RcpQueueDisc::ReadForward(Ptr<QueueDiscItem> item, Forward& f)
{
    uint8_t b[UDP_HEADER + P4RCP_HEADER_LEN];
    if (!CopyForwardRcp(item, b))
    {
        return false;
    }
    const uint8_t* rcp = b + UDP_HEADER;
    auto u32 = [rcp](int at) {
        return (uint32_t(rcp[at]) << 24) | (uint32_t(rcp[at + 1]) << 16) | (uint32_t(rcp[at + 2]) << 8) | rcp[at + 3];
    };
    f.type = rcp[0] & 0x0f;
    f.flags = rcp[P4RCP_FLAGS_OFFSET];
    f.rateKbps = u32(P4RCP_RATE_OFFSET);
    f.rttUs = u32(P4RCP_RTT_OFFSET);
    f.size = (uint16_t(rcp[P4RCP_SIZE_OFFSET]) << 8) | rcp[P4RCP_SIZE_OFFSET + 1];
    return true;
}

void
RcpQueueDisc::SetSynRateKbps(uint32_t k, uint32_t rateKbps)
{
    NS_ABORT_MSG_IF(k < 1 || k > SYN_RATES, "SYN rank " << k << " outside 1.." << SYN_RATES);
    m_synRatesKbps[k - 1] = rateKbps;
}

uint32_t
RcpQueueDisc::StampFor(const Forward& f)
{
    if (f.type == P4RCP_TYPE_SYN)
    {
        m_committedArrivals += std::min<uint32_t>(f.size, m_grantPackets);
        if (f.size > m_longPackets)
        {
            m_longArrivals += 1;                                                    // 32 bits, wraps
            uint32_t k = std::clamp(m_longArrivals - m_arrivalsBase, 1u, SYN_RATES); // 1 for the first
            return std::min(m_rateKbps, m_synRatesKbps[k - 1]);
        }
        return std::min(m_rateKbps, m_shortRateKbps);
    }
    if (f.type == P4RCP_TYPE_DATA && (f.flags & P4RCP_FLAG_ENDING))
    {
        m_committedDepartures += std::min<uint32_t>(f.size, m_grantPackets);
    }
    return m_rateKbps;
}

void
RcpQueueDisc::SampleRtt(uint32_t rttUs)
{
    if (rttUs != 0 && rttUs <= P4RCP_MAX_RTT_US) // comparison 1
    {
        m_rttSumUs += rttUs; // addition 2
        m_rttCount += 1;     // addition 3
    }
}

bool
RcpQueueDisc::DoEnqueue(Ptr<QueueDiscItem> item)
{
    // The classic drop, before the count, as classic.p4 drops before rcp_input counts.
    if (m_classicDrop > 0)
    {
        auto ip = DynamicCast<Ipv4QueueDiscItem>(item);
        if (ip && ip->GetHeader().GetProtocol() == TcpL4Protocol::PROT_NUMBER && m_uniform->GetValue() < m_classicDrop)
        {
            m_classicDrops += 1;
            DropBeforeEnqueue(item, "classic drop");
            return false;
        }
    }
    // Addition 1: what arrives for the port, counted before the queue may drop it, in Ethernet frame bytes
    // (the unit of C and of the hosts' rates).
    m_inputBytes += item->GetSize() + ETHERNET_HEADER;
    m_inputPackets += 1;
    Forward f;
    if (m_rttSamples == RTT_AT_ARRIVAL && ReadForward(item, f))
    {
        SampleRtt(f.rttUs);
    }
    uint32_t depth = GetInternalQueue(0)->GetNPackets();
    if (GetCurrentSize() + item > GetMaxSize())
    {
        m_drops += 1;
        DropBeforeEnqueue(item, "RCP port queue full");
        return false;
    }
    bool queued = GetInternalQueue(0)->Enqueue(item);
    if (queued)
    {
        m_enqueueDepths.push_back(depth);
    }
    return queued;
}

Ptr<QueueDiscItem>
RcpQueueDisc::DoDequeue()
{
    Ptr<QueueDiscItem> item = GetInternalQueue(0)->Dequeue();
    if (!item)
    {
        return item;
    }
    m_lastEnqueueDepth = m_enqueueDepths.front();
    m_enqueueDepths.pop_front();
    m_lastDepartureDepth = GetInternalQueue(0)->GetNPackets();
    Forward f;
    if (!ReadForward(item, f))
    {
        return item;
    }
    if (m_rttSamples == RTT_AT_DEPARTURE)
    {
        SampleRtt(f.rttUs);
    }
    uint32_t stamp = StampFor(f);
    uint32_t after = f.rateKbps;
    if (m_rateKbps != 0 && f.rateKbps > stamp) // comparison 2
    {
        after = stamp;
        Ptr<Packet> p = item->GetPacket();
        UdpHeader udp;
        RcpHeader rcp;
        p->RemoveHeader(udp);
        p->RemoveHeader(rcp);
        rcp.rateKbps = after;
        p->AddHeader(rcp);
        p->AddHeader(udp);
        m_stamped += 1;
    }
    m_stampTrace(f.rateKbps, after, m_rateKbps);
    return item;
}

bool
RcpQueueDisc::CheckConfig()
{
    return CheckSingleFifo(*this);
}

void
RcpQueueDisc::InitializeParams()
{
}

} // namespace p4rcp

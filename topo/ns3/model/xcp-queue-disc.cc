#include "xcp-queue-disc.h"

#include "port-queue.h"
#include "rcp-header.h"

#include "ns3/udp-header.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace p4rcp
{

using namespace ns3;

NS_OBJECT_ENSURE_REGISTERED(XcpQueueDisc);

namespace
{

// The congestion header behind the RCP header (hosts/src/transport/xcp_header.rs; p4rcp_wire.h's XCP_*).
class XcpCongestionHeader : public Header
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("p4rcp::XcpCongestionHeader").SetParent<Header>().SetGroupName("p4rcp");
        return tid;
    }
    TypeId GetInstanceTypeId() const override { return GetTypeId(); }
    uint32_t GetSerializedSize() const override { return P4RCP_XCP_HEADER_LEN; }
    void Serialize(Buffer::Iterator i) const override
    {
        i.WriteHtonU32(cwndBytes);
        i.WriteHtonU32(xNs);
        i.WriteHtonU32(static_cast<uint32_t>(feedback));
    }
    uint32_t Deserialize(Buffer::Iterator i) override
    {
        cwndBytes = i.ReadNtohU32();
        xNs = i.ReadNtohU32();
        feedback = static_cast<int32_t>(i.ReadNtohU32());
        return P4RCP_XCP_HEADER_LEN;
    }
    void Print(std::ostream& os) const override
    {
        os << "XCP cwnd " << cwndBytes << " x " << xNs << " ns feedback " << feedback;
    }

    uint32_t cwndBytes = 0;
    uint32_t xNs = 0;
    int32_t feedback = 0;
};

// Whether a queued packet is a forward packet of an XCP flow (a forward RCP packet with FLAG_XCP and the
// congestion header behind), from its first bytes alone.
bool
IsForwardXcp(Ptr<QueueDiscItem> item)
{
    uint8_t b[UDP_HEADER + P4RCP_HEADER_LEN + P4RCP_XCP_HEADER_LEN];
    return CopyForwardRcp(item, b) && (b[UDP_HEADER + P4RCP_FLAGS_OFFSET] & P4RCP_FLAG_XCP);
}

} // namespace

TypeId
XcpQueueDisc::GetTypeId()
{
    static TypeId tid = TypeId("p4rcp::XcpQueueDisc")
                            .SetParent<QueueDisc>()
                            .SetGroupName("p4rcp")
                            .AddConstructor<XcpQueueDisc>()
                            .AddAttribute("MaxSize",
                                          "Drop-tail limit of the port's queue",
                                          QueueSizeValue(QueueSize("64p")),
                                          MakeQueueSizeAccessor(&QueueDisc::SetMaxSize, &QueueDisc::GetMaxSize),
                                          MakeQueueSizeChecker());
    return tid;
}

XcpQueueDisc::XcpQueueDisc()
    : QueueDisc(QueueDiscSizePolicy::SINGLE_INTERNAL_QUEUE, QueueSizeUnit::PACKETS)
{
}

uint64_t
XcpQueueDisc::QueueBytes() const
{
    return GetNInternalQueues() ? GetInternalQueue(0)->GetNBytes() : 0;
}

uint64_t
XcpQueueDisc::TakeMinQueueBytes()
{
    uint64_t q = m_minQueueBytes;
    // Before the simulation starts the disc has no queue yet (CheckConfig adds it): nothing queued.
    m_minQueueBytes = QueueBytes();
    return q;
}

void
XcpQueueDisc::SetCoefficients(double xiP, double xiN, double positiveTotal, double negativeTotal)
{
    NS_ABORT_MSG_IF(!(xiP >= 0) || !(xiN >= 0) || !(positiveTotal >= 0) || !(negativeTotal >= 0),
                    "XCP coefficients and totals are >= 0 (xi_p " << xiP << ", xi_n " << xiN << ", totals "
                                                                  << positiveTotal << ", " << negativeTotal << ")");
    m_xiP = xiP;
    m_xiN = xiN;
    m_positiveLeft = positiveTotal;
    m_negativeLeft = negativeTotal;
}

bool
XcpQueueDisc::DoEnqueue(Ptr<QueueDiscItem> item)
{
    m_inputBytes += item->GetSize() + ETHERNET_HEADER; // y, in Ethernet frame bytes, before any drop
    if (GetCurrentSize() + item > GetMaxSize())
    {
        m_drops += 1;
        DropBeforeEnqueue(item, "XCP port queue full");
        return false;
    }
    return GetInternalQueue(0)->Enqueue(item);
}

Ptr<QueueDiscItem>
XcpQueueDisc::DoDequeue()
{
    Ptr<QueueDiscItem> item = GetInternalQueue(0)->Dequeue();
    if (!item)
    {
        return item;
    }
    m_minQueueBytes = std::min<uint64_t>(m_minQueueBytes, GetInternalQueue(0)->GetNBytes());
    if (!IsForwardXcp(item))
    {
        return item;
    }
    double s = item->GetSize() + ETHERNET_HEADER; // the frame, as the sender counted it
    Ptr<Packet> p = item->GetPacket();
    UdpHeader udp;
    RcpHeader rcp;
    XcpCongestionHeader xcp;
    p->RemoveHeader(udp);
    p->RemoveHeader(rcp);
    p->RemoveHeader(xcp);
    bool validRtt = rcp.rttUs != 0 && rcp.rttUs <= P4RCP_MAX_RTT_US;
    if (validRtt && xcp.xNs > 0)
    {
        double rtt = rcp.rttUs * 1e-6;
        double x = xcp.xNs * 1e-9;
        m_sumX += x;
        m_sumRttX += rtt * x;
        m_sumS += static_cast<uint64_t>(s);
        m_xcpPackets += 1;
        // p_i and n_i, each at most what is left of the interval's totals (p4rcp/xcp_law.py, xcp_packet_feedback)
        double positive = std::min(m_xiP * rtt * x, m_positiveLeft);
        double negative = std::min(m_xiN * rtt * s, m_negativeLeft);
        double feedback = positive - negative;
        // what the packet takes from what is left: its own feedback, or, when another router gave less, what
        // it gets (xcp_law.py, xcp_charged_feedback)
        double chargedP = positive;
        double chargedN = negative;
        if (xcp.feedback < feedback)
        {
            chargedN = std::min(m_negativeLeft, positive - xcp.feedback);
            chargedP = std::max(xcp.feedback + chargedN, 0.0);
        }
        m_positiveLeft -= chargedP;
        m_negativeLeft -= chargedN;
        double lowest = static_cast<double>(std::numeric_limits<int32_t>::min());
        if (feedback < xcp.feedback)
        {
            xcp.feedback = static_cast<int32_t>(std::max(std::floor(feedback), lowest));
            m_lowered += 1;
        }
    }
    p->AddHeader(xcp);
    p->AddHeader(rcp);
    p->AddHeader(udp);
    return item;
}

bool
XcpQueueDisc::CheckConfig()
{
    return CheckSingleFifo(*this);
}

void
XcpQueueDisc::InitializeParams()
{
}

} // namespace p4rcp

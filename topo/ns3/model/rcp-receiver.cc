#include "rcp-receiver.h"

#include "ns3/double.h"
#include "ns3/simulator.h"
#include "ns3/udp-socket-factory.h"
#include "ns3/uinteger.h"

#include <sstream>

namespace p4rcp
{

using namespace ns3;

namespace
{
constexpr double TOMBSTONE_S = 30.0; // closed flows answer late FINs (and SYNs) this long
constexpr double GC_PERIOD_S = 1.0;
constexpr uint8_t STATUS_COMPLETE = 1; // FINACK status bit 0: every byte delivered (the content is not simulated)

const char*
SchemeName(uint8_t cc)
{
    static const char* names[] = {"other", "rcp", "allegro", "vivace", "vivace-loss", "vivace-latency",
                                  "fixed", "allegro-ref", "vivace-stop"};
    return cc < sizeof(names) / sizeof(names[0]) ? names[cc] : "other";
}
} // namespace

NS_OBJECT_ENSURE_REGISTERED(RcpReceiver);

TypeId
RcpReceiver::GetTypeId()
{
    static TypeId tid = TypeId("p4rcp::RcpReceiver")
                            .SetParent<Application>()
                            .SetGroupName("p4rcp")
                            .AddConstructor<RcpReceiver>()
                            .AddAttribute("Window",
                                          "Bytes beyond the cumulative ack the receiver buffers (the hosts': 16 MiB)",
                                          UintegerValue(16u << 20),
                                          MakeUintegerAccessor(&RcpReceiver::m_window),
                                          MakeUintegerChecker<uint32_t>(1))
                            .AddAttribute("IdleTimeout",
                                          "A flow without packets this long is recorded as incomplete (s)",
                                          DoubleValue(60.0),
                                          MakeDoubleAccessor(&RcpReceiver::m_idleTimeout),
                                          MakeDoubleChecker<double>(0));
    return tid;
}

RcpReceiver::RcpReceiver()
    : m_window(16u << 20),
      m_idleTimeout(60.0)
{
}

void
RcpReceiver::StartApplication()
{
    m_socket = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
    m_socket->Bind(InetSocketAddress(Ipv4Address::GetAny(), RCP_UDP_PORT));
    m_socket->SetRecvCallback(MakeCallback(&RcpReceiver::Receive, this));
    m_gc = Simulator::Schedule(Seconds(GC_PERIOD_S), &RcpReceiver::CollectGarbage, this);
}

void
RcpReceiver::StopApplication()
{
    m_gc.Cancel();
    if (m_socket)
    {
        m_socket->Close();
    }
}

void
RcpReceiver::DoDispose()
{
    m_socket = nullptr;
    Application::DoDispose();
}

void
RcpReceiver::Reply(const Address& peer, uint32_t feedbackKbps, const RcpTransportHeader& h)
{
    RcpHeader rcp;
    rcp.type = h.type;
    rcp.feedbackKbps = feedbackKbps; // the rate_kbps of the packet acknowledged, as it arrived
    Ptr<Packet> p = Create<Packet>();
    p->AddHeader(h);
    p->AddHeader(rcp);
    m_socket->SendTo(p, 0, peer); // a lost ACK is like a lost packet
}

// Accepts DATA [offset, offset + len); false if nothing was new.
bool
RcpReceiver::OnData(Flow& f, uint64_t offset, uint64_t len)
{
    uint64_t end = offset + len;
    if (end <= f.cum)
    {
        return false;
    }
    if (offset <= f.cum && f.have.Empty())
    {
        f.cum = end; // in order
        return true;
    }
    uint64_t from = std::max(offset, f.cum);
    uint64_t to = std::min<uint64_t>(end, f.cum + m_window);
    bool fresh = from < to && !f.have.Missing(from, to).empty();
    f.have.Insert(from, to);
    f.cum = f.have.RunEnd(f.cum);
    f.have.TrimBelow(f.cum);
    return fresh;
}

// SACK blocks: first the one holding the latest packet (RFC 2018), then the lowest others.
RcpTransportHeader
RcpReceiver::Ack(const Flow& f, const RcpTransportHeader& echo, uint64_t latest) const
{
    RcpTransportHeader h(ACK);
    h.flowId = echo.flowId;
    h.pktSeq = echo.pktSeq;
    h.tsUs = echo.tsUs;
    h.cumAck = f.cum;
    h.window = m_window;
    auto first = f.have.RangeOf(latest);
    if (first)
    {
        h.sacks[h.nSacks++] = *first;
    }
    for (auto [s, e] : f.have.Ranges())
    {
        if (h.nSacks >= MAX_SACKS)
        {
            break;
        }
        if (!first || first->first != s)
        {
            h.sacks[h.nSacks++] = {s, e};
        }
    }
    return h;
}

void
RcpReceiver::Receive(Ptr<Socket> socket)
{
    Address from;
    Ptr<Packet> p;
    while ((p = socket->RecvFrom(from)))
    {
        double now = Simulator::Now().GetSeconds();
        RcpHeader rcp;
        if (p->GetSize() < RCP_HEADER_LEN)
        {
            m_unexpected += 1;
            continue;
        }
        p->RemoveHeader(rcp);
        RcpTransportHeader h(rcp.type);
        if (rcp.version != RCP_VERSION || p->GetSize() < h.GetSerializedSize())
        {
            m_unexpected += 1;
            continue;
        }
        p->RemoveHeader(h);
        InetSocketAddress peer = InetSocketAddress::ConvertFrom(from);
        Key key{peer.GetIpv4().Get(), peer.GetPort(), h.flowId};
        uint32_t stamped = rcp.rateKbps;
        auto closed = m_closed.find(key);
        switch (h.type)
        {
        case SYN: {
            if (closed != m_closed.end())
            {
                // a SYN that wandered in after the close: say it is over
                RcpTransportHeader fa(FINACK);
                fa.flowId = h.flowId;
                fa.pktSeq = h.pktSeq;
                fa.tsUs = h.tsUs;
                fa.cumAck = closed->second.cum;
                fa.status = closed->second.status;
                Reply(from, stamped, fa);
                break;
            }
            if (!m_flows.count(key))
            {
                std::ostringstream name;
                peer.GetIpv4().Print(name);
                name << ":" << peer.GetPort();
                Flow f;
                f.flowId = h.flowId;
                f.peer = name.str();
                f.size = h.totalSize == SIZE_UNKNOWN ? -1 : static_cast<int64_t>(h.totalSize);
                f.cc = h.cc;
                f.created = now;
                f.lastActive = now;
                m_flows.emplace(key, std::move(f));
            }
            RcpTransportHeader sa(SYNACK);
            sa.flowId = h.flowId;
            sa.pktSeq = h.pktSeq;
            sa.tsUs = h.tsUs;
            sa.window = m_window;
            Reply(from, stamped, sa);
            break;
        }
        case DATA: {
            auto it = m_flows.find(key);
            if (it == m_flows.end())
            {
                m_unexpected += closed == m_closed.end();
                break;
            }
            Flow& f = it->second;
            f.lastActive = now;
            f.dataPackets += 1;
            uint64_t before = f.cum;
            if (!OnData(f, h.offset, p->GetSize()))
            {
                f.duplicatePackets += 1;
            }
            if (f.cum > before)
            {
                f.cumAdvanced = now; // the flow's last byte, once it is whole
            }
            Reply(from, stamped, Ack(f, h, h.offset));
            break;
        }
        case FIN: {
            RcpTransportHeader fa(FINACK);
            fa.flowId = h.flowId;
            fa.pktSeq = h.pktSeq;
            fa.tsUs = h.tsUs;
            if (closed != m_closed.end())
            {
                fa.cumAck = closed->second.cum;
                fa.status = closed->second.status;
                Reply(from, stamped, fa);
                break;
            }
            auto it = m_flows.find(key);
            if (it == m_flows.end())
            {
                m_unexpected += 1;
                break;
            }
            Flow& f = it->second;
            if (f.cum < h.finalSize)
            {
                Reply(from, stamped, Ack(f, h, f.cum)); // cannot happen with our sender: what we have
                break;
            }
            bool whole = f.cum == h.finalSize && (f.size < 0 || uint64_t(f.size) == h.finalSize);
            fa.cumAck = f.cum;
            fa.status = whole ? STATUS_COMPLETE : 0;
            f.size = h.finalSize; // an open-ended flow is whole now that the FIN gave its size
            m_records.push_back(Record(f, now, true));
            m_closed[key] = Closed{now, fa.status, f.cum};
            m_flows.erase(it);
            Reply(from, stamped, fa);
            break;
        }
        default:
            m_unexpected += 1; // ACK, SYNACK, FINACK are not for a receiver
            break;
        }
    }
}

RecvRecord
RcpReceiver::Record(const Flow& f, double now, bool completed) const
{
    RecvRecord r;
    r.flowId = f.flowId;
    r.peer = f.peer;
    r.scheme = SchemeName(f.cc);
    r.transport = "udp";
    r.sizeBytes = f.size;
    r.bytesDelivered = f.cum;
    r.completed = completed;
    r.dataPackets = f.dataPackets;
    r.duplicatePackets = f.duplicatePackets;
    r.start = f.created;
    r.duration = now - f.created;
    r.lastByte = (f.size >= 0 && uint64_t(f.size) == f.cum) ? f.cumAdvanced : -1;
    return r;
}

// Forgets idle flows (recording them as incomplete) and old tombstones.
void
RcpReceiver::CollectGarbage()
{
    double now = Simulator::Now().GetSeconds();
    for (auto it = m_flows.begin(); it != m_flows.end();)
    {
        if (now - it->second.lastActive > m_idleTimeout)
        {
            m_records.push_back(Record(it->second, now, false));
            it = m_flows.erase(it);
        }
        else
        {
            ++it;
        }
    }
    for (auto it = m_closed.begin(); it != m_closed.end();)
    {
        it = now - it->second.at >= TOMBSTONE_S ? m_closed.erase(it) : std::next(it);
    }
    m_gc = Simulator::Schedule(Seconds(GC_PERIOD_S), &RcpReceiver::CollectGarbage, this);
}

std::vector<RecvRecord>
RcpReceiver::Finish()
{
    double now = Simulator::Now().GetSeconds();
    for (auto& [key, f] : m_flows)
    {
        m_records.push_back(Record(f, now, false));
    }
    m_flows.clear();
    return std::move(m_records);
}

} // namespace p4rcp

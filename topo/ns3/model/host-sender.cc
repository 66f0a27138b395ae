#include "host-sender.h"

#include "ns3/double.h"
#include "ns3/simulator.h"
#include "ns3/udp-socket-factory.h"
#include "ns3/uinteger.h"

#include <cmath>

namespace p4rcp
{

using namespace ns3;

NS_OBJECT_ENSURE_REGISTERED(HostSender);

TypeId
HostSender::GetTypeId()
{
    static TypeId tid = TypeId("p4rcp::HostSender")
                            .SetParent<Application>()
                            .SetGroupName("p4rcp")
                            .AddConstructor<HostSender>()
                            .AddAttribute("Remote",
                                          "The receiver's address",
                                          Ipv4AddressValue(),
                                          MakeIpv4AddressAccessor(&HostSender::m_remote),
                                          MakeIpv4AddressChecker())
                            .AddAttribute("RemotePort",
                                          "The receiver's UDP port",
                                          UintegerValue(P4RCP_UDP_PORT),
                                          MakeUintegerAccessor(&HostSender::m_remotePort),
                                          MakeUintegerChecker<uint16_t>())
                            .AddAttribute("Epoch",
                                          "Unix time of simulated time 0: the records' times are it plus "
                                          "simulated seconds",
                                          DoubleValue(0),
                                          MakeDoubleAccessor(&HostSender::m_epoch),
                                          MakeDoubleChecker<double>());
    return tid;
}

HostSender::HostSender()
    : m_remotePort(P4RCP_UDP_PORT),
      m_epoch(0),
      m_outbox(p4rcp_outbox_new()),
      m_buffer(MAX_DATAGRAM)
{
}

void
HostSender::AddFlow(double start, const FlowParams& p)
{
    NS_ABORT_MSG_IF(m_flows.count(p.flowId), "flow id " << p.flowId << " given twice");
    Entry& e = m_flows[p.flowId];
    e.params = p;
    e.start = start;
}

void
HostSender::StartApplication()
{
    m_socket = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
    m_socket->Bind(); // an ephemeral port, as the hosts' senders
    m_socket->SetRecvCallback(MakeCallback(&HostSender::Receive, this));
    for (auto& [id, e] : m_flows)
    {
        Simulator::Schedule(Seconds(e.start), &HostSender::StartFlow, this, id);
    }
}

void
HostSender::StartFlow(uint32_t flowId)
{
    Entry& e = m_flows.at(flowId);
    const FlowParams& f = e.params;
    p4rcp_flow_params p{};
    p.flow_id = f.flowId;
    p.index = f.index;
    p.scheme = f.scheme.c_str();
    p.size = f.size;
    p.duration_s = f.duration;
    p.mss = f.mss;
    p.max_rate_kbps = f.maxRateKbps;
    p.min_rate_kbps = f.minRateKbps;
    p.timeout_s = f.timeout;
    p.trace = f.trace;
    p.sample_interval_s = f.sampleInterval;
    p.dscp = f.dscp;
    p.seed = f.seed;
    p.dst = ToAddr(m_remote, m_remotePort);
    p4rcp_sender* flow = nullptr;
    Require(p4rcp_sender_new(&p, Simulator::Now().GetSeconds(), m_epoch, &flow), "a flow of the hosts' transport");
    e.flow.reset(flow);
    Wake(flowId);
}

void
HostSender::StopApplication()
{
    if (m_socket)
    {
        m_socket->Close();
    }
}

void
HostSender::DoDispose()
{
    m_socket = nullptr;
    m_flows.clear();
    Application::DoDispose();
}

void
HostSender::Wake(uint32_t flowId)
{
    auto it = m_flows.find(flowId);
    if (it == m_flows.end())
    {
        return;
    }
    Entry& e = it->second;
    e.wakeAt = INFINITY;
    Require(p4rcp_sender_on_timer(e.flow.get(), Simulator::Now().GetSeconds(), m_outbox.get()), "a sender's timer");
    SendAll(m_outbox.get(), m_socket, e.params.dscp);
    After(flowId);
}

// A flow that is done leaves its record and trace; the others keep one pending wake-up at their earliest
// deadline. A deadline that moved later (the usual case after an ACK) keeps the earlier event, which finds
// nothing due and reschedules: fewer events than cancelling.
void
HostSender::After(uint32_t flowId)
{
    auto it = m_flows.find(flowId);
    Entry& e = it->second;
    if (p4rcp_sender_is_done(e.flow.get()))
    {
        e.wake.Cancel();
        Collect(e.flow.get());
        m_flows.erase(it);
        return;
    }
    double now = Simulator::Now().GetSeconds();
    double w = p4rcp_sender_next_wake(e.flow.get());
    if (!std::isfinite(w) || (e.wake.IsPending() && e.wakeAt <= w))
    {
        return;
    }
    e.wake.Cancel();
    // Rounded up to the next nanosecond, and one more: the event must not fire before the deadline.
    int64_t ns = w > now ? static_cast<int64_t>(std::ceil((w - now) * 1e9)) + 1 : 0;
    e.wakeAt = w;
    e.wake = Simulator::Schedule(NanoSeconds(ns), &HostSender::Wake, this, flowId);
}

void
HostSender::Collect(p4rcp_sender* flow)
{
    p4rcp_str text;
    Require(p4rcp_sender_record(flow, &text), "a sender's record");
    m_records += ToString(text);
    m_records += '\n';
    Require(p4rcp_sender_take_trace(flow, &text), "a sender's trace");
    m_trace += ToString(text);
}

void
HostSender::Receive(Ptr<Socket> socket)
{
    Ptr<Packet> p;
    while ((p = socket->Recv()))
    {
        uint32_t size = p->CopyData(m_buffer.data(), m_buffer.size());
        uint32_t flowId;
        if (p4rcp_datagram_flow_id(m_buffer.data(), size, &flowId) != P4RCP_OK)
        {
            m_malformed += 1;
            continue;
        }
        auto it = m_flows.find(flowId);
        if (it == m_flows.end() || !it->second.flow)
        {
            m_unknownFlow += 1; // a flow already closed, or not ours
            continue;
        }
        p4rcp_sender* flow = it->second.flow.get();
        Require(p4rcp_sender_on_datagram(flow, Simulator::Now().GetSeconds(), m_buffer.data(), size, m_outbox.get()),
                "a sender's datagram");
        SendAll(m_outbox.get(), m_socket, it->second.params.dscp);
        After(flowId);
    }
}

std::string
HostSender::Finish()
{
    for (auto& [id, e] : m_flows)
    {
        e.wake.Cancel();
        if (!e.flow) // planned after the end of the run: nothing to record, as no generator started it
        {
            continue;
        }
        Require(p4rcp_sender_interrupt(e.flow.get()), "a sender's end");
        Collect(e.flow.get());
    }
    m_flows.clear();
    return std::move(m_records);
}

std::string
HostSender::TakeTrace()
{
    for (auto& [id, e] : m_flows)
    {
        if (e.flow)
        {
            p4rcp_str text;
            Require(p4rcp_sender_take_trace(e.flow.get(), &text), "a sender's trace");
            m_trace += ToString(text);
        }
    }
    return std::move(m_trace);
}

} // namespace p4rcp

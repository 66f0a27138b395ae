#include "host-receiver.h"

#include "ns3/double.h"
#include "ns3/inet-socket-address.h"
#include "ns3/simulator.h"
#include "ns3/udp-socket-factory.h"
#include "ns3/uinteger.h"

#include <cmath>

namespace p4rcp
{

using namespace ns3;

NS_OBJECT_ENSURE_REGISTERED(HostReceiver);

TypeId
HostReceiver::GetTypeId()
{
    static TypeId tid = TypeId("p4rcp::HostReceiver")
                            .SetParent<Application>()
                            .SetGroupName("p4rcp")
                            .AddConstructor<HostReceiver>()
                            .AddAttribute("Port",
                                          "The UDP port it serves",
                                          UintegerValue(P4RCP_UDP_PORT),
                                          MakeUintegerAccessor(&HostReceiver::m_port),
                                          MakeUintegerChecker<uint16_t>())
                            .AddAttribute("Window",
                                          "Bytes beyond the cumulative ack the receiver buffers (the hosts': 16 MiB)",
                                          UintegerValue(16u << 20),
                                          MakeUintegerAccessor(&HostReceiver::m_window),
                                          MakeUintegerChecker<uint32_t>(1))
                            .AddAttribute("IdleTimeout",
                                          "A flow without packets this long is recorded as incomplete (s)",
                                          DoubleValue(60.0),
                                          MakeDoubleAccessor(&HostReceiver::m_idleTimeout),
                                          MakeDoubleChecker<double>(0))
                            .AddAttribute("Epoch",
                                          "Unix time of simulated time 0: the records' times are it plus "
                                          "simulated seconds",
                                          DoubleValue(0),
                                          MakeDoubleAccessor(&HostReceiver::m_epoch),
                                          MakeDoubleChecker<double>());
    return tid;
}

HostReceiver::HostReceiver()
    : m_port(P4RCP_UDP_PORT),
      m_window(16u << 20),
      m_idleTimeout(60.0),
      m_epoch(0),
      m_outbox(p4rcp_outbox_new()),
      m_buffer(MAX_DATAGRAM)
{
}

void
HostReceiver::StartApplication()
{
    p4rcp_receiver* receiver = nullptr;
    Require(p4rcp_receiver_new(m_idleTimeout, m_window, m_epoch, &receiver), "the hosts' receiver");
    m_receiver.reset(receiver);
    m_socket = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
    m_socket->Bind(InetSocketAddress(Ipv4Address::GetAny(), m_port));
    m_socket->SetRecvCallback(MakeCallback(&HostReceiver::Receive, this));
}

void
HostReceiver::StopApplication()
{
    m_wake.Cancel();
    if (m_socket)
    {
        m_socket->Close();
    }
}

void
HostReceiver::DoDispose()
{
    m_socket = nullptr;
    m_receiver.reset();
    Application::DoDispose();
}

void
HostReceiver::Receive(Ptr<Socket> socket)
{
    Ptr<Packet> p;
    Address from;
    while ((p = socket->RecvFrom(from)))
    {
        uint32_t size = p->CopyData(m_buffer.data(), m_buffer.size());
        InetSocketAddress peer = InetSocketAddress::ConvertFrom(from);
        Require(p4rcp_receiver_on_datagram(m_receiver.get(),
                                           Simulator::Now().GetSeconds(),
                                           m_buffer.data(),
                                           size,
                                           ToAddr(peer.GetIpv4(), peer.GetPort()),
                                           m_outbox.get()),
                "the receiver's datagram");
        SendAll(m_outbox.get(), m_socket);
    }
    After();
}

void
HostReceiver::Wake()
{
    m_wakeAt = INFINITY;
    Require(p4rcp_receiver_on_timer(m_receiver.get(), Simulator::Now().GetSeconds()), "the receiver's timer");
    After();
}

// One pending wake-up at the receiver's next deadline (its search for idle flows, once a second while it
// holds any).
void
HostReceiver::After()
{
    double w = p4rcp_receiver_next_wake(m_receiver.get());
    if (!std::isfinite(w) || (m_wake.IsPending() && m_wakeAt <= w))
    {
        return;
    }
    m_wake.Cancel();
    double now = Simulator::Now().GetSeconds();
    int64_t ns = w > now ? static_cast<int64_t>(std::ceil((w - now) * 1e9)) + 1 : 0;
    m_wakeAt = w;
    m_wake = Simulator::Schedule(NanoSeconds(ns), &HostReceiver::Wake, this);
}

std::string
HostReceiver::Finish()
{
    if (!m_receiver)
    {
        return "";
    }
    m_wake.Cancel();
    Require(p4rcp_receiver_close_all(m_receiver.get(), Simulator::Now().GetSeconds()), "the receiver's end");
    p4rcp_str lines;
    Require(p4rcp_receiver_take_records(m_receiver.get(), &lines), "the receiver's records");
    return ToString(lines);
}

} // namespace p4rcp

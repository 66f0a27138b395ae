#include "tcp-flows.h"

#include "ns3/abort.h"
#include "ns3/double.h"
#include "ns3/inet-socket-address.h"
#include "ns3/simulator.h"
#include "ns3/tcp-socket-factory.h"
#include "ns3/uinteger.h"

#include <cstring>

namespace p4rcp
{

using namespace ns3;

namespace
{
constexpr uint32_t CHUNK = 64 * 1024; // bytes per write, as the hosts' client
constexpr uint32_t STATUS_COMPLETE = 1;

void
PutU32(uint8_t* b, uint32_t v)
{
    for (int k = 0; k < 4; ++k)
    {
        b[k] = v >> (24 - 8 * k);
    }
}

void
PutU64(uint8_t* b, uint64_t v)
{
    for (int k = 0; k < 8; ++k)
    {
        b[k] = v >> (56 - 8 * k);
    }
}

uint32_t
GetU32(const uint8_t* b)
{
    return (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | b[3];
}

uint64_t
GetU64(const uint8_t* b)
{
    return (uint64_t(GetU32(b)) << 32) | GetU32(b + 4);
}
} // namespace

NS_OBJECT_ENSURE_REGISTERED(TcpFlowSender);
NS_OBJECT_ENSURE_REGISTERED(TcpFlowReceiver);

TypeId
TcpFlowSender::GetTypeId()
{
    static TypeId tid = TypeId("p4rcp::TcpFlowSender")
                            .SetParent<Application>()
                            .SetGroupName("p4rcp")
                            .AddConstructor<TcpFlowSender>()
                            .AddAttribute("Remote",
                                          "The receiver's address",
                                          Ipv4AddressValue(),
                                          MakeIpv4AddressAccessor(&TcpFlowSender::m_remote),
                                          MakeIpv4AddressChecker())
                            .AddAttribute("RemotePort",
                                          "The receiver's TCP port",
                                          UintegerValue(TCP_PORT),
                                          MakeUintegerAccessor(&TcpFlowSender::m_remotePort),
                                          MakeUintegerChecker<uint16_t>())
                            .AddAttribute("Epoch",
                                          "Unix time of simulated time 0: the records' times are it plus "
                                          "simulated seconds",
                                          DoubleValue(0),
                                          MakeDoubleAccessor(&TcpFlowSender::m_epoch),
                                          MakeDoubleChecker<double>());
    return tid;
}

TcpFlowSender::TcpFlowSender()
    : m_remotePort(TCP_PORT),
      m_epoch(0)
{
}

void
TcpFlowSender::AddFlow(double start, const FlowParams& p)
{
    NS_ABORT_MSG_IF(m_flows.count(p.flowId), "flow id " << p.flowId << " given twice");
    Flow& f = m_flows[p.flowId];
    f.p = p;
    f.start = start;
}

void
TcpFlowSender::StartApplication()
{
    for (auto& [id, f] : m_flows)
    {
        Simulator::Schedule(Seconds(f.start), &TcpFlowSender::StartFlow, this, id);
    }
}

void
TcpFlowSender::StartFlow(uint32_t id)
{
    Flow& f = m_flows.at(id);
    f.t0 = Simulator::Now().GetSeconds();
    f.total = f.p.size == P4RCP_SIZE_UNKNOWN ? UINT64_MAX : TCP_PREAMBLE + f.p.size;
    f.socket = Socket::CreateSocket(GetNode(), TcpSocketFactory::GetTypeId());
    UintegerValue value;
    f.socket->GetAttribute("SndBufSize", value);
    f.sndBufMax = value.Get();
    f.socket->GetAttribute("InitialCwnd", value);
    uint32_t segments = value.Get();
    f.socket->GetAttribute("SegmentSize", value);
    f.segment = value.Get();
    GrowSendBuffer(f, segments * f.segment);
    f.socket->TraceConnectWithoutContext("Retransmission",
                                         MakeCallback(&TcpFlowSender::Retransmitted, this).Bind(id));
    f.socket->TraceConnectWithoutContext("Tx", MakeCallback(&TcpFlowSender::Transmitted, this).Bind(id));
    f.socket->TraceConnectWithoutContext("RTT", MakeCallback(&TcpFlowSender::Rtt, this).Bind(id));
    f.socket->TraceConnectWithoutContext("LastRTT", MakeCallback(&TcpFlowSender::LastRtt, this).Bind(id));
    f.socket->TraceConnectWithoutContext("CongestionWindow", MakeCallback(&TcpFlowSender::Cwnd, this).Bind(id));
    f.socket->Bind();
    f.socket->SetConnectCallback(MakeCallback(&TcpFlowSender::Connected, this).Bind(id),
                                 MakeCallback(&TcpFlowSender::ConnectFailed, this).Bind(id));
    f.socket->SetCloseCallbacks(MakeCallback(&TcpFlowSender::Closed, this).Bind(id),
                                MakeCallback(&TcpFlowSender::Closed, this).Bind(id));
    f.socket->SetRecvCallback(MakeCallback(&TcpFlowSender::Receive, this).Bind(id));
    f.socket->Connect(InetSocketAddress(m_remote, m_remotePort));
    f.timeout = Simulator::Schedule(Seconds(f.p.timeout), &TcpFlowSender::TimedOut, this, id);
    if (f.p.duration >= 0 && f.p.size == P4RCP_SIZE_UNKNOWN)
    {
        f.stop = Simulator::Schedule(Seconds(f.p.duration), &TcpFlowSender::StopNewData, this, id);
    }
    if (f.p.sampleInterval > 0)
    {
        f.sampleAt = f.t0;
        f.sample = Simulator::Schedule(Seconds(f.p.sampleInterval), &TcpFlowSender::Sample, this, id);
    }
}

void
TcpFlowSender::Connected(uint32_t id, Ptr<Socket> s)
{
    Flow& f = m_flows.at(id);
    uint8_t hello[TCP_PREAMBLE];
    std::memcpy(hello, "P4RT", 4);
    PutU32(hello + 4, f.p.flowId);
    PutU64(hello + 8, f.p.size);
    s->Send(Create<Packet>(hello, TCP_PREAMBLE));
    f.written = TCP_PREAMBLE;
    s->SetSendCallback(MakeCallback(&TcpFlowSender::Fill, this).Bind(id));
    Fill(id, s, s->GetTxAvailable());
}

void
TcpFlowSender::ConnectFailed(uint32_t id, Ptr<Socket>)
{
    m_flows.at(id).error = "tcp: connection failed";
    End(id);
}

// Keeps the socket's send buffer full until every byte is handed over, then half-closes.
void
TcpFlowSender::Fill(uint32_t id, Ptr<Socket> s, uint32_t)
{
    auto it = m_flows.find(id);
    if (it == m_flows.end())
    {
        return;
    }
    Flow& f = it->second;
    while (f.written < f.total && s->GetTxAvailable() > 0)
    {
        uint64_t n = std::min<uint64_t>({CHUNK, s->GetTxAvailable(), f.total - f.written});
        int sent = s->Send(Create<Packet>(n)); // the content is not simulated
        if (sent <= 0)
        {
            return;
        }
        f.written += sent;
    }
    if (f.written >= f.total && !f.shut)
    {
        f.shut = true;
        s->ShutdownSend();
    }
}

void
TcpFlowSender::StopNewData(uint32_t id)
{
    Flow& f = m_flows.at(id);
    f.total = f.written; // what the socket has taken is the flow
    if (f.socket && f.written >= TCP_PREAMBLE && !f.shut)
    {
        f.shut = true;
        f.socket->ShutdownSend();
    }
}

void
TcpFlowSender::Receive(uint32_t id, Ptr<Socket> s)
{
    Flow& f = m_flows.at(id);
    Ptr<Packet> p;
    // ns-3's TCP returns empty packets for the end of the stream: stop there.
    while ((p = s->Recv()) && p->GetSize() > 0)
    {
        uint32_t n = std::min(p->GetSize(), TCP_PREAMBLE - f.doneGot);
        p->CopyData(f.done + f.doneGot, n);
        f.doneGot += n;
    }
    if (f.doneGot == TCP_PREAMBLE && f.fct < 0)
    {
        if (std::memcmp(f.done, "DONE", 4) != 0)
        {
            f.error = "tcp: bad confirmation";
        }
        else
        {
            f.confirmed = GetU64(f.done + 8);
            f.fct = Simulator::Now().GetSeconds() - f.t0;
        }
        End(id);
    }
}

void
TcpFlowSender::Closed(uint32_t id, Ptr<Socket>)
{
    auto it = m_flows.find(id);
    if (it != m_flows.end() && it->second.fct < 0)
    {
        it->second.error = "tcp: no confirmation";
        End(id);
    }
}

void
TcpFlowSender::TimedOut(uint32_t id)
{
    m_flows.at(id).error = "tcp: flow timeout before the confirmation";
    End(id);
}

// Goodput samples: the bytes the peer acknowledged (taken, minus what the send buffer still holds), as the
// hosts read tcpi_bytes_acked; the rate is a congestion window per smoothed RTT.
void
TcpFlowSender::Sample(uint32_t id)
{
    Flow& f = m_flows.at(id);
    double now = Simulator::Now().GetSeconds();
    uint64_t held = f.socket ? f.sndBuf - f.socket->GetTxAvailable() : 0;
    uint64_t acked = f.written > held ? f.written - held : 0;
    double dt = now - f.sampleAt;
    double cwndKbps = f.srtt > 0 ? f.cwnd * 8.0 / f.srtt / 1000.0 : 0;
    double goodputKbps = dt > 0 ? (acked - std::min(acked, f.sampleAcked)) * 8.0 / dt / 1000.0 : 0;
    p4rcp_str line;
    Require(p4rcp_tcp_sample_line(f.p.flowId, now - f.t0, cwndKbps, f.srtt, goodputKbps, &line), "a TCP sample");
    m_trace += ToString(line);
    m_trace += '\n';
    f.sampleAcked = acked;
    f.sampleAt = now;
    f.sample = Simulator::Schedule(Seconds(f.p.sampleInterval), &TcpFlowSender::Sample, this, id);
}

void
TcpFlowSender::Retransmitted(uint32_t id,
                             Ptr<const Packet>,
                             const TcpHeader&,
                             const Address&,
                             const Address&,
                             Ptr<const TcpSocketBase>)
{
    m_flows.at(id).retransmissions += 1;
}

void
TcpFlowSender::Transmitted(uint32_t id, Ptr<const Packet> p, const TcpHeader&, Ptr<const TcpSocketBase>)
{
    if (p->GetSize() > 0)
    {
        m_flows.at(id).segments += 1;
    }
}

void
TcpFlowSender::Rtt(uint32_t id, Time, Time srtt)
{
    m_flows.at(id).srtt = srtt.GetSeconds();
}

void
TcpFlowSender::LastRtt(uint32_t id, Time, Time rtt)
{
    if (rtt.IsStrictlyPositive())
    {
        Flow& f = m_flows.at(id);
        f.minRtt = std::min(f.minRtt, rtt.GetSeconds());
    }
}

void
TcpFlowSender::Cwnd(uint32_t id, uint32_t, uint32_t cwnd)
{
    Flow& f = m_flows.at(id);
    f.cwnd = cwnd;
    GrowSendBuffer(f, cwnd);
}

// Linux sizes a TCP socket's send buffer to about twice the congestion window in socket memory, which
// counts about twice the payload per segment (tcp_sndbuf_expand), up to net.ipv4.tcp_wmem's largest, and
// never shrinks it. A fixed buffer of the largest size would hold megabytes not yet sent: a long flow would
// go on for seconds after its end, and a sender's backlog would not be Linux's.
void
TcpFlowSender::GrowSendBuffer(Flow& f, uint32_t cwndBytes)
{
    uint64_t want = std::min<uint64_t>(f.sndBufMax, 4ull * std::max(cwndBytes, 10 * f.segment));
    if (want > f.sndBuf)
    {
        f.sndBuf = want;
        f.socket->SetAttribute("SndBufSize", UintegerValue(want));
    }
}

// The flow's record is final: close the connection and forget it.
void
TcpFlowSender::End(uint32_t id)
{
    auto it = m_flows.find(id);
    Flow& f = it->second;
    f.timeout.Cancel();
    f.sample.Cancel();
    f.stop.Cancel();
    m_records += Record(f);
    if (f.socket)
    {
        f.socket->SetRecvCallback(MakeNullCallback<void, Ptr<Socket>>());
        f.socket->SetSendCallback(MakeNullCallback<void, Ptr<Socket>, uint32_t>());
        f.socket->SetCloseCallbacks(MakeNullCallback<void, Ptr<Socket>>(), MakeNullCallback<void, Ptr<Socket>>());
        if (f.fct >= 0)
        {
            f.socket->Close();
        }
        else
        {
            f.socket->ShutdownRecv();
            f.socket->Close();
        }
    }
    m_flows.erase(it);
}

std::string
TcpFlowSender::Record(const Flow& f) const
{
    p4rcp_tcp_flow r{};
    r.flow_id = f.p.flowId;
    r.index = f.p.index;
    r.scheme = f.p.scheme.c_str(); // tcp, tcp:reno, ...
    r.dst = ToAddr(m_remote, m_remotePort);
    r.dscp = f.p.dscp;
    r.start_unix_s = m_epoch + f.t0;
    r.size_bytes =
        f.p.size != P4RCP_SIZE_UNKNOWN ? f.p.size : (f.written > TCP_PREAMBLE ? f.written - TCP_PREAMBLE : 0);
    r.confirmed = f.fct >= 0;
    r.fct_s = f.fct;
    r.confirmed_bytes = f.confirmed;
    r.error = f.error.c_str();
    r.retransmissions = f.retransmissions;
    r.segments = f.segments;
    r.srtt_s = f.srtt;
    r.min_rtt_s = std::isfinite(f.minRtt) ? f.minRtt : 0;
    p4rcp_str json;
    Require(p4rcp_tcp_flow_record(&r, &json), "a TCP flow's record");
    return ToString(json) + '\n';
}

std::string
TcpFlowSender::Finish()
{
    std::vector<uint32_t> running;
    for (auto& [id, f] : m_flows)
    {
        if (f.t0 >= 0)
        {
            running.push_back(id);
        }
    }
    for (uint32_t id : running)
    {
        m_flows.at(id).error = "interrupted";
        End(id);
    }
    m_flows.clear();
    return std::move(m_records);
}

void
TcpFlowSender::StopApplication()
{
}

void
TcpFlowSender::DoDispose()
{
    m_flows.clear();
    Application::DoDispose();
}

// --------------------------------------------------------------------------------------------- receiver

TypeId
TcpFlowReceiver::GetTypeId()
{
    static TypeId tid = TypeId("p4rcp::TcpFlowReceiver")
                            .SetParent<Application>()
                            .SetGroupName("p4rcp")
                            .AddConstructor<TcpFlowReceiver>()
                            .AddAttribute("Epoch",
                                          "Unix time of simulated time 0: the records' times are it plus "
                                          "simulated seconds",
                                          DoubleValue(0),
                                          MakeDoubleAccessor(&TcpFlowReceiver::m_epoch),
                                          MakeDoubleChecker<double>());
    return tid;
}

TcpFlowReceiver::TcpFlowReceiver()
    : m_epoch(0)
{
}

void
TcpFlowReceiver::StartApplication()
{
    m_listener = Socket::CreateSocket(GetNode(), TcpSocketFactory::GetTypeId());
    m_listener->Bind(InetSocketAddress(Ipv4Address::GetAny(), TCP_PORT));
    m_listener->Listen();
    m_listener->SetAcceptCallback(MakeCallback(&TcpFlowReceiver::Request, this),
                                  MakeCallback(&TcpFlowReceiver::Accepted, this));
}

void
TcpFlowReceiver::StopApplication()
{
    if (m_listener)
    {
        m_listener->Close();
    }
}

void
TcpFlowReceiver::DoDispose()
{
    m_listener = nullptr;
    m_conns.clear();
    Application::DoDispose();
}

void
TcpFlowReceiver::Accepted(Ptr<Socket> s, const Address& from)
{
    Conn& c = m_conns[s];
    InetSocketAddress peer = InetSocketAddress::ConvertFrom(from);
    c.peer = ToAddr(peer.GetIpv4(), peer.GetPort());
    c.start = Simulator::Now().GetSeconds();
    s->SetRecvCallback(MakeCallback(&TcpFlowReceiver::Receive, this));
    s->SetCloseCallbacks(MakeCallback(&TcpFlowReceiver::PeerClosed, this),
                         MakeCallback(&TcpFlowReceiver::PeerClosed, this));
}

void
TcpFlowReceiver::Receive(Ptr<Socket> s)
{
    auto it = m_conns.find(s);
    if (it == m_conns.end())
    {
        return;
    }
    Conn& c = it->second;
    bool ended = Drain(s, c);
    if (c.size != UINT64_MAX && c.bytes >= c.size)
    {
        Answer(s, c);
    }
    else if (ended)
    {
        PeerClosed(s);
    }
}

// Reads what the socket holds; true at the end of the stream (ns-3's TCP returns an empty packet once the
// client has half-closed and everything was read).
bool
TcpFlowReceiver::Drain(Ptr<Socket> s, Conn& c)
{
    double now = Simulator::Now().GetSeconds();
    Ptr<Packet> p;
    while ((p = s->Recv()))
    {
        uint32_t n = p->GetSize();
        if (n == 0)
        {
            return true;
        }
        if (c.preambleGot < TCP_PREAMBLE)
        {
            uint32_t k = std::min(n, TCP_PREAMBLE - c.preambleGot);
            p->CopyData(c.preamble + c.preambleGot, k);
            c.preambleGot += k;
            n -= k;
            if (c.preambleGot == TCP_PREAMBLE)
            {
                c.flowId = GetU32(c.preamble + 4);
                c.size = GetU64(c.preamble + 8);
            }
        }
        if (n > 0)
        {
            c.bytes += n;
            c.lastAdvanced = now; // the read that returns the flow's last byte ends its FCT
        }
    }
    return false;
}

// The client half-closed: an open-ended flow is whole.
void
TcpFlowReceiver::PeerClosed(Ptr<Socket> s)
{
    auto it = m_conns.find(s);
    if (it == m_conns.end())
    {
        return;
    }
    Conn& c = it->second;
    Drain(s, c);
    if (c.size == UINT64_MAX)
    {
        c.size = c.bytes;
    }
    Answer(s, c);
}

// Confirms the flow, records it and forgets the connection.
void
TcpFlowReceiver::Answer(Ptr<Socket> s, Conn& c)
{
    bool whole = c.preambleGot == TCP_PREAMBLE && c.bytes == c.size;
    uint8_t done[TCP_PREAMBLE];
    std::memcpy(done, "DONE", 4);
    PutU32(done + 4, whole ? STATUS_COMPLETE : 0);
    PutU64(done + 8, c.bytes);
    s->Send(Create<Packet>(done, TCP_PREAMBLE));
    m_records += Record(c, whole);
    s->SetRecvCallback(MakeNullCallback<void, Ptr<Socket>>());
    s->SetCloseCallbacks(MakeNullCallback<void, Ptr<Socket>>(), MakeNullCallback<void, Ptr<Socket>>());
    s->Close();
    m_conns.erase(s);
}

std::string
TcpFlowReceiver::Record(const Conn& c, bool completed) const
{
    p4rcp_tcp_recv r{};
    r.flow_id = c.flowId;
    r.peer = c.peer;
    r.size = c.size; // UINT64_MAX, P4RCP_SIZE_UNKNOWN: open-ended
    r.bytes_delivered = c.bytes;
    r.completed = completed;
    r.start_unix_s = m_epoch + c.start;
    r.duration_s = Simulator::Now().GetSeconds() - c.start;
    r.last_byte_unix_s = completed && c.lastAdvanced >= 0 ? m_epoch + c.lastAdvanced : -1;
    p4rcp_str json;
    Require(p4rcp_tcp_recv_record(&r, &json), "a TCP flow's record");
    return ToString(json) + '\n';
}

std::string
TcpFlowReceiver::Finish()
{
    for (auto& [s, c] : m_conns)
    {
        m_records += Record(c, false);
    }
    m_conns.clear();
    return std::move(m_records);
}

} // namespace p4rcp

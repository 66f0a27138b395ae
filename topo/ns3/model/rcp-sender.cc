#include "rcp-sender.h"

#include "ns3/abort.h"
#include "ns3/inet-socket-address.h"
#include "ns3/ipv4-address.h"
#include "ns3/simulator.h"
#include "ns3/udp-socket-factory.h"
#include "ns3/uinteger.h"

#include <cmath>

namespace p4rcp
{

using namespace ns3;

namespace
{
constexpr uint32_t BURST_MAX = 64;  // most DATA packets one flow sends per wake-up
constexpr uint32_t FIN_TRIES = 8;   // FIN attempts before the close counts as lost
constexpr double SYN_RTO = 1.0;     // RFC 6298's initial timeout, doubled per try up to 8 s
constexpr uint32_t DATA_HEADER_LEN = RCP_HEADER_LEN + 20; // RCP + the host's DATA header

uint32_t
TsUs(double now)
{
    return static_cast<uint32_t>(static_cast<uint64_t>(now * 1e6));
}

double
Round(double x, int digits)
{
    double m = std::pow(10.0, digits);
    return std::round(x * m) / m;
}
} // namespace

RcpSenderFlow::RcpSenderFlow(const FlowParams& p, double now)
    : m_p(p),
      m_tStart(now),
      m_nextRetry(now),
      m_pacer(now),
      m_paceRate(p.minRateKbps),
      m_end(p.size),
      m_lastDataAt(now),
      m_nextSample(now)
{
}

double
RcpSenderFlow::Clamp(double r) const
{
    return std::isnan(r) ? m_p.minRateKbps : std::clamp(r, m_p.minRateKbps, m_p.maxRateKbps);
}

uint32_t
RcpSenderFlow::RttUs() const
{
    return std::clamp<uint32_t>(static_cast<uint32_t>(m_srtt * 1e6), 1, RCP_MAX_RTT_US);
}

bool
RcpSenderFlow::HasData() const
{
    return !m_retx.Empty() || (m_nextNew < m_end && m_nextNew < Cum() + m_window);
}

// One smoothed RTT plus the reordering window after a packet left if a later one was acknowledged, else
// the retransmission timeout: both grow with the send time, so the oldest outstanding packet is due first.
double
RcpSenderFlow::LossDeadline(const Sent& s) const
{
    return s.seq < m_largestAcked ? s.sentAt + m_srtt + ReoWnd() : s.sentAt + Rto();
}

double
RcpSenderFlow::NextWake() const
{
    double w = Deadline();
    switch (m_phase)
    {
    case Phase::Done:
        return INFINITY;
    case Phase::SynSent:
    case Phase::FinSent:
        return std::min(w, m_nextRetry);
    case Phase::Established:
        if (m_p.duration >= 0 && m_end == SIZE_UNKNOWN)
        {
            w = std::min(w, m_tStart + m_p.duration);
        }
        for (const Sent& s : m_sent)
        {
            if (s.state == State::Out)
            {
                w = std::min(w, LossDeadline(s));
                break;
            }
        }
        if (HasData())
        {
            w = std::min(w, m_pacer.NextDeparture());
        }
        if (m_p.sampleInterval > 0)
        {
            w = std::min(w, m_nextSample);
        }
        return w;
    }
    return w;
}

void
RcpSenderFlow::OnTimer(double now, const Tx& tx)
{
    if (m_phase != Phase::Done && now >= Deadline())
    {
        if (m_phase == Phase::FinSent)
        {
            m_phase = Phase::Done; // completed; only the close failed
        }
        else
        {
            Abort(m_phase == Phase::SynSent ? "no SYNACK before the flow timeout"
                                            : "flow timeout before every byte was acknowledged");
        }
        return;
    }
    switch (m_phase)
    {
    case Phase::SynSent:
        if (now >= m_nextRetry)
        {
            SendSyn(now, tx);
        }
        break;
    case Phase::Established:
        if (m_p.duration >= 0 && m_end == SIZE_UNKNOWN && now >= m_tStart + m_p.duration)
        {
            m_end = m_nextNew;
            CheckComplete(now);
            if (m_phase != Phase::Established)
            {
                OnTimer(now, tx);
                return;
            }
        }
        DetectLosses(now);
        SendPaced(now, tx);
        Sample(now);
        break;
    case Phase::FinSent:
        if (now >= m_nextRetry)
        {
            if (m_finTries >= FIN_TRIES)
            {
                m_phase = Phase::Done; // the FCT is known; the close was lost
            }
            else
            {
                SendFin(now, tx);
            }
        }
        break;
    default:
        break;
    }
}

void
RcpSenderFlow::Interrupt()
{
    if (m_phase == Phase::FinSent)
    {
        m_phase = Phase::Done;
    }
    else if (m_phase != Phase::Done)
    {
        Abort("interrupted");
    }
}

void
RcpSenderFlow::Abort(const std::string& why)
{
    m_error = why;
    m_phase = Phase::Done;
}

RcpHeader
RcpSenderFlow::Forward(uint8_t type) const
{
    RcpHeader rcp;
    rcp.type = type;
    rcp.rateKbps = static_cast<uint32_t>(std::clamp(std::round(m_p.maxRateKbps), 1.0, 4294967295.0));
    return rcp;
}

void
RcpSenderFlow::SendSyn(double now, const Tx& tx)
{
    RcpHeader rcp = Forward(SYN);
    RcpTransportHeader h(SYN);
    h.flowId = m_p.flowId;
    h.pktSeq = m_synSent.size();
    h.tsUs = TsUs(now);
    h.totalSize = m_p.size;
    h.mss = m_p.mss;
    h.cc = 1; // rcp (hosts/src/wire.rs, cc_code)
    Ptr<Packet> p = Create<Packet>();
    p->AddHeader(h);
    p->AddHeader(rcp);
    tx(p);
    int tries = m_synSent.size();
    m_synSent.push_back(now);
    m_nextRetry = now + std::min(SYN_RTO * std::pow(2.0, tries), 8.0);
}

void
RcpSenderFlow::OnSynAck(const RcpHeader& rcp, const RcpTransportHeader& h, double now)
{
    if (m_phase != Phase::SynSent || h.pktSeq >= m_synSent.size())
    {
        return; // not an answer to one of our SYNs
    }
    RttSample(std::max(now - m_synSent[h.pktSeq], 1e-6));
    m_window = std::max<uint64_t>(h.window, m_p.mss);
    m_synackRate = rcp.feedbackKbps;
    // rcp: the first rate is the SYNACK's echo; an echo of 0 (no router stamped) means max rate.
    m_paceRate = Clamp(rcp.feedbackKbps > 0 ? rcp.feedbackKbps : m_p.maxRateKbps);
    m_phase = Phase::Established;
    m_pacer = Pacer(now);
    m_nextSample = now;
    CheckComplete(now); // a 0-byte flow is done at once
}

void
RcpSenderFlow::SendFin(double now, const Tx& tx)
{
    RcpHeader rcp = Forward(FIN);
    rcp.rttUs = RttUs();
    RcpTransportHeader h(FIN);
    h.flowId = m_p.flowId;
    h.pktSeq = m_finTries;
    h.tsUs = TsUs(now);
    h.finalSize = m_end;
    Ptr<Packet> p = Create<Packet>();
    p->AddHeader(h);
    p->AddHeader(rcp);
    tx(p);
    m_finTries += 1;
    m_nextRetry = now + std::clamp(Rto() * std::pow(2.0, m_finTries - 1.0), 0.01, 2.0);
}

void
RcpSenderFlow::OnFinAck(const RcpTransportHeader& h)
{
    if (m_phase != Phase::FinSent)
    {
        return;
    }
    if (h.cumAck < m_end)
    {
        m_error = "receiver closed with " + std::to_string(h.cumAck) + " of " + std::to_string(m_end) + " bytes";
    }
    m_phase = Phase::Done;
}

void
RcpSenderFlow::CheckComplete(double now)
{
    if (m_phase == Phase::Established && m_end != SIZE_UNKNOWN && m_sacked.Contains(0, m_end))
    {
        m_fct = now - m_tStart;
        m_phase = Phase::FinSent;
        m_nextRetry = now;
    }
}

// RFC 6298 smoothing (gains 1/8, 1/4) and the minimum.
void
RcpSenderFlow::RttSample(double r)
{
    if (m_srtt == 0)
    {
        m_srtt = r;
        m_rttvar = r / 2;
    }
    else
    {
        m_rttvar = 0.75 * m_rttvar + 0.25 * std::abs(m_srtt - r);
        m_srtt = 0.875 * m_srtt + 0.125 * r;
    }
    m_minRtt = std::min(m_minRtt, r);
}

void
RcpSenderFlow::OnPacket(const RcpHeader& rcp, const RcpTransportHeader& h, double now, const Tx& tx)
{
    switch (h.type)
    {
    case SYNACK:
        OnSynAck(rcp, h, now);
        break;
    case ACK:
        if (m_phase == Phase::Established || m_phase == Phase::FinSent)
        {
            OnAck(rcp, h, now);
        }
        break;
    case FINACK:
        OnFinAck(h);
        break;
    default:
        break; // forward types are not for a sender
    }
    if (m_phase == Phase::Established || m_phase == Phase::FinSent)
    {
        OnTimer(now, tx);
    }
}

size_t
RcpSenderFlow::SentIndex(uint32_t seq, bool& found) const
{
    found = false;
    if (m_sent.empty() || seq < m_sent.front().seq)
    {
        return 0;
    }
    size_t idx = seq - m_sent.front().seq;
    found = idx < m_sent.size();
    return idx;
}

void
RcpSenderFlow::OnAck(const RcpHeader& rcp, const RcpTransportHeader& h, double now)
{
    double rtt = static_cast<uint32_t>(TsUs(now) - h.tsUs) / 1e6;
    uint32_t seq = h.pktSeq;
    if (seq >= m_nextSeq || seq == 0)
    {
        return; // acknowledges nothing we sent
    }
    if (rtt < 60)
    {
        RttSample(std::max(rtt, 1e-6));
    }
    bool found;
    size_t idx = SentIndex(seq, found);
    if (found)
    {
        if (m_sent[idx].state == State::Out)
        {
            Delivered(idx);
        }
        else if (m_sent[idx].state == State::Lost)
        {
            SpuriousLoss();
        }
    }
    else if (m_recentlyLost.erase(seq))
    {
        SpuriousLoss();
    }
    m_largestAcked = std::max(m_largestAcked, seq);
    // every transmission the cumulative ack or a SACK block now covers was delivered
    MarkReceived(0, h.cumAck);
    for (uint32_t k = 0; k < h.nSacks; ++k)
    {
        MarkReceived(h.sacks[k].first, h.sacks[k].second);
    }
    if (m_phase == Phase::Established)
    {
        // rcp: follow every echo; 0 means no router stamped, keep the rate
        if (rcp.feedbackKbps > 0)
        {
            m_paceRate = Clamp(rcp.feedbackKbps);
        }
        DetectLosses(now);
        CheckComplete(now);
    }
}

void
RcpSenderFlow::Delivered(size_t idx)
{
    Sent& s = m_sent[idx];
    s.state = State::Acked;
    m_outByOffset.erase({s.offset, s.seq});
    m_pktsDelivered += 1;
}

void
RcpSenderFlow::SpuriousLoss()
{
    m_reoMult = std::min(m_reoMult + 1, 8.0);
}

// The receiver has [s, e): count the new bytes, cancel their retransmission, deliver the transmissions they
// complete.
void
RcpSenderFlow::MarkReceived(uint64_t s, uint64_t e)
{
    auto fresh = m_sacked.Missing(s, e);
    if (fresh.empty())
    {
        return;
    }
    m_sacked.Insert(s, e);
    for (auto [ns, ne] : fresh)
    {
        m_ackedBytes += ne - ns;
        m_retx.Remove(ns, ne);
        // transmissions holding any of the new bytes start at most one MSS before them
        uint64_t from = ns >= m_p.mss ? ns - m_p.mss : 0;
        std::vector<uint32_t> done;
        for (auto it = m_outByOffset.lower_bound({from, 0}); it != m_outByOffset.end() && it->first < ne; ++it)
        {
            bool found;
            size_t idx = SentIndex(it->second, found);
            uint64_t len = found ? m_sent[idx].len : 0;
            if (it->first + len > ns && m_sacked.Contains(it->first, it->first + len))
            {
                done.push_back(it->second);
            }
        }
        for (uint32_t seq : done)
        {
            bool found;
            size_t idx = SentIndex(seq, found);
            if (found)
            {
                Delivered(idx);
            }
        }
    }
}

void
RcpSenderFlow::DetectLosses(double now)
{
    for (Sent& s : m_sent)
    {
        if (s.state != State::Out)
        {
            continue;
        }
        if (now < LossDeadline(s))
        {
            break;
        }
        s.state = State::Lost;
        m_outByOffset.erase({s.offset, s.seq});
        m_pktsLost += 1;
        for (auto [a, b] : m_sacked.Missing(s.offset, s.offset + s.len))
        {
            m_retx.Insert(a, b);
        }
    }
    while (!m_sent.empty() && m_sent.front().state != State::Out)
    {
        if (m_sent.front().state == State::Lost)
        {
            uint32_t seq = m_sent.front().seq;
            m_recentlyLost.insert(seq);
            m_recentlyLostOrder.push_back(seq);
            if (m_recentlyLostOrder.size() > 4096)
            {
                m_recentlyLost.erase(m_recentlyLostOrder.front());
                m_recentlyLostOrder.pop_front();
            }
        }
        m_sent.pop_front();
    }
}

bool
RcpSenderFlow::IsLastNew(uint64_t end, uint32_t len, double now) const
{
    if (end == m_end)
    {
        return true;
    }
    if (m_p.duration >= 0 && m_end == SIZE_UNKNOWN)
    {
        // A flow that sends for a duration: the last packet the pacer sends before it ends.
        double frameBits = (FRAME_OVERHEAD + DATA_HEADER_LEN + len) * 8.0;
        double next = std::max(m_pacer.NextDeparture(), now) + frameBits / (m_paceRate * 1000.0);
        return next >= m_tStart + m_p.duration;
    }
    return false;
}

// Retransmissions first, then new data within the receiver's window, paced.
void
RcpSenderFlow::SendPaced(double now, const Tx& tx)
{
    for (uint32_t n = 0; m_phase == Phase::Established && m_pacer.Ready(now) && n < BURST_MAX; ++n)
    {
        uint64_t off;
        uint32_t len;
        bool isRetx = false;
        if (auto r = m_retx.First())
        {
            off = r->first;
            len = std::min<uint64_t>(r->second - r->first, m_p.mss);
            isRetx = true;
        }
        else
        {
            uint64_t limit = std::min(m_end, Cum() + m_window);
            if (m_nextNew >= limit)
            {
                m_pacer.Idle(now);
                break;
            }
            off = m_nextNew;
            len = std::min<uint64_t>(limit - m_nextNew, m_p.mss);
        }
        uint32_t seq = m_nextSeq;
        RcpHeader rcp = Forward(DATA);
        rcp.rttUs = RttUs();
        if (!isRetx && IsLastNew(off + len, len, now))
        {
            rcp.flags |= RCP_FLAG_LAST;
        }
        RcpTransportHeader h(DATA);
        h.flowId = m_p.flowId;
        h.pktSeq = seq;
        h.tsUs = TsUs(now);
        h.offset = off;
        Ptr<Packet> p = Create<Packet>(len); // the content is not simulated (docs/ns3.md)
        p->AddHeader(h);
        p->AddHeader(rcp);
        tx(p);
        uint32_t frame = FRAME_OVERHEAD + DATA_HEADER_LEN + len;
        if (isRetx)
        {
            m_retx.Remove(off, off + len);
            m_retransmissions += 1;
        }
        else
        {
            m_nextNew = off + len;
        }
        m_nextSeq += 1;
        m_sent.push_back({seq, off, len, now, State::Out});
        m_outByOffset.insert({off, seq});
        if (m_firstDataAt < 0)
        {
            m_firstDataAt = now;
            m_firstFrame = frame;
        }
        m_lastDataAt = now;
        m_pktsSent += 1;
        m_frameBytesSent += frame;
        m_pacer.OnSend(now, frame, m_paceRate);
        if (m_nextSeq == UINT32_MAX)
        {
            Abort("ran out of packet sequence numbers");
        }
    }
}

void
RcpSenderFlow::Sample(double now)
{
    if (m_p.sampleInterval <= 0 || now < m_nextSample)
    {
        return;
    }
    double dt = m_p.sampleInterval;
    TraceSample s;
    s.flowId = m_p.flowId;
    s.t = Round(now - m_tStart, 6);
    s.rateKbps = Round(m_paceRate, 3);
    s.srttMs = Round(m_srtt * 1e3, 3);
    s.goodputKbps = Round((m_ackedBytes - m_sampleAcked) * 8.0 / dt / 1000.0, 3);
    s.sendKbps = Round((m_frameBytesSent - m_sampleFrames) * 8.0 / dt / 1000.0, 3);
    uint64_t lost = m_pktsLost - m_sampleLost;
    uint64_t resolved = lost + m_pktsDelivered - m_sampleDelivered;
    s.loss = resolved > 0 ? Round(double(lost) / resolved, 5) : -1;
    s.state = "follow";
    m_samples.push_back(s);
    m_sampleAcked = m_ackedBytes;
    m_sampleFrames = m_frameBytesSent;
    m_sampleLost = m_pktsLost;
    m_sampleDelivered = m_pktsDelivered;
    m_nextSample += dt;
    if (m_nextSample < now)
    {
        m_nextSample = now + dt;
    }
}

FlowRecord
RcpSenderFlow::Record() const
{
    FlowRecord r;
    r.flowId = m_p.flowId;
    r.index = m_p.index;
    r.scheme = "rcp";
    r.dst = m_p.dst;
    r.sizeBytes = m_end == SIZE_UNKNOWN ? m_nextNew : m_end;
    r.start = m_tStart;
    r.fct = m_fct;
    r.completed = m_fct >= 0;
    r.retransmissions = m_retransmissions;
    r.packetsSent = m_pktsSent;
    r.packetsLost = m_pktsLost;
    double span = m_lastDataAt - (m_firstDataAt < 0 ? m_lastDataAt : m_firstDataAt);
    r.sendRateKbps = span > 0 ? (m_frameBytesSent - m_firstFrame) * 8.0 / span / 1000.0 : -1;
    r.synackRateKbps = m_synackRate;
    r.minRttMs = std::isfinite(m_minRtt) ? m_minRtt * 1e3 : -1;
    r.srttMs = m_srtt > 0 ? m_srtt * 1e3 : -1;
    r.error = m_error;
    return r;
}

// ---------------------------------------------------------------------------------------- application

NS_OBJECT_ENSURE_REGISTERED(RcpSender);

TypeId
RcpSender::GetTypeId()
{
    static TypeId tid = TypeId("p4rcp::RcpSender")
                            .SetParent<Application>()
                            .SetGroupName("p4rcp")
                            .AddConstructor<RcpSender>()
                            .AddAttribute("Remote",
                                          "The receiver's address",
                                          Ipv4AddressValue(),
                                          MakeIpv4AddressAccessor(&RcpSender::m_remote),
                                          MakeIpv4AddressChecker())
                            .AddAttribute("RemotePort",
                                          "The receiver's UDP port",
                                          UintegerValue(RCP_UDP_PORT),
                                          MakeUintegerAccessor(&RcpSender::m_remotePort),
                                          MakeUintegerChecker<uint16_t>());
    return tid;
}

RcpSender::RcpSender()
    : m_remotePort(RCP_UDP_PORT)
{
    m_tx = [this](Ptr<Packet> p) { Send(p); };
}

void
RcpSender::AddFlow(double start, const FlowParams& p)
{
    NS_ABORT_MSG_IF(m_flows.count(p.flowId), "flow id " << p.flowId << " given twice");
    Entry& e = m_flows[p.flowId];
    e.params = p;
    e.start = start;
}

void
RcpSender::StartApplication()
{
    m_socket = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
    m_socket->Bind(); // an ephemeral port, as the hosts' senders
    m_socket->Connect(InetSocketAddress(m_remote, m_remotePort));
    m_socket->SetRecvCallback(MakeCallback(&RcpSender::Receive, this));
    for (auto& [id, e] : m_flows)
    {
        Simulator::Schedule(Seconds(e.start), &RcpSender::StartFlow, this, id);
    }
}

void
RcpSender::StartFlow(uint32_t flowId)
{
    Entry& e = m_flows.at(flowId);
    e.flow = std::make_unique<RcpSenderFlow>(e.params, Simulator::Now().GetSeconds());
    Wake(flowId);
}

void
RcpSender::StopApplication()
{
    if (m_socket)
    {
        m_socket->Close();
    }
}

void
RcpSender::DoDispose()
{
    m_socket = nullptr;
    m_flows.clear();
    Application::DoDispose();
}

void
RcpSender::Send(Ptr<Packet> packet)
{
    m_socket->Send(packet);
}

void
RcpSender::Wake(uint32_t flowId)
{
    auto it = m_flows.find(flowId);
    if (it == m_flows.end())
    {
        return;
    }
    Entry& e = it->second;
    e.wakeAt = INFINITY;
    e.flow->OnTimer(Simulator::Now().GetSeconds(), m_tx);
    Reschedule(flowId);
}

// One pending wake-up per flow, at its earliest deadline. A deadline that moved later (the usual case after
// an ACK) keeps the earlier event, which finds nothing due and reschedules: fewer events than cancelling.
void
RcpSender::Reschedule(uint32_t flowId)
{
    auto it = m_flows.find(flowId);
    Entry& e = it->second;
    for (auto& s : e.flow->TakeSamples())
    {
        m_samples.push_back(std::move(s));
    }
    if (e.flow->Done())
    {
        e.wake.Cancel();
        m_records.push_back(e.flow->Record());
        m_flows.erase(it);
        return;
    }
    double now = Simulator::Now().GetSeconds();
    double w = e.flow->NextWake();
    if (!std::isfinite(w) || (e.wake.IsPending() && e.wakeAt <= w))
    {
        return;
    }
    e.wake.Cancel();
    // Rounded up to the next nanosecond, and one more: the event must not fire before the deadline.
    int64_t ns = w > now ? static_cast<int64_t>(std::ceil((w - now) * 1e9)) + 1 : 0;
    e.wakeAt = w;
    e.wake = Simulator::Schedule(NanoSeconds(ns), &RcpSender::Wake, this, flowId);
}

void
RcpSender::Receive(Ptr<Socket> socket)
{
    Ptr<Packet> p;
    while ((p = socket->Recv()))
    {
        RcpHeader rcp;
        if (p->GetSize() < RCP_HEADER_LEN)
        {
            continue;
        }
        p->RemoveHeader(rcp);
        RcpTransportHeader h(rcp.type);
        if (rcp.version != RCP_VERSION || p->GetSize() < h.GetSerializedSize())
        {
            continue;
        }
        p->RemoveHeader(h);
        auto it = m_flows.find(h.flowId);
        if (it == m_flows.end() || !it->second.flow)
        {
            continue; // a flow already closed, or not ours
        }
        it->second.flow->OnPacket(rcp, h, Simulator::Now().GetSeconds(), m_tx);
        Reschedule(h.flowId);
    }
}

std::vector<FlowRecord>
RcpSender::Finish()
{
    for (auto& [id, e] : m_flows)
    {
        e.wake.Cancel();
        if (!e.flow) // planned after the end of the run: nothing to record, as no generator started it
        {
            continue;
        }
        e.flow->Interrupt();
        for (auto& s : e.flow->TakeSamples())
        {
            m_samples.push_back(std::move(s));
        }
        m_records.push_back(e.flow->Record());
    }
    m_flows.clear();
    return std::move(m_records);
}

std::vector<TraceSample>
RcpSender::TakeSamples()
{
    return std::move(m_samples);
}

} // namespace p4rcp

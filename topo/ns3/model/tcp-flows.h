// The `tcp` baseline with ns-3's own TCP, measured as the hosts measure theirs (hosts/src/tcp/;
// docs/protocol.md, "The tcp baseline"): the client sends 16 bytes ("P4RT", flow id u32, size u64,
// 2^64-1 = until it half-closes) and the flow's bytes, then half-closes; the server counts them and answers
// 16 bytes ("DONE", status u32, bytes u64). FCT runs from just before connect() to the receiver's read of
// the last byte; the sender's own FCT ends when it has read the confirmation.
//
// Which TCP runs (Cubic, NewReno), its initial window and buffers are ns-3 attributes
// (ns3::TcpL4Protocol::SocketType, ns3::TcpSocket::*) that topo/ns3/engine.py sets for the run. The records
// are the hosts' own (made by the hosts' library from what the flows measured: p4rcp_tcp_*), JSON lines.
#ifndef P4RCP_TCP_FLOWS_H
#define P4RCP_TCP_FLOWS_H

#include "flow-params.h"
#include "host-transport.h"

#include "ns3/application.h"
#include "ns3/event-id.h"
#include "ns3/ipv4-address.h"
#include "ns3/nstime.h"
#include "ns3/socket.h"
#include "ns3/tcp-header.h"
#include "ns3/tcp-socket-base.h"

#include <map>
#include <string>

namespace p4rcp
{

constexpr uint16_t TCP_PORT = 6578;
constexpr uint32_t TCP_PREAMBLE = 16;

// A host's TCP flows, each on its own connection (the hosts' `tcp` threads).
class TcpFlowSender : public ns3::Application
{
  public:
    static ns3::TypeId GetTypeId();
    TcpFlowSender();

    void AddFlow(double start, const FlowParams& p);
    size_t FlowsLeft() const { return m_flows.size(); }
    // Ends the flows still running (the run is over); returns every flow's record, as JSON lines.
    std::string Finish();
    // The trace samples (JSON lines) since the last call.
    std::string TakeTrace() { return std::move(m_trace); }

  private:
    struct Flow
    {
        FlowParams p;
        double start = 0;
        ns3::Ptr<ns3::Socket> socket;
        double t0 = -1;            // just before connect()
        uint64_t total = 0;        // preamble + data; UINT64_MAX while an open-ended flow runs
        uint64_t written = 0;      // bytes the socket took, preamble included
        bool shut = false;         // half-closed: every byte handed over
        uint8_t done[TCP_PREAMBLE];
        uint32_t doneGot = 0;
        double fct = -1;
        uint64_t confirmed = 0;
        uint64_t retransmissions = 0;
        uint64_t segments = 0;
        double srtt = 0;
        double minRtt = INFINITY;
        uint32_t cwnd = 0;
        uint32_t segment = 0;
        uint32_t sndBuf = 0;      // the socket's send buffer now
        uint32_t sndBufMax = 0;   // its largest (the SndBufSize the run configured)
        uint64_t sampleAcked = 0;
        double sampleAt = 0;
        std::string error;
        ns3::EventId timeout;
        ns3::EventId sample;
        ns3::EventId stop; // an open-ended flow's end of new data
    };

    void StartApplication() override;
    void StopApplication() override;
    void DoDispose() override;
    void StartFlow(uint32_t id);
    void Connected(uint32_t id, ns3::Ptr<ns3::Socket> s);
    void ConnectFailed(uint32_t id, ns3::Ptr<ns3::Socket> s);
    void Fill(uint32_t id, ns3::Ptr<ns3::Socket> s, uint32_t available);
    void StopNewData(uint32_t id);
    void Receive(uint32_t id, ns3::Ptr<ns3::Socket> s);
    void Closed(uint32_t id, ns3::Ptr<ns3::Socket> s);
    void TimedOut(uint32_t id);
    void Sample(uint32_t id);
    void End(uint32_t id);
    void Retransmitted(uint32_t id,
                       ns3::Ptr<const ns3::Packet>,
                       const ns3::TcpHeader&,
                       const ns3::Address&,
                       const ns3::Address&,
                       ns3::Ptr<const ns3::TcpSocketBase>);
    void Transmitted(uint32_t id,
                     ns3::Ptr<const ns3::Packet> p,
                     const ns3::TcpHeader&,
                     ns3::Ptr<const ns3::TcpSocketBase>);
    void Rtt(uint32_t id, ns3::Time, ns3::Time srtt);
    void LastRtt(uint32_t id, ns3::Time, ns3::Time rtt);
    void Cwnd(uint32_t id, uint32_t, uint32_t cwnd);
    void GrowSendBuffer(Flow& f, uint32_t cwndBytes);
    std::string Record(const Flow& f) const;

    ns3::Ipv4Address m_remote;
    uint16_t m_remotePort;
    double m_epoch;
    std::map<uint32_t, Flow> m_flows;
    std::string m_records;
    std::string m_trace;
};

// Accepts the flows of every sender on TCP_PORT.
class TcpFlowReceiver : public ns3::Application
{
  public:
    static ns3::TypeId GetTypeId();
    TcpFlowReceiver();
    // Records every connection still open as incomplete (the run is over); returns every flow's record, as
    // JSON lines.
    std::string Finish();

  private:
    struct Conn
    {
        p4rcp_addr peer;
        uint8_t preamble[TCP_PREAMBLE];
        uint32_t preambleGot = 0;
        uint32_t flowId = 0;
        uint64_t size = UINT64_MAX;
        uint64_t bytes = 0;
        double start = 0;
        double lastAdvanced = -1;
    };

    void StartApplication() override;
    void StopApplication() override;
    void DoDispose() override;
    bool Request(ns3::Ptr<ns3::Socket>, const ns3::Address&) { return true; }
    void Accepted(ns3::Ptr<ns3::Socket> s, const ns3::Address& from);
    void Receive(ns3::Ptr<ns3::Socket> s);
    bool Drain(ns3::Ptr<ns3::Socket> s, Conn& c);
    void PeerClosed(ns3::Ptr<ns3::Socket> s);
    void Answer(ns3::Ptr<ns3::Socket> s, Conn& c);
    std::string Record(const Conn& c, bool completed) const;

    double m_epoch;
    ns3::Ptr<ns3::Socket> m_listener;
    std::map<ns3::Ptr<ns3::Socket>, Conn> m_conns;
    std::string m_records;
};

} // namespace p4rcp

#endif

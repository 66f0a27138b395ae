// The sending side of p4rcp's transport for the `rcp` scheme (docs/protocol.md, "Host transport"): SYN
// with the wanted rate, pacing at the rate the routers stamped and the receiver echoed, SACK-based loss
// detection and retransmission, FIN. A port of hosts/src/sender.rs and hosts/src/cc/rcp.rs; what it leaves
// out is listed in docs/ns3.md (monitor intervals, which `rcp` ignores; the content pattern).
//
// RcpSenderFlow is one flow as pure logic (it is handed the time and a function to send with), as in the
// Rust hosts; RcpSender is the ns-3 application that runs a host's flows over one UDP socket.
#ifndef P4RCP_RCP_SENDER_H
#define P4RCP_RCP_SENDER_H

#include "range-set.h"
#include "rcp-header.h"
#include "records.h"

#include "ns3/application.h"
#include "ns3/event-id.h"
#include "ns3/ipv4-address.h"
#include "ns3/packet.h"
#include "ns3/socket.h"

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <unordered_set>
#include <vector>

namespace p4rcp
{

struct FlowParams
{
    uint32_t flowId = 0;
    int64_t index = -1;
    std::string dst;                // "ip:port", for the record
    uint64_t size = SIZE_UNKNOWN;   // application bytes; SIZE_UNKNOWN: send for `duration`
    double duration = -1;           // seconds of new data of an open-ended flow
    uint32_t mss = 1000;
    double maxRateKbps = 1e6;       // asked for in the SYN and in every packet (rcp)
    double minRateKbps = 100;       // the hosts' --min-rate
    double timeout = 60;            // give up this long after the first SYN
    double sampleInterval = 0;      // trace samples (0: none)
};

// Packet k+1 may leave one packet time after packet k's scheduled departure, at the rate in force; at most
// 10 ms of credit for lateness, none for idle time (hosts/src/units.rs, Pacer).
class Pacer
{
  public:
    explicit Pacer(double now = 0)
        : m_next(now)
    {
    }
    double NextDeparture() const { return m_next; }
    bool Ready(double now) const { return now >= m_next; }
    void OnSend(double now, uint32_t frameBytes, double rateKbps)
    {
        m_next = std::max(m_next, now - MAX_LAG) + frameBytes * 8.0 / (rateKbps * 1000.0);
    }
    void Idle(double now) { m_next = std::max(m_next, now); }

  private:
    static constexpr double MAX_LAG = 0.010;
    double m_next;
};

class RcpSenderFlow
{
  public:
    using Tx = std::function<void(ns3::Ptr<ns3::Packet>)>;

    RcpSenderFlow(const FlowParams& p, double now);

    double NextWake() const; // when OnTimer is next due (infinity: never)
    void OnTimer(double now, const Tx& tx);
    void OnPacket(const RcpHeader& rcp, const RcpTransportHeader& h, double now, const Tx& tx);
    bool Done() const { return m_phase == Phase::Done; }
    void Interrupt(); // the run ends: a flow not done is recorded as such
    FlowRecord Record() const;
    std::vector<TraceSample> TakeSamples() { return std::move(m_samples); }

  private:
    enum class Phase
    {
        SynSent,
        Established,
        FinSent,
        Done
    };
    enum class State
    {
        Out,
        Acked,
        Lost
    };
    struct Sent
    {
        uint32_t seq;
        uint64_t offset;
        uint32_t len;
        double sentAt;
        State state;
    };

    double Deadline() const { return m_tStart + m_p.timeout; }
    double ReoWnd() const { return std::max(m_minRtt / 4.0, 0.001) * m_reoMult; }
    double Rto() const { return m_srtt + std::max({4 * m_rttvar, 0.25 * m_srtt, 0.005}) + ReoWnd(); }
    double LossDeadline(const Sent& s) const;
    uint64_t Cum() const { return m_sacked.RunEnd(0); }
    bool HasData() const;
    uint32_t RttUs() const;
    double Clamp(double rateKbps) const;

    // A forward packet's RCP header: its type and the rate the flow asks for (its maximum).
    RcpHeader Forward(uint8_t type) const;
    void SendSyn(double now, const Tx& tx);
    void SendFin(double now, const Tx& tx);
    void SendPaced(double now, const Tx& tx);
    // The DATA packet that carries the flow's last byte for the first time (flagged LAST, a departure for
    // the routers' feedforward), as the hosts' sender decides it (hosts/src/transport/sender/mod.rs).
    bool IsLastNew(uint64_t end, uint32_t len, double now) const;
    void OnSynAck(const RcpHeader& rcp, const RcpTransportHeader& h, double now);
    void OnAck(const RcpHeader& rcp, const RcpTransportHeader& h, double now);
    void OnFinAck(const RcpTransportHeader& h);
    void RttSample(double r);
    void MarkReceived(uint64_t s, uint64_t e);
    void Delivered(size_t idx);
    void SpuriousLoss();
    void DetectLosses(double now);
    void CheckComplete(double now);
    void Sample(double now);
    void Abort(const std::string& why);
    size_t SentIndex(uint32_t seq, bool& found) const;

    FlowParams m_p;
    Phase m_phase = Phase::SynSent;
    double m_tStart;
    std::vector<double> m_synSent;
    uint32_t m_finTries = 0;
    double m_nextRetry;
    int64_t m_synackRate = -1;
    double m_srtt = 0;
    double m_rttvar = 0;
    double m_minRtt = INFINITY;
    double m_reoMult = 1;
    Pacer m_pacer;
    double m_paceRate;
    uint64_t m_end;
    uint64_t m_nextNew = 0;
    uint64_t m_window = 1 << 20;
    RangeSet m_sacked;
    RangeSet m_retx;
    std::deque<Sent> m_sent;
    std::set<std::pair<uint64_t, uint32_t>> m_outByOffset; // (offset, seq) of transmissions still Out
    uint32_t m_nextSeq = 1;
    uint32_t m_largestAcked = 0;
    std::unordered_set<uint32_t> m_recentlyLost;
    std::deque<uint32_t> m_recentlyLostOrder;
    uint64_t m_retransmissions = 0;
    uint64_t m_pktsSent = 0;
    uint64_t m_pktsLost = 0;
    uint64_t m_pktsDelivered = 0;
    uint64_t m_frameBytesSent = 0;
    uint64_t m_firstFrame = 0;
    double m_firstDataAt = -1;
    double m_lastDataAt;
    uint64_t m_ackedBytes = 0;
    double m_fct = -1;
    std::string m_error;
    std::vector<TraceSample> m_samples;
    double m_nextSample;
    uint64_t m_sampleAcked = 0;
    uint64_t m_sampleFrames = 0;
    uint64_t m_sampleLost = 0;
    uint64_t m_sampleDelivered = 0;
};

// A host's RCP flows over one UDP socket (one `p4rcp-host send` or `traffic` process).
class RcpSender : public ns3::Application
{
  public:
    static ns3::TypeId GetTypeId();
    RcpSender();

    // A flow whose first SYN leaves `start` seconds after the application starts.
    void AddFlow(double start, const FlowParams& p);
    size_t FlowsLeft() const { return m_flows.size(); } // not yet done, started or not
    // Ends the flows still running (the run is over) and returns every record.
    std::vector<FlowRecord> Finish();
    std::vector<TraceSample> TakeSamples();

  private:
    void StartApplication() override;
    void StopApplication() override;
    void DoDispose() override;
    void StartFlow(uint32_t flowId);
    void Wake(uint32_t flowId);
    void Reschedule(uint32_t flowId);
    void Receive(ns3::Ptr<ns3::Socket> socket);
    void Send(ns3::Ptr<ns3::Packet> packet);

    struct Entry
    {
        FlowParams params;
        double start = 0;
        std::unique_ptr<RcpSenderFlow> flow; // from the first SYN on
        ns3::EventId wake;
        double wakeAt = INFINITY;
    };

    ns3::Ipv4Address m_remote;
    uint16_t m_remotePort;
    ns3::Ptr<ns3::Socket> m_socket;
    std::map<uint32_t, Entry> m_flows; // flows not done, started or not
    std::vector<FlowRecord> m_records;
    std::vector<TraceSample> m_samples;
    RcpSenderFlow::Tx m_tx;
};

} // namespace p4rcp

#endif

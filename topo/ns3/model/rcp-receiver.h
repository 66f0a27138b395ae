// The receiving side of p4rcp's transport (docs/protocol.md, "Host transport"; hosts/src/receiver.rs):
// one state per (sender address, port, flow id); every SYN answered with a SYNACK and every DATA packet
// with an ACK that echoes the rate the routers stamped into it, the cumulative ack and up to 4 SACK blocks;
// the FIN closes the flow with a FINACK and its record. Data is counted, not stored: the content is not
// simulated.
#ifndef P4RCP_RCP_RECEIVER_H
#define P4RCP_RCP_RECEIVER_H

#include "range-set.h"
#include "rcp-header.h"
#include "records.h"

#include "ns3/application.h"
#include "ns3/event-id.h"
#include "ns3/inet-socket-address.h"
#include "ns3/socket.h"

#include <map>
#include <tuple>
#include <vector>

namespace p4rcp
{

class RcpReceiver : public ns3::Application
{
  public:
    static ns3::TypeId GetTypeId();
    RcpReceiver();

    // Records every flow still open as incomplete (the run is over) and returns every record.
    std::vector<RecvRecord> Finish();
    uint64_t Unexpected() const { return m_unexpected; }

  private:
    using Key = std::tuple<uint32_t, uint16_t, uint32_t>; // sender address, port, flow id

    struct Flow
    {
        uint32_t flowId;
        std::string peer;
        int64_t size; // announced; -1: open-ended
        uint8_t cc;
        double created;
        double lastActive;
        uint64_t cum = 0;  // every byte below was delivered in order
        RangeSet have;     // bytes above cum, buffered
        uint64_t dataPackets = 0;
        uint64_t duplicatePackets = 0;
        double cumAdvanced = -1;
    };

    struct Closed
    {
        double at;
        uint8_t status;
        uint64_t cum;
    };

    void StartApplication() override;
    void StopApplication() override;
    void DoDispose() override;
    void Receive(ns3::Ptr<ns3::Socket> socket);
    void Reply(const ns3::Address& peer, uint32_t feedbackKbps, const RcpTransportHeader& h);
    bool OnData(Flow& f, uint64_t offset, uint64_t len);
    RcpTransportHeader Ack(const Flow& f, const RcpTransportHeader& echo, uint64_t latest) const;
    RecvRecord Record(const Flow& f, double now, bool completed) const;
    void CollectGarbage();

    uint32_t m_window;
    double m_idleTimeout;
    ns3::Ptr<ns3::Socket> m_socket;
    std::map<Key, Flow> m_flows;
    std::map<Key, Closed> m_closed;
    std::vector<RecvRecord> m_records;
    uint64_t m_unexpected = 0;
    ns3::EventId m_gc;
};

} // namespace p4rcp

#endif

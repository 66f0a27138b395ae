// A host's flows of the hosts' transport (docs/protocol.md, "Host transport") over one UDP socket, as one
// `p4rcp-host send` or `traffic` process runs them: each flow is the Rust hosts' own sender
// (hosts/include/p4rcp_host.h) with its scheme's controller (FlowParams::scheme: rcp, allegro, vivace and
// its variants, fixed:RATE); this application only gives it the simulated time and carries its datagrams.
#ifndef P4RCP_HOST_SENDER_H
#define P4RCP_HOST_SENDER_H

#include "flow-params.h"
#include "host-transport.h"

#include "ns3/application.h"
#include "ns3/event-id.h"
#include "ns3/ipv4-address.h"
#include "ns3/socket.h"

#include <map>
#include <string>

namespace p4rcp
{

class HostSender : public ns3::Application
{
  public:
    static ns3::TypeId GetTypeId();
    HostSender();

    // A flow whose first SYN leaves `start` seconds after the application starts.
    void AddFlow(double start, const FlowParams& p);
    size_t FlowsLeft() const { return m_flows.size(); } // not yet done, started or not
    // Ends the flows still running (the run is over); returns every flow's record, as JSON lines.
    std::string Finish();
    // The trace lines of the flows (JSON lines) since the last call.
    std::string TakeTrace();
    // Datagrams that were no p4rcp datagram, or of no flow of this host.
    uint64_t Malformed() const { return m_malformed; }
    uint64_t UnknownFlow() const { return m_unknownFlow; }

  private:
    void StartApplication() override;
    void StopApplication() override;
    void DoDispose() override;
    void StartFlow(uint32_t flowId);
    void Wake(uint32_t flowId);
    void After(uint32_t flowId);
    void Receive(ns3::Ptr<ns3::Socket> socket);
    void Collect(p4rcp_sender* flow);

    struct Entry
    {
        FlowParams params;
        double start = 0;
        SenderHandle flow; // from the first SYN on
        ns3::EventId wake;
        double wakeAt = INFINITY;
    };

    ns3::Ipv4Address m_remote;
    uint16_t m_remotePort;
    double m_epoch;
    ns3::Ptr<ns3::Socket> m_socket;
    std::map<uint32_t, Entry> m_flows; // flows not done, started or not
    std::string m_records;
    std::string m_trace;
    OutboxHandle m_outbox;         // every flow's datagrams, sent as soon as a call left them
    std::vector<uint8_t> m_buffer; // a received datagram, for the library

    uint64_t m_malformed = 0;
    uint64_t m_unknownFlow = 0;
};

} // namespace p4rcp

#endif

// A host's receiver of the hosts' transport (docs/protocol.md, "Host transport"), as one `p4rcp-host recv`
// runs it: the Rust hosts' own receiver (hosts/include/p4rcp_host.h), which this application gives the
// simulated time and whose datagrams it carries. Every byte is delivered in order and checked against the
// flow's content, as on the hosts.
#ifndef P4RCP_HOST_RECEIVER_H
#define P4RCP_HOST_RECEIVER_H

#include "host-transport.h"

#include "ns3/application.h"
#include "ns3/event-id.h"
#include "ns3/socket.h"

#include <string>
#include <vector>

namespace p4rcp
{

class HostReceiver : public ns3::Application
{
  public:
    static ns3::TypeId GetTypeId();
    HostReceiver();

    // Records every flow still open as incomplete (the run is over); returns every flow's record, as JSON
    // lines.
    std::string Finish();

  private:
    void StartApplication() override;
    void StopApplication() override;
    void DoDispose() override;
    void Receive(ns3::Ptr<ns3::Socket> socket);
    void Wake();
    void After();

    uint16_t m_port;
    uint32_t m_window;
    double m_idleTimeout;
    double m_epoch;
    ReceiverHandle m_receiver;
    OutboxHandle m_outbox;
    ns3::Ptr<ns3::Socket> m_socket;
    ns3::EventId m_wake;
    double m_wakeAt = INFINITY;
    std::vector<uint8_t> m_buffer; // a received datagram, for the library
};

} // namespace p4rcp

#endif

// The 16-byte RCP header (docs/protocol.md) as an ns-3 header: what the router model reads and stamps. Its
// layout and constants are the hosts' (hosts/include/p4rcp_wire.h, generated from
// hosts/src/transport/wire.rs); the hosts' transport behind it is the Rust library's alone.
#ifndef P4RCP_RCP_HEADER_H
#define P4RCP_RCP_HEADER_H

#include "p4rcp_wire.h"

#include "ns3/header.h"

#include <cstdint>

namespace p4rcp
{

// Ethernet's header: a frame's size as the router counts it is the IP packet and this (docs/protocol.md,
// "Units"), although ns-3's point-to-point links carry a 2-byte PPP header instead.
constexpr uint32_t ETHERNET_HEADER = 14;

// Forward packets (DATA, SYN, REF) are stamped by routers and carry RTT samples; the others pass untouched.
inline bool
IsForward(uint8_t type)
{
    return type < 8 && ((P4RCP_FORWARD_TYPES_MASK >> type) & 1);
}

class RcpHeader : public ns3::Header
{
  public:
    static ns3::TypeId GetTypeId();
    ns3::TypeId GetInstanceTypeId() const override;
    uint32_t GetSerializedSize() const override;
    void Serialize(ns3::Buffer::Iterator start) const override;
    uint32_t Deserialize(ns3::Buffer::Iterator start) override;
    void Print(std::ostream& os) const override;

    uint8_t version = P4RCP_VERSION;
    uint8_t type = P4RCP_TYPE_DATA;
    uint8_t flags = 0;
    uint16_t size = 0;
    uint32_t rateKbps = 0;     // asked for; every router lowers it to its R
    uint32_t rttUs = 0;        // the sender's RTT estimate; 0 = unknown
    uint32_t feedbackKbps = 0; // ACK, SYNACK, FINACK, REFACK: rate_kbps of the packet answered
};

} // namespace p4rcp

#endif

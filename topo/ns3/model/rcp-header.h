// The p4rcp wire format (docs/protocol.md) as ns-3 headers: the 16-byte RCP header that routers read and
// stamp, and the host transport header that follows it. Byte for byte what the P4 program
// (p4src/shared/headers.p4) and the Rust hosts (hosts/src/wire.rs) put on the wire, so that frame sizes,
// and with them the link's load, are the same in every engine.
#ifndef P4RCP_RCP_HEADER_H
#define P4RCP_RCP_HEADER_H

#include "ns3/header.h"

#include <array>
#include <cstdint>
#include <utility>

namespace p4rcp
{

constexpr uint16_t RCP_UDP_PORT = 6577;
constexpr uint8_t RCP_VERSION = 1;
constexpr uint32_t RCP_HEADER_LEN = 16;
constexpr uint32_t RCP_MAX_RTT_US = (1u << 23) - 1; // a router takes 0 < rtt_us <= this as a valid sample (defines.p4)
constexpr uint64_t SIZE_UNKNOWN = UINT64_MAX;   // SYN's total_size of an open-ended flow
constexpr uint32_t MAX_SACKS = 4;
// Ethernet + IPv4 + UDP before the UDP payload: a frame's size as the router counts it (docs/protocol.md,
// "Units"), although ns-3's point-to-point links carry a 2-byte PPP header instead of Ethernet's 14.
// flags: the DATA packet that carries a flow's last byte, sent for the first time (a departure, which
// the feedforward counts; docs/protocol.md).
constexpr uint8_t RCP_FLAG_LAST = 0x01;
constexpr uint32_t FRAME_OVERHEAD = 14 + 20 + 8;
constexpr uint32_t ETHERNET_HEADER = 14;

enum RcpType : uint8_t
{
    DATA = 0,
    ACK = 1,
    SYN = 2,
    SYNACK = 3,
    FIN = 4,
    FINACK = 5,
};

// Forward packets are stamped by routers and carry RTT samples; the others pass untouched.
inline bool
IsForward(uint8_t type)
{
    return type == DATA || type == SYN;
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

    uint8_t version = RCP_VERSION;
    uint8_t type = DATA;
    uint8_t flags = 0;
    uint16_t reserved = 0;
    uint32_t rateKbps = 0;     // asked for; every router lowers it to its R
    uint32_t rttUs = 0;        // the sender's RTT estimate; 0 = unknown
    uint32_t feedbackKbps = 0; // ACK, SYNACK, FINACK: rate_kbps of the packet acknowledged
};

// What the hosts put after the RCP header. Its layout depends on the RCP type, which the RCP header
// carries: set `type` before removing this header from a packet.
class RcpTransportHeader : public ns3::Header
{
  public:
    explicit RcpTransportHeader(uint8_t type = DATA);
    static ns3::TypeId GetTypeId();
    ns3::TypeId GetInstanceTypeId() const override;
    uint32_t GetSerializedSize() const override;
    void Serialize(ns3::Buffer::Iterator start) const override;
    uint32_t Deserialize(ns3::Buffer::Iterator start) override;
    void Print(std::ostream& os) const override;

    uint8_t type;
    // common to every type
    uint32_t flowId = 0;
    uint32_t pktSeq = 0;
    uint32_t tsUs = 0;
    // SYN
    uint64_t totalSize = 0;
    uint16_t mss = 0;
    uint8_t cc = 0;
    // SYNACK and ACK
    uint32_t window = 0;
    // DATA
    uint64_t offset = 0;
    // ACK and FINACK
    uint64_t cumAck = 0;
    uint8_t nSacks = 0;
    std::array<std::pair<uint64_t, uint64_t>, MAX_SACKS> sacks{};
    // FIN
    uint64_t finalSize = 0;
    // FINACK
    uint8_t status = 0;
};

} // namespace p4rcp

#endif

#include "rcp-header.h"

namespace p4rcp
{

using namespace ns3;

NS_OBJECT_ENSURE_REGISTERED(RcpHeader);
NS_OBJECT_ENSURE_REGISTERED(RcpTransportHeader);

TypeId
RcpHeader::GetTypeId()
{
    static TypeId tid =
        TypeId("p4rcp::RcpHeader").SetParent<Header>().SetGroupName("p4rcp").AddConstructor<RcpHeader>();
    return tid;
}

TypeId
RcpHeader::GetInstanceTypeId() const
{
    return GetTypeId();
}

uint32_t
RcpHeader::GetSerializedSize() const
{
    return RCP_HEADER_LEN;
}

void
RcpHeader::Serialize(Buffer::Iterator i) const
{
    i.WriteU8(static_cast<uint8_t>((version << 4) | (type & 0x0f)));
    i.WriteU8(flags);
    i.WriteHtonU16(reserved);
    i.WriteHtonU32(rateKbps);
    i.WriteHtonU32(rttUs);
    i.WriteHtonU32(feedbackKbps);
}

uint32_t
RcpHeader::Deserialize(Buffer::Iterator i)
{
    uint8_t first = i.ReadU8();
    version = first >> 4;
    type = first & 0x0f;
    flags = i.ReadU8();
    reserved = i.ReadNtohU16();
    rateKbps = i.ReadNtohU32();
    rttUs = i.ReadNtohU32();
    feedbackKbps = i.ReadNtohU32();
    return RCP_HEADER_LEN;
}

void
RcpHeader::Print(std::ostream& os) const
{
    os << "RCP v" << unsigned(version) << " type " << unsigned(type) << " rate " << rateKbps << " kb/s rtt "
       << rttUs << " us feedback " << feedbackKbps << " kb/s";
}

RcpTransportHeader::RcpTransportHeader(uint8_t t)
    : type(t)
{
}

TypeId
RcpTransportHeader::GetTypeId()
{
    static TypeId tid = TypeId("p4rcp::RcpTransportHeader")
                            .SetParent<Header>()
                            .SetGroupName("p4rcp")
                            .AddConstructor<RcpTransportHeader>();
    return tid;
}

TypeId
RcpTransportHeader::GetInstanceTypeId() const
{
    return GetTypeId();
}

// Sizes after the RCP header (docs/protocol.md, "Host transport": totals minus 16).
uint32_t
RcpTransportHeader::GetSerializedSize() const
{
    const uint32_t common = 12;
    switch (type)
    {
    case SYN:
        return common + 12;
    case SYNACK:
        return common + 4;
    case DATA:
        return common + 8;
    case ACK:
        return common + 16 + 16 * nSacks;
    case FIN:
        return common + 8;
    case FINACK:
        return common + 12;
    default:
        return common;
    }
}

void
RcpTransportHeader::Serialize(Buffer::Iterator i) const
{
    i.WriteHtonU32(flowId);
    i.WriteHtonU32(pktSeq);
    i.WriteHtonU32(tsUs);
    switch (type)
    {
    case SYN:
        i.WriteHtonU64(totalSize);
        i.WriteHtonU16(mss);
        i.WriteU8(cc);
        i.WriteU8(0);
        break;
    case SYNACK:
        i.WriteHtonU32(window);
        break;
    case DATA:
        i.WriteHtonU64(offset);
        break;
    case ACK:
        i.WriteHtonU64(cumAck);
        i.WriteHtonU32(window);
        i.WriteU8(nSacks);
        i.WriteU8(0);
        i.WriteU8(0);
        i.WriteU8(0);
        for (uint32_t k = 0; k < nSacks; ++k)
        {
            i.WriteHtonU64(sacks[k].first);
            i.WriteHtonU64(sacks[k].second);
        }
        break;
    case FIN:
        i.WriteHtonU64(finalSize);
        break;
    case FINACK:
        i.WriteHtonU64(cumAck);
        i.WriteU8(status);
        i.WriteU8(0);
        i.WriteU8(0);
        i.WriteU8(0);
        break;
    default:
        break;
    }
}

uint32_t
RcpTransportHeader::Deserialize(Buffer::Iterator i)
{
    flowId = i.ReadNtohU32();
    pktSeq = i.ReadNtohU32();
    tsUs = i.ReadNtohU32();
    switch (type)
    {
    case SYN:
        totalSize = i.ReadNtohU64();
        mss = i.ReadNtohU16();
        cc = i.ReadU8();
        i.ReadU8();
        break;
    case SYNACK:
        window = i.ReadNtohU32();
        break;
    case DATA:
        offset = i.ReadNtohU64();
        break;
    case ACK:
        cumAck = i.ReadNtohU64();
        window = i.ReadNtohU32();
        nSacks = std::min<uint8_t>(i.ReadU8(), MAX_SACKS);
        i.Next(3);
        for (uint32_t k = 0; k < nSacks; ++k)
        {
            sacks[k].first = i.ReadNtohU64();
            sacks[k].second = i.ReadNtohU64();
        }
        break;
    case FIN:
        finalSize = i.ReadNtohU64();
        break;
    case FINACK:
        cumAck = i.ReadNtohU64();
        status = i.ReadU8();
        i.Next(3);
        break;
    default:
        break;
    }
    return GetSerializedSize();
}

void
RcpTransportHeader::Print(std::ostream& os) const
{
    os << "flow " << flowId << " seq " << pktSeq << " ts " << tsUs;
}

} // namespace p4rcp

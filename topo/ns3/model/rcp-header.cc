#include "rcp-header.h"

namespace p4rcp
{

using namespace ns3;

NS_OBJECT_ENSURE_REGISTERED(RcpHeader);

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
    return P4RCP_HEADER_LEN;
}

void
RcpHeader::Serialize(Buffer::Iterator i) const
{
    i.WriteU8(static_cast<uint8_t>((version << 4) | (type & 0x0f)));
    i.WriteU8(flags);
    i.WriteHtonU16(size);
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
    size = i.ReadNtohU16();
    rateKbps = i.ReadNtohU32();
    rttUs = i.ReadNtohU32();
    feedbackKbps = i.ReadNtohU32();
    return P4RCP_HEADER_LEN;
}

void
RcpHeader::Print(std::ostream& os) const
{
    os << "RCP v" << unsigned(version) << " type " << unsigned(type) << " rate " << rateKbps << " kb/s rtt "
       << rttUs << " us feedback " << feedbackKbps << " kb/s";
}

} // namespace p4rcp

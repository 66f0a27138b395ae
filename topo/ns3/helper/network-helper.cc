#include "network-helper.h"

#include "ns3/data-rate.h"
#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/error-model.h"
#include "ns3/ipv4-static-routing-helper.h"
#include "ns3/ipv4.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/point-to-point-net-device.h"
#include "ns3/pointer.h"
#include "ns3/queue.h"
#include "ns3/string.h"
#include "ns3/traffic-control-helper.h"
#include "ns3/traffic-control-layer.h"

namespace p4rcp
{

using namespace ns3;

NetDeviceContainer
ConnectPointToPoint(Ptr<Node> a, Ptr<Node> b, double rateAbps, double rateBbps, double delayS)
{
    PointToPointHelper p2p;
    p2p.SetChannelAttribute("Delay", TimeValue(Seconds(delayS)));
    p2p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    NetDeviceContainer devices = p2p.Install(a, b);
    SetLinkRate(devices.Get(0), rateAbps);
    SetLinkRate(devices.Get(1), rateBbps);
    return devices;
}

void
SetLinkRate(Ptr<NetDevice> device, double bps)
{
    DynamicCast<PointToPointNetDevice>(device)->SetDataRate(DataRate(static_cast<uint64_t>(std::llround(bps))));
}

uint32_t
AddInterface(Ptr<Node> node, Ptr<NetDevice> device, Ipv4Address address)
{
    Ptr<Ipv4> ipv4 = node->GetObject<Ipv4>();
    int32_t index = ipv4->AddInterface(device);
    ipv4->AddAddress(index, Ipv4InterfaceAddress(address, Ipv4Mask("255.255.255.255")));
    ipv4->SetMetric(index, 1);
    ipv4->SetUp(index);
    return index;
}

Ptr<RcpQueueDisc>
InstallRcpQueueDisc(Ptr<NetDevice> device, uint32_t packets, const std::string& rttSamples,
                    const std::string& queueSample)
{
    TrafficControlHelper tc;
    tc.SetRootQueueDisc("p4rcp::RcpQueueDisc",
                        "MaxSize",
                        QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, packets)),
                        "RttSamples",
                        StringValue(rttSamples),
                        "QueueSample",
                        StringValue(queueSample));
    return DynamicCast<RcpQueueDisc>(tc.Install(device).Get(0));
}

Ptr<XcpQueueDisc>
InstallXcpQueueDisc(Ptr<NetDevice> device, uint32_t packets)
{
    TrafficControlHelper tc;
    tc.SetRootQueueDisc("p4rcp::XcpQueueDisc", "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, packets)));
    return DynamicCast<XcpQueueDisc>(tc.Install(device).Get(0));
}

Ptr<QueueDisc>
InstallFifoQueueDisc(Ptr<NetDevice> device, uint32_t packets)
{
    TrafficControlHelper tc;
    tc.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, packets)));
    return tc.Install(device).Get(0);
}

Ptr<QueueDisc>
InstallHostQueueDisc(Ptr<NetDevice> device, uint32_t packets)
{
    return InstallFifoQueueDisc(device, packets);
}

void
SetQueueLimit(Ptr<QueueDisc> disc, uint32_t packets)
{
    disc->SetMaxSize(QueueSize(QueueSizeUnit::PACKETS, packets));
}

uint64_t
QueueDiscReceived(Ptr<QueueDisc> disc)
{
    return disc->GetStats().nTotalReceivedPackets;
}

uint64_t
QueueDiscDropped(Ptr<QueueDisc> disc)
{
    return disc->GetStats().nTotalDroppedPackets;
}

void
SetReceiveLoss(Ptr<NetDevice> device, double rate, int64_t stream)
{
    Ptr<RateErrorModel> loss = CreateObject<RateErrorModel>();
    loss->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
    loss->SetRate(rate);
    loss->AssignStreams(stream);
    device->SetAttribute("ReceiveErrorModel", PointerValue(loss));
}

void
AddHostRoute(Ptr<Node> node, Ipv4Address dst, Ipv4Address nextHop, uint32_t interface)
{
    Ipv4StaticRoutingHelper helper;
    helper.GetStaticRouting(node->GetObject<Ipv4>())->AddHostRouteTo(dst, nextHop, interface);
}

void
SetDefaultRoute(Ptr<Node> node, Ipv4Address nextHop, uint32_t interface)
{
    Ipv4StaticRoutingHelper helper;
    helper.GetStaticRouting(node->GetObject<Ipv4>())->SetDefaultRoute(nextHop, interface);
}

} // namespace p4rcp

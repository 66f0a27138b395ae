// What topo/ns3/network.py calls to build an experiment's topology in ns-3: links, addresses, queues,
// routes. Plain functions with plain arguments, so that Python (cppyy) needs no ns-3 template.
#ifndef P4RCP_NETWORK_HELPER_H
#define P4RCP_NETWORK_HELPER_H

#include "rcp-queue-disc.h"
#include "xcp-queue-disc.h"

#include "ns3/ipv4-address.h"
#include "ns3/net-device-container.h"
#include "ns3/node.h"
#include "ns3/queue-disc.h"

#include <string>

namespace p4rcp
{

// A point-to-point link; each direction has its own rate (the device sending it), the delay is each
// way's. The devices' own transmit queues hold one packet, so that a port's queue is its queue disc,
// where the router's work and the control plane's reads happen.
ns3::NetDeviceContainer ConnectPointToPoint(ns3::Ptr<ns3::Node> a,
                                            ns3::Ptr<ns3::Node> b,
                                            double rateAbps,
                                            double rateBbps,
                                            double delayS);

// The device's interface with one /32 address, up; returns its IPv4 interface index.
uint32_t AddInterface(ns3::Ptr<ns3::Node> node, ns3::Ptr<ns3::NetDevice> device, ns3::Ipv4Address address);

ns3::Ptr<RcpQueueDisc> InstallRcpQueueDisc(ns3::Ptr<ns3::NetDevice> device,
                                           uint32_t packets,
                                           const std::string& rttSamples,
                                           const std::string& queueSample);
// An XCP router's port (xcp-queue-disc.h): a drop-tail FIFO of `packets`.
ns3::Ptr<XcpQueueDisc> InstallXcpQueueDisc(ns3::Ptr<ns3::NetDevice> device, uint32_t packets);
// A drop-tail FIFO (a switch port RCP does not run on).
ns3::Ptr<ns3::QueueDisc> InstallFifoQueueDisc(ns3::Ptr<ns3::NetDevice> device, uint32_t packets);
// A host NIC's queue: a FIFO, as the Mininet hosts' token bucket (tbf) with a NIC's queue (not ns-3's
// default, FqCoDel, which would drop at the host by sojourn time).
ns3::Ptr<ns3::QueueDisc> InstallHostQueueDisc(ns3::Ptr<ns3::NetDevice> device, uint32_t packets);
void SetQueueLimit(ns3::Ptr<ns3::QueueDisc> disc, uint32_t packets);
uint64_t QueueDiscReceived(ns3::Ptr<ns3::QueueDisc> disc);
uint64_t QueueDiscDropped(ns3::Ptr<ns3::QueueDisc> disc);

void SetLinkRate(ns3::Ptr<ns3::NetDevice> device, double bps);
// Random loss of packets the device receives (the sender's direction of its access link).
void SetReceiveLoss(ns3::Ptr<ns3::NetDevice> device, double rate, int64_t stream);

void AddHostRoute(ns3::Ptr<ns3::Node> node, ns3::Ipv4Address dst, ns3::Ipv4Address nextHop, uint32_t interface);
void SetDefaultRoute(ns3::Ptr<ns3::Node> node, ns3::Ipv4Address nextHop, uint32_t interface);

} // namespace p4rcp

#endif

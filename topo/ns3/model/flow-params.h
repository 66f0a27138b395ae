// One flow of a host, as the engine plans it (topo/ns3/engine.py): what the hosts' command line gives a
// `p4rcp-host send` or `traffic` flow. HostSender hands it to the hosts' transport (p4rcp_flow_params),
// TcpFlowSender to ns-3's TCP.
#ifndef P4RCP_FLOW_PARAMS_H
#define P4RCP_FLOW_PARAMS_H

#include "p4rcp_host.h"

#include <cstdint>
#include <string>

namespace p4rcp
{

struct FlowParams
{
    uint32_t flowId = 0;
    int64_t index = -1;                  // position in a Poisson workload; -1: a long flow
    std::string scheme = "rcp";          // as p4rcp-host's --cc: rcp, allegro, vivace-loss, fixed:RATE, tcp, ...
    uint64_t size = P4RCP_SIZE_UNKNOWN;  // application bytes; P4RCP_SIZE_UNKNOWN: send for `duration`
    double duration = -1;                // seconds of new data of an open-ended flow
    uint32_t mss = 1000;
    double maxRateKbps = 1e6;
    double minRateKbps = P4RCP_MIN_RATE_KBPS;
    double timeout = 60;                 // give up this long after the start
    bool trace = false;                  // trace lines (rate changes, monitor intervals, samples)
    double sampleInterval = 0;           // trace samples (0: none)
    uint8_t dscp = 0;
    uint64_t seed = 0;                   // the controller's randomness (the hosts' transport)
};

// The controller seed of flow `index` of a traffic generator whose --seed is `seed`, as the hosts seed it
// (a long flow's seed is its flow id).
inline uint64_t
TrafficFlowSeed(uint64_t seed, uint64_t index)
{
    return p4rcp_traffic_flow_seed(seed, index);
}

} // namespace p4rcp

#endif

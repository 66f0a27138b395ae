// What the simulated hosts record: the fields of the Rust hosts' records (hosts/src/record.rs), in
// simulated seconds. topo/ns3/records.py turns them into the same JSON lines, in the same files.
#ifndef P4RCP_RECORDS_H
#define P4RCP_RECORDS_H

#include <cstdint>
#include <string>

namespace p4rcp
{

// One per flow, at the sender (flows_HOST.jsonl). A negative value stands for "null".
struct FlowRecord
{
    uint32_t flowId = 0;
    int64_t index = -1; // position in a Poisson workload; -1: a long flow
    std::string scheme;
    std::string dst; // "ip:port"
    uint64_t sizeBytes = 0;
    double start = 0;      // first SYN (UDP) or connect() (TCP), simulated seconds
    double fct = -1;       // until the sender learned that the last byte arrived
    bool completed = false;
    uint64_t retransmissions = 0;
    uint64_t packetsSent = 0;
    int64_t packetsLost = -1; // UDP only
    double sendRateKbps = -1; // UDP only: frame bits of the DATA packets over their time span
    int64_t synackRateKbps = -1;
    double minRttMs = -1;
    double srttMs = -1;
    std::string error;
};

// One per flow, at the receiver (recv_HOST.jsonl).
struct RecvRecord
{
    uint32_t flowId = 0;
    std::string peer; // "ip:port" of the sender
    std::string scheme;
    std::string transport; // "udp" or "tcp"
    int64_t sizeBytes = -1; // announced; -1: open-ended
    uint64_t bytesDelivered = 0;
    bool completed = false;
    uint64_t dataPackets = 0;
    uint64_t duplicatePackets = 0;
    double start = 0;
    double duration = 0;
    double lastByte = -1; // the flow's last byte arrived (its FCT ends here); -1: never
};

// A periodic sample of one flow (trace_HOST.jsonl, event "sample").
struct TraceSample
{
    uint32_t flowId = 0;
    double t = 0; // since the flow's first SYN
    double rateKbps = 0;
    double srttMs = 0;
    double goodputKbps = 0; // application bytes newly acknowledged over the period
    double sendKbps = 0;    // frame bits sent over the period (UDP); -1 for TCP
    double loss = -1;       // share of the DATA whose fate became known that were lost; -1: none did
    std::string state;
};

} // namespace p4rcp

#endif

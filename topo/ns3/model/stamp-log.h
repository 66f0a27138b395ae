// What RcpQueueDisc stamped, packet by packet (its "Stamp" trace source), for tests and figures that check
// the data plane against the control plane's R.
#ifndef P4RCP_STAMP_LOG_H
#define P4RCP_STAMP_LOG_H

#include "rcp-queue-disc.h"

#include "ns3/callback.h"
#include "ns3/simulator.h"

#include <vector>

namespace p4rcp
{

class StampLog
{
  public:
    explicit StampLog(ns3::Ptr<RcpQueueDisc> disc)
    {
        disc->TraceConnectWithoutContext("Stamp", ns3::MakeCallback(&StampLog::Record, this));
    }

    std::vector<double> time;     // simulated seconds
    std::vector<uint32_t> before; // rate_kbps as the packet arrived
    std::vector<uint32_t> after;  // as it left
    std::vector<uint32_t> rate;   // the port's R then

  private:
    void Record(uint32_t b, uint32_t a, uint32_t r)
    {
        time.push_back(ns3::Simulator::Now().GetSeconds());
        before.push_back(b);
        after.push_back(a);
        rate.push_back(r);
    }
};

} // namespace p4rcp

#endif

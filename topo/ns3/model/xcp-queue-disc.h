// The XCP router's per-packet work on one output port (docs/xcp.md, "The router per packet"), beside
// RcpQueueDisc: a drop-tail FIFO of MaxSize packets that
//
//   on arrival, before any drop:   input_bytes += frame length                              (y)
//   on departure, a forward packet whose RCP header's flags hold P4RCP_FLAG_XCP:
//       with a valid RTT and x > 0: sum_x += x; sum_rtt_x += rtt x; sum_s += s             (the sums)
//       feedback = xi_p rtt x - xi_n rtt s; H_feedback = min(H_feedback, feedback)          (the rewrite)
//   at every departure:             min_queue = min(min_queue, the queue left behind)        (Q)
//
// x = rtt s / cwnd is the sender's (the congestion header's x_ns), so nothing here divides. xi_p and xi_n
// are written by the control loop every control interval (control_plane/xcp_loop.py with p4rcp/xcp_law.py), which
// reads the sums as monotonic counters and the smallest queue since its last read.
#ifndef P4RCP_XCP_QUEUE_DISC_H
#define P4RCP_XCP_QUEUE_DISC_H

#include "ns3/queue-disc.h"

#include <cstdint>

namespace p4rcp
{

class XcpQueueDisc : public ns3::QueueDisc
{
  public:
    static ns3::TypeId GetTypeId();
    XcpQueueDisc();

    uint64_t InputBytes() const { return m_inputBytes; }
    double SumX() const { return m_sumX; }       // seconds
    double SumRttX() const { return m_sumRttX; } // seconds^2
    uint64_t SumS() const { return m_sumS; }     // frame bytes
    uint64_t XcpPackets() const { return m_xcpPackets; }
    uint64_t QueueBytes() const; // the queue now
    // The smallest queue (bytes) a departure left behind since the last call; starts again at the queue now.
    uint64_t TakeMinQueueBytes();
    // xi_p in bytes / s^2, xi_n in 1 / s (p4rcp/xcp_law.py, xcp_coefficients), and the interval's positive and
    // negative totals in bytes, which the packets' feedback uses up.
    void SetCoefficients(double xiP, double xiN, double positiveTotal, double negativeTotal);
    uint64_t Lowered() const { return m_lowered; }
    uint64_t Drops() const { return m_drops; }

  private:
    bool DoEnqueue(ns3::Ptr<ns3::QueueDiscItem> item) override;
    ns3::Ptr<ns3::QueueDiscItem> DoDequeue() override;
    bool CheckConfig() override;
    void InitializeParams() override;

    uint64_t m_inputBytes = 0;
    double m_sumX = 0;
    double m_sumRttX = 0;
    uint64_t m_sumS = 0;
    uint64_t m_xcpPackets = 0;
    uint64_t m_minQueueBytes = 0;
    double m_xiP = 0;
    double m_xiN = 0;
    double m_positiveLeft = 0;
    double m_negativeLeft = 0;
    uint64_t m_lowered = 0;
    uint64_t m_drops = 0;
};

} // namespace p4rcp

#endif

// The RCP router's per-packet work on one output port, as the P4 program does it
// (p4src/targets/v1model/rcp.p4 and routing.p4; docs/dataplane.md, "Per packet"):
//
//   on arrival:                   a TCP packet is dropped with the classic drop probability (classic.p4)
//   then, before any queue drop:  input_bytes += frame length; input_packets += 1      (y, in ingress)
//   on departure, after the queue: forward RCP packet with a valid rtt_us:
//                                      rtt_sum += rtt_us; rtt_count += 1            (egress)
//                                  forward RCP packet with rate_kbps > R != 0:
//                                      rate_kbps = R                                 (the stamp)
//                                  queue_depth = the queue this packet leaves behind (deq_qdepth)
//                                  the feedforward (docs/design.md, "Sudden load"): a SYN adds
//                                      min(size, P) to the committed arrivals; a long one (size above
//                                      the long threshold) adds 1 to the long arrivals and, the k-th
//                                      since the interval's base, is stamped at most the k-th SYN rate,
//                                      a short one at most the short rate; a DATA flagged ENDING adds
//                                      min(size, P) to the committed departures
//
// R is written by the control plane (control_plane/loop.py through topo/ns3/driver.py); nothing here
// divides. The queue itself is a drop-tail FIFO of MaxSize packets.
//
// ns-2's rcp.cc, the papers' router, differs in two places, each an attribute:
// - RttSamples = "arrival": it takes RTT samples on arrival (with y), p4rcp on departure;
// - QueueSample = "at-read": its q is the queue at the tick, p4rcp's the queue the last departure left
//   behind (which reads 0 once the port has drained, as the tick's would). "enqueue-depth" is p4rcp's
//   sample of older p4rcp (enq_qdepth of the last departure: one queueing delay late, and stale while
//   the port idles), kept to measure what that cost.
// The remaining differences (per-byte RTT weighting, asymmetric d0 smoothing) belong to the control
// loop's estimator, not to the data plane (docs/ns3.md).
#ifndef P4RCP_RCP_QUEUE_DISC_H
#define P4RCP_RCP_QUEUE_DISC_H

#include "ns3/queue-disc.h"
#include "ns3/random-variable-stream.h"
#include "ns3/traced-callback.h"

#include <deque>

namespace p4rcp
{

class RcpQueueDisc : public ns3::QueueDisc
{
  public:
    enum RttSamples
    {
        RTT_AT_DEPARTURE, // p4rcp: egress, after the queue
        RTT_AT_ARRIVAL,   // ns-2's rcp.cc
    };

    enum QueueSample
    {
        DEPTH_BEHIND_LAST_DEPARTURE,     // p4rcp v1model: deq_qdepth written in egress
        ENQUEUE_DEPTH_OF_LAST_DEPARTURE, // older p4rcp: enq_qdepth written in egress
        AT_READ,                         // ns-2's rcp.cc: the queue when the control plane reads it
    };

    static ns3::TypeId GetTypeId();
    RcpQueueDisc();

    // The control plane's view, as the P4 registers and counters hold it: monotonic counts.
    uint64_t InputBytes() const { return m_inputBytes; }
    uint64_t InputPackets() const { return m_inputPackets; }
    uint64_t RttSumUs() const { return m_rttSumUs; }
    uint64_t RttCount() const { return m_rttCount; }
    uint32_t QueueDepthPackets() const;
    // 32 bits each, as the P4 registers (wrap)
    uint32_t LongArrivals() const { return m_longArrivals; }
    uint32_t CommittedArrivals() const { return m_committedArrivals; }
    uint32_t CommittedDepartures() const { return m_committedDepartures; }
    void SetRateKbps(uint32_t rateKbps) { m_rateKbps = rateKbps; }
    // The interval's SYN stamps: the k-th SYN after arrivals reached `base` (k = 1 .. SYN_RATES, the last
    // for every later one) is stamped at most synRatesKbps[k - 1]; SYN_RATE_NONE caps nothing.
    void SetArrivalsBase(uint32_t base) { m_arrivalsBase = base; }
    void SetSynRateKbps(uint32_t k, uint32_t rateKbps);
    void SetShortRateKbps(uint32_t rateKbps) { m_shortRateKbps = rateKbps; }
    // P (a flow's size counts up to P packets) and the long threshold (a SYN of a larger size is long).
    void SetGrantPackets(uint16_t grant, uint16_t longThreshold)
    {
        m_grantPackets = grant;
        m_longPackets = longThreshold;
    }

    static constexpr uint32_t SYN_RATES = 8;
    static constexpr uint32_t SYN_RATE_NONE = 0xFFFFFFFF;
    uint32_t GetRateKbps() const { return m_rateKbps; }

    // The probability with which a TCP packet is dropped on arrival (docs/design.md, "Beside TCP"); 0: never.
    void SetClassicDrop(double p);
    uint64_t ClassicDrops() const { return m_classicDrops; }

    uint64_t Stamped() const { return m_stamped; }
    uint64_t Drops() const { return m_drops; }

    // (rate_kbps as the packet arrived, as it leaves, R): every forward RCP packet that departs.
    typedef void (*StampTracedCallback)(uint32_t before, uint32_t after, uint32_t rateKbps);

  private:
    bool DoEnqueue(ns3::Ptr<ns3::QueueDiscItem> item) override;
    ns3::Ptr<ns3::QueueDiscItem> DoDequeue() override;
    bool CheckConfig() override;
    void InitializeParams() override;

    // Where the RCP header's fields sit in a queued IPv4 packet (UDP header first); false if the packet
    // is not a forward RCP packet (docs/protocol.md, "Which datagrams are RCP").
    struct Forward
    {
        uint8_t type;
        uint8_t flags;
        uint32_t rateKbps;
        uint32_t rttUs;
        uint16_t size;
    };
    static bool ReadForward(ns3::Ptr<ns3::QueueDiscItem> item, Forward& f);
    uint32_t StampFor(const Forward& f); // the rate this packet may carry out: R, or less for a SYN
    void SampleRtt(uint32_t rttUs);

    RttSamples m_rttSamples;
    QueueSample m_queueSample;
    uint64_t m_inputBytes = 0;
    uint64_t m_inputPackets = 0;
    uint64_t m_rttSumUs = 0; // 64 bits (the P4 register has 32; the loop reads the width from the driver)
    uint64_t m_rttCount = 0;
    uint32_t m_lastEnqueueDepth = 0;
    uint32_t m_lastDepartureDepth = 0;
    std::deque<uint32_t> m_enqueueDepths; // per queued packet, in queue order (a FIFO drops only at the tail)
    uint32_t m_rateKbps = 0;              // 0: RCP not configured on this port, nothing stamped
    uint32_t m_longArrivals = 0;
    uint32_t m_committedArrivals = 0;
    uint32_t m_committedDepartures = 0;
    uint32_t m_arrivalsBase = 0;
    uint32_t m_shortRateKbps = SYN_RATE_NONE;
    uint16_t m_grantPackets = 0; // as the P4 registers start: nothing counted, every SYN long
    uint16_t m_longPackets = 0;
    uint32_t m_synRatesKbps[SYN_RATES] = {SYN_RATE_NONE, SYN_RATE_NONE, SYN_RATE_NONE, SYN_RATE_NONE,
                                          SYN_RATE_NONE, SYN_RATE_NONE, SYN_RATE_NONE, SYN_RATE_NONE};
    uint64_t m_stamped = 0;
    uint64_t m_drops = 0;
    double m_classicDrop = 0;
    uint64_t m_classicDrops = 0;
    ns3::Ptr<ns3::UniformRandomVariable> m_uniform;
    ns3::TracedCallback<uint32_t, uint32_t, uint32_t> m_stampTrace;
};

} // namespace p4rcp

#endif

// A set of byte ranges [start, end), kept disjoint and merged: the hosts' hosts/src/rangeset.rs in C++,
// for the sender's acknowledged and to-be-retransmitted bytes and the receiver's out-of-order data.
#ifndef P4RCP_RANGE_SET_H
#define P4RCP_RANGE_SET_H

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace p4rcp
{

class RangeSet
{
  public:
    using Range = std::pair<uint64_t, uint64_t>;

    // Adds [s, e); returns how many bytes were not in the set before.
    uint64_t Insert(uint64_t s, uint64_t e)
    {
        if (s >= e)
        {
            return 0;
        }
        uint64_t ns = s;
        uint64_t ne = e;
        uint64_t covered = 0;
        // ranges starting at or before e that overlap or touch [s, e)
        auto it = m_map.upper_bound(e);
        while (it != m_map.begin())
        {
            auto prev = std::prev(it);
            if (prev->second < s)
            {
                break;
            }
            uint64_t lo = std::max(prev->first, s);
            uint64_t hi = std::min(prev->second, e);
            covered += hi > lo ? hi - lo : 0;
            ns = std::min(ns, prev->first);
            ne = std::max(ne, prev->second);
            it = m_map.erase(prev);
        }
        m_map[ns] = ne;
        return (e - s) - covered;
    }

    // Is every byte of [s, e) in the set?
    bool Contains(uint64_t s, uint64_t e) const
    {
        if (s >= e)
        {
            return true;
        }
        auto it = m_map.upper_bound(s);
        return it != m_map.begin() && std::prev(it)->second >= e;
    }

    // End of the contiguous run starting at `from` (`from` itself if it is not in the set).
    uint64_t RunEnd(uint64_t from) const
    {
        auto it = m_map.upper_bound(from);
        if (it != m_map.begin() && std::prev(it)->second > from)
        {
            return std::prev(it)->second;
        }
        return from;
    }

    // The parts of [s, e) not in the set, in order.
    std::vector<Range> Missing(uint64_t s, uint64_t e) const
    {
        std::vector<Range> out;
        uint64_t cur = s;
        auto it = m_map.upper_bound(s);
        if (it != m_map.begin())
        {
            cur = std::max(cur, std::prev(it)->second);
        }
        for (; it != m_map.end() && it->first < e; ++it)
        {
            if (it->first > cur)
            {
                out.emplace_back(cur, std::min(it->first, e));
            }
            cur = std::max(cur, it->second);
        }
        if (cur < e)
        {
            out.emplace_back(cur, e);
        }
        return out;
    }

    // Removes [s, e); returns how many bytes were in the set.
    uint64_t Remove(uint64_t s, uint64_t e)
    {
        if (s >= e)
        {
            return 0;
        }
        std::vector<Range> hit;
        for (auto it = m_map.lower_bound(e); it != m_map.begin();)
        {
            --it;
            if (it->second <= s)
            {
                break;
            }
            hit.push_back(*it);
        }
        uint64_t removed = 0;
        for (auto [rs, re] : hit)
        {
            m_map.erase(rs);
            removed += std::min(re, e) - std::max(rs, s);
            if (rs < s)
            {
                m_map[rs] = s;
            }
            if (re > e)
            {
                m_map[e] = re;
            }
        }
        return removed;
    }

    std::optional<Range> First() const
    {
        if (m_map.empty())
        {
            return std::nullopt;
        }
        return *m_map.begin();
    }

    bool Empty() const { return m_map.empty(); }

    // Removes everything below x.
    void TrimBelow(uint64_t x)
    {
        while (!m_map.empty() && m_map.begin()->first < x)
        {
            auto [rs, re] = *m_map.begin();
            m_map.erase(m_map.begin());
            if (re > x)
            {
                m_map[x] = re;
            }
        }
    }

    // The range holding byte x, if any.
    std::optional<Range> RangeOf(uint64_t x) const
    {
        auto it = m_map.upper_bound(x);
        if (it != m_map.begin() && std::prev(it)->second > x)
        {
            return *std::prev(it);
        }
        return std::nullopt;
    }

    const std::map<uint64_t, uint64_t>& Ranges() const { return m_map; }

  private:
    std::map<uint64_t, uint64_t> m_map; // start -> end; no two ranges overlap or touch
};

} // namespace p4rcp

#endif

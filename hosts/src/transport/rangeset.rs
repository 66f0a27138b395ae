//! A set of byte ranges `[start, end)`, kept disjoint and merged.

use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
pub struct RangeSet {
    /// start -> end; no two ranges overlap or touch.
    map: BTreeMap<u64, u64>,
}

impl RangeSet {
    pub fn new() -> RangeSet {
        RangeSet::default()
    }

    /// Add `[s, e)`; returns how many bytes were not in the set before.
    pub fn insert(&mut self, s: u64, e: u64) -> u64 {
        if s >= e {
            return 0;
        }
        let (mut ns, mut ne) = (s, e);
        let mut covered = 0u64;
        // ranges that start at or before e and could overlap or touch
        let overlapping: Vec<(u64, u64)> = self
            .map
            .range(..=e)
            .rev()
            .take_while(|&(_, &re)| re >= s)
            .map(|(&rs, &re)| (rs, re))
            .collect();
        for (rs, re) in overlapping {
            covered += re.min(e).saturating_sub(rs.max(s));
            ns = ns.min(rs);
            ne = ne.max(re);
            self.map.remove(&rs);
        }
        self.map.insert(ns, ne);
        (e - s) - covered
    }

    /// Is every byte of `[s, e)` in the set?
    pub fn contains(&self, s: u64, e: u64) -> bool {
        if s >= e {
            return true;
        }
        match self.map.range(..=s).next_back() {
            Some((_, &re)) => re >= e,
            None => false,
        }
    }

    /// End of the contiguous run starting at `from` (`from` itself if
    /// `from` is not in the set).
    pub fn run_end(&self, from: u64) -> u64 {
        match self.map.range(..=from).next_back() {
            Some((_, &re)) if re > from => re,
            _ => from,
        }
    }

    /// The parts of `[s, e)` not in the set, in order.
    pub fn missing(&self, s: u64, e: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut cur = s;
        if let Some((_, &re)) = self.map.range(..=s).next_back() {
            cur = cur.max(re);
        }
        for (&rs, &re) in self.map.range(s..e) {
            if rs > cur {
                out.push((cur, rs.min(e)));
            }
            cur = cur.max(re);
        }
        if cur < e {
            out.push((cur, e));
        }
        out
    }

    /// Remove `[s, e)`; returns how many bytes were in the set.
    pub fn remove(&mut self, s: u64, e: u64) -> u64 {
        if s >= e {
            return 0;
        }
        let hit: Vec<(u64, u64)> = self
            .map
            .range(..e)
            .rev()
            .take_while(|&(_, &re)| re > s)
            .map(|(&rs, &re)| (rs, re))
            .collect();
        let mut removed = 0;
        for (rs, re) in hit {
            self.map.remove(&rs);
            removed += re.min(e) - rs.max(s);
            if rs < s {
                self.map.insert(rs, s);
            }
            if re > e {
                self.map.insert(e, re);
            }
        }
        removed
    }

    /// The first range, if any.
    pub fn first(&self) -> Option<(u64, u64)> {
        self.map.iter().next().map(|(&a, &b)| (a, b))
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Remove everything below `x`.
    pub fn trim_below(&mut self, x: u64) {
        let below: Vec<(u64, u64)> = self.map.range(..x).map(|(&a, &b)| (a, b)).collect();
        for (rs, re) in below {
            self.map.remove(&rs);
            if re > x {
                self.map.insert(x, re);
            }
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.map.iter().map(|(&a, &b)| (a, b))
    }

    /// The range containing byte `x`, if any.
    pub fn range_of(&self, x: u64) -> Option<(u64, u64)> {
        match self.map.range(..=x).next_back() {
            Some((&rs, &re)) if re > x => Some((rs, re)),
            _ => None,
        }
    }

    #[cfg(test)]
    pub fn len_ranges(&self) -> usize {
        self.map.len()
    }

    #[cfg(test)]
    pub fn total_bytes(&self) -> u64 {
        self.map.iter().map(|(a, b)| b - a).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn insert_merges_and_counts_new_bytes() {
        let mut r = RangeSet::new();
        assert_eq!(r.insert(10, 20), 10);
        assert_eq!(r.insert(30, 40), 10);
        assert_eq!(r.insert(15, 35), 10); // 20..30 is new
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(10, 40)]);
        assert_eq!(r.insert(40, 50), 10); // touching merges
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(10, 50)]);
        assert_eq!(r.insert(0, 60), 20);
        assert_eq!(r.len_ranges(), 1);
        assert_eq!(r.insert(5, 6), 0);
    }

    #[test]
    fn queries() {
        let mut r = RangeSet::new();
        r.insert(0, 10);
        r.insert(20, 30);
        assert!(r.contains(0, 10));
        assert!(r.contains(22, 25));
        assert!(!r.contains(5, 25));
        assert_eq!(r.run_end(0), 10);
        assert_eq!(r.run_end(10), 10);
        assert_eq!(r.run_end(25), 30);
        assert_eq!(r.missing(0, 40), vec![(10, 20), (30, 40)]);
        assert_eq!(r.missing(5, 22), vec![(10, 20)]);
        assert_eq!(r.missing(12, 15), vec![(12, 15)]);
        assert_eq!(r.range_of(25), Some((20, 30)));
        assert_eq!(r.range_of(10), None);
        r.trim_below(25);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(25, 30)]);
    }

    /// Compare against a bitmap on random operations.
    #[test]
    fn matches_a_bitmap() {
        let mut rng = SmallRng::seed_from_u64(1);
        for _ in 0..200 {
            let mut r = RangeSet::new();
            let mut bits = [false; 200];
            for _ in 0..30 {
                let s = rng.gen_range(0..200u64);
                let e = rng.gen_range(s..=200u64);
                let new = bits[s as usize..e as usize].iter().filter(|b| !**b).count() as u64;
                assert_eq!(r.insert(s, e), new);
                bits[s as usize..e as usize].iter_mut().for_each(|b| *b = true);
                let (qs, qe) = {
                    let a = rng.gen_range(0..200u64);
                    (a, rng.gen_range(a..=200u64))
                };
                let all = bits[qs as usize..qe as usize].iter().all(|b| *b);
                assert_eq!(r.contains(qs, qe), all);
                let miss: u64 = r.missing(qs, qe).iter().map(|(a, b)| b - a).sum();
                let want = bits[qs as usize..qe as usize].iter().filter(|b| !**b).count() as u64;
                assert_eq!(miss, want);
                if rng.gen_bool(0.3) {
                    let a = rng.gen_range(0..200u64);
                    let b = rng.gen_range(a..=200u64);
                    let had = bits[a as usize..b as usize].iter().filter(|b| **b).count() as u64;
                    assert_eq!(r.remove(a, b), had);
                    bits[a as usize..b as usize].iter_mut().for_each(|b| *b = false);
                }
            }
            assert_eq!(r.total_bytes(), bits.iter().filter(|b| **b).count() as u64);
        }
    }
}

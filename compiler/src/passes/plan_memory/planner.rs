//! The arena planner of `tcc-plan-memory`, on plain intervals: offsets for
//! buffers with live ranges so that no two alive at the same op overlap,
//! the smallest arena of a few greedy orders, and the liveness lower bound.

/// One buffer to place: `bytes` alive from op `first` to op `last`
/// (inclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    pub bytes: u64,
    pub first: usize,
    pub last: usize,
}

impl Interval {
    fn overlaps(&self, other: &Interval) -> bool {
        self.first <= other.last && other.first <= self.last
    }
}

/// Offsets for every interval, the arena size and the liveness bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub offsets: Vec<u64>,
    pub arena_bytes: u64,
    pub lower_bound: u64,
}

fn align_up(value: u64, alignment: u64) -> Option<u64> {
    value
        .checked_add(alignment - 1)
        .map(|v| v / alignment * alignment)
}

/// The most bytes alive at any op.
pub fn live_bound(buffers: &[Interval]) -> Option<u64> {
    // Sweep over op positions: +bytes at `first`, -bytes after `last`.
    let mut events: Vec<(usize, bool, u64)> = Vec::with_capacity(buffers.len() * 2);
    for b in buffers {
        events.push((b.first, true, b.bytes));
        events.push((b.last.checked_add(1)?, false, b.bytes));
    }
    // At one position, ends (false) before starts (true).
    events.sort_by_key(|&(position, start, _)| (position, start));
    let (mut live, mut most) = (0u64, 0u64);
    for (_, start, bytes) in events {
        if start {
            live = live.checked_add(bytes)?;
            most = most.max(live);
        } else {
            live -= bytes;
        }
    }
    Some(most)
}

/// Places the buffers in `order`, each at the smallest aligned gap left by
/// the already placed buffers whose ranges overlap its own (best fit), or
/// after all of them.
fn place(buffers: &[Interval], order: &[usize], alignment: u64) -> Option<(Vec<u64>, u64)> {
    let mut offsets: Vec<Option<u64>> = vec![None; buffers.len()];
    let mut arena = 0u64;
    for &index in order {
        let buffer = buffers[index];
        let mut taken: Vec<(u64, u64)> = order
            .iter()
            .filter_map(|&other| {
                let offset = offsets[other]?;
                buffers[other]
                    .overlaps(&buffer)
                    .then_some((offset, offset + buffers[other].bytes))
            })
            .collect();
        taken.sort_unstable();
        let mut best: Option<(u64, u64)> = None; // (gap size, offset)
        let mut cursor = 0u64;
        for (start, end) in taken {
            if start >= cursor && start - cursor >= buffer.bytes {
                let gap = start - cursor;
                if best.is_none_or(|(size, _)| gap < size) {
                    best = Some((gap, cursor));
                }
            }
            cursor = cursor.max(align_up(end, alignment)?);
        }
        let offset = best.map_or(cursor, |(_, offset)| offset);
        arena = arena.max(offset.checked_add(buffer.bytes)?);
        offsets[index] = Some(offset);
    }
    Some((
        offsets.into_iter().map(Option::unwrap_or_default).collect(),
        align_up(arena, alignment)?,
    ))
}

/// Plans `buffers` with offsets aligned to `alignment` (a power of two);
/// `None` when the sizes overflow 64 bits.
pub fn plan(buffers: &[Interval], alignment: u64) -> Option<Plan> {
    let lower_bound = live_bound(buffers)?;
    let mut by_size: Vec<usize> = (0..buffers.len()).collect();
    by_size.sort_by_key(|&i| (std::cmp::Reverse(buffers[i].bytes), buffers[i].first, i));
    let mut by_start: Vec<usize> = (0..buffers.len()).collect();
    by_start.sort_by_key(|&i| (buffers[i].first, std::cmp::Reverse(buffers[i].bytes), i));
    // Longest-lived first, and largest size x lifetime first: buffers that
    // span much of the function (a concat's shared buffer) placed before
    // the short ones pack around them.
    let span = |i: usize| (buffers[i].last - buffers[i].first + 1) as u64;
    let mut by_lifetime: Vec<usize> = (0..buffers.len()).collect();
    by_lifetime.sort_by_key(|&i| {
        (
            std::cmp::Reverse(span(i)),
            std::cmp::Reverse(buffers[i].bytes),
            i,
        )
    });
    let mut by_breadth: Vec<usize> = (0..buffers.len()).collect();
    by_breadth.sort_by_key(|&i| {
        (
            std::cmp::Reverse(buffers[i].bytes.saturating_mul(span(i))),
            i,
        )
    });
    let mut best: Option<(Vec<u64>, u64)> = None;
    for order in [by_size, by_start, by_lifetime, by_breadth] {
        let candidate = place(buffers, &order, alignment)?;
        if best.as_ref().is_none_or(|(_, arena)| candidate.1 < *arena) {
            best = Some(candidate);
        }
    }
    let (offsets, arena_bytes) = best.unwrap_or_default();
    Some(Plan {
        offsets,
        arena_bytes,
        lower_bound,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(bytes: u64, first: usize, last: usize) -> Interval {
        Interval { bytes, first, last }
    }

    /// No two buffers alive at the same op share a byte.
    fn assert_disjoint(buffers: &[Interval], plan: &Plan) {
        for (i, a) in buffers.iter().enumerate() {
            for (j, b) in buffers.iter().enumerate().skip(i + 1) {
                if a.overlaps(b) {
                    let (oa, ob) = (plan.offsets[i], plan.offsets[j]);
                    assert!(
                        oa + a.bytes <= ob || ob + b.bytes <= oa,
                        "buffers {i} and {j} overlap: {plan:?}"
                    );
                }
            }
            assert!(plan.offsets[i] + a.bytes <= plan.arena_bytes);
        }
    }

    #[test]
    fn a_chain_reuses_two_slots() {
        // a -> b -> c -> d: each buffer lives across two ops.
        let buffers: Vec<Interval> = (0..4).map(|op| iv(1000, op, op + 1)).collect();
        let plan = plan(&buffers, 256).unwrap();
        assert_eq!(plan.lower_bound, 2000);
        assert_eq!(plan.arena_bytes, 2048);
        assert_eq!(plan.offsets[0], plan.offsets[2]);
        assert_disjoint(&buffers, &plan);
    }

    #[test]
    fn best_fit_fills_the_smallest_gap() {
        let buffers = [
            iv(4096, 0, 9),
            iv(1024, 0, 2),
            iv(2048, 0, 2),
            iv(1024, 3, 9),
            iv(512, 5, 6),
        ];
        let plan = plan(&buffers, 256).unwrap();
        assert_disjoint(&buffers, &plan);
        assert_eq!(plan.lower_bound, 4096 + 1024 + 2048);
        assert_eq!(plan.arena_bytes, 4096 + 1024 + 2048);
    }

    #[test]
    fn offsets_are_aligned_and_sizes_checked() {
        let buffers = [iv(10, 0, 3), iv(10, 1, 2), iv(10, 2, 3)];
        let plan = plan(&buffers, 4096).unwrap();
        assert!(plan.offsets.iter().all(|o| o % 4096 == 0));
        assert_disjoint(&buffers, &plan);
        assert_eq!(plan.lower_bound, 30);
        assert_eq!(plan.arena_bytes, 3 * 4096);
        assert!(super::plan(&[iv(u64::MAX, 0, 1), iv(u64::MAX, 0, 1)], 256).is_none());
    }

    #[test]
    fn random_plans_are_sound() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..200 {
            let count = 1 + next(40) as usize;
            let buffers: Vec<Interval> = (0..count)
                .map(|_| {
                    let first = next(50) as usize;
                    iv(1 + next(100_000), first, first + next(10) as usize)
                })
                .collect();
            let plan = plan(&buffers, 256).unwrap();
            assert_disjoint(&buffers, &plan);
            assert!(plan.arena_bytes >= plan.lower_bound);
        }
    }
}

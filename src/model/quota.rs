//! The rolling compute quota (SPEC §4): spends in the window, minus voids.

use serde::Serialize;

use crate::model::{GoalState, RunFacts, RunKind, Timestamp};

/// Where a goal's quota stands at a moment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub allowed_slots: u32,
    pub spent_slots: u32,
    pub window_hours: u32,
    /// When one more slot is available: `now` unless throttled.
    pub next_eligible_at: Timestamp,
}

impl Usage {
    pub fn throttled(&self) -> bool {
        self.spent_slots >= self.allowed_slots
    }
}

/// Spends that were not voided, in any window.
pub fn live_spends(gs: &GoalState) -> Vec<RunFacts<'_>> {
    let voided: std::collections::BTreeSet<&str> = gs
        .runs
        .all_facts()
        .filter(|r| r.kind == RunKind::Void)
        .filter_map(|r| r.spend)
        .collect();
    gs.runs
        .all_facts()
        .filter(|r| r.kind == RunKind::Spend && !voided.contains(r.id))
        .collect()
}

/// Spends that count: in the window `(now - window, now]` and not voided.
pub fn counted_spends(gs: &GoalState, now: Timestamp) -> Vec<RunFacts<'_>> {
    let window = i64::from(gs.goal.quota.window_hours) * 3600;
    let start = now.plus_seconds(-window);
    let mut spends: Vec<RunFacts<'_>> = live_spends(gs)
        .into_iter()
        .filter(|r| r.at > start && r.at <= now)
        .collect();
    spends.sort_by(|a, b| (a.at, a.id).cmp(&(b.at, b.id)));
    spends
}

/// Usage of the goal's quota at `now`, with `extra` slots about to be spent.
pub fn usage(gs: &GoalState, now: Timestamp) -> Usage {
    usage_with(gs, now, 0)
}

/// Like [`usage`], but `next_eligible_at` is when `wanted` more slots fit.
pub fn usage_with(gs: &GoalState, now: Timestamp, wanted: u32) -> Usage {
    let policy = &gs.goal.quota;
    let allowed = policy.allowed_slots();
    let spends = counted_spends(gs, now);
    // Summed wide: spends of any size (an imported 2^31) never wrap.
    let spent: u64 = spends.iter().map(|r| u64::from(r.slots.unwrap_or(1))).sum();
    let window = i64::from(policy.window_hours) * 3600;
    let need = u64::from(wanted.max(1));
    let mut next_eligible_at = now;
    if spent + need > u64::from(allowed) {
        // Walk the oldest spends out of the window until `need` slots fit.
        // (When `need` exceeds `allowed` nothing ever fits; callers refuse that first.)
        let mut remaining = spent;
        for r in &spends {
            remaining -= u64::from(r.slots.unwrap_or(1));
            next_eligible_at = r.at.plus_seconds(window);
            if remaining + need <= u64::from(allowed) {
                break;
            }
        }
    }
    Usage {
        allowed_slots: allowed,
        spent_slots: u32::try_from(spent).unwrap_or(u32::MAX),
        window_hours: policy.window_hours,
        next_eligible_at,
    }
}

#[cfg(test)]
mod tests {
    use crate::model::QuotaPolicy;

    /// As LoopX 2.1.1 (`quota.py`): compute clamped to [0, 1] and kept to
    /// two decimals, then `round(window_hours * 60 / slot_minutes *
    /// compute)`, both rounding half to even as Python's `round` does.
    #[test]
    fn slots_are_rounded_as_loopx_rounds_them() {
        let slots = |compute: f64, window_hours: u32, slot_minutes: u32| {
            QuotaPolicy {
                compute,
                window_hours,
                slot_minutes,
                ..QuotaPolicy::default()
            }
            .allowed_slots()
        };
        assert_eq!(slots(0.0021, 24, 1), 0, "0.0021 is 0.00");
        assert_eq!(
            slots(0.005, 24, 1),
            14,
            "0.005 (a float just above) is 0.01"
        );
        assert_eq!(slots(0.125, 24, 1), 173, "0.125 is 0.12: 172.8 slots");
        assert_eq!(slots(0.0051, 24, 1), 14, "0.0051 is 0.01");
        assert_eq!(slots(1.0, 1, 24), 2, "2.5 slots is 2");
        assert_eq!(slots(1.0, 1, 40), 2, "1.5 slots is 2");
        assert_eq!(slots(7.0, 24, 1), 1440, "clamped to 1");
    }
}

//! The per-session budget: the oldest checkpoints go first, their turns become
//! unrestorable, and what they alone used is removed.

use super::{Fixture, opts};
use crate::RecordOptions;

#[test]
fn the_oldest_checkpoints_go_first() {
    let f = Fixture::new();
    let budget = RecordOptions {
        budget_bytes: 3_000,
        ..opts()
    };
    f.write("shared.txt", "kept by every turn");
    for turn in 1..=6 {
        // 1,000 new bytes per turn, replacing the previous turn's.
        f.write("data.bin", &turn.to_string().repeat(1_000));
        let done = f
            .store
            .record("s1", &format!("t{turn}"), &f.root, &budget)
            .expect("record");
        assert_eq!(done.unrestorable, None, "turn {turn}: {done:?}");
        assert!(f.store.usage("s1").expect("usage") <= 3_000);
    }
    let turns = f.store.turns("s1").expect("turns");
    let restorable: Vec<_> = turns
        .iter()
        .filter(|t| t.unrestorable.is_none())
        .map(|t| t.turn_id.as_str())
        .collect();
    // The newest turns stay, a contiguous run ending with the last one.
    assert_eq!(restorable.last(), Some(&"t6"));
    assert!(
        !restorable.is_empty() && restorable.len() < 6,
        "{restorable:?}"
    );
    let first_kept = 6 - restorable.len() + 1;
    for t in &turns[..first_kept - 1] {
        let why = t.unrestorable.as_deref().expect("evicted");
        assert!(why.contains("checkpoint_budget_mb"), "{why}");
    }
    // An evicted turn says why; a kept one still restores.
    let evicted = f.restore("t1");
    assert!(evicted.unrestorable[0].1.contains("evicted"), "{evicted:?}");
    let kept = f.restore(restorable[0]);
    assert!(kept.unrestorable.is_empty(), "{kept:?}");
    assert_eq!(f.read("shared.txt").as_deref(), Some("kept by every turn"));
    let turn: usize = restorable[0][1..].parse().expect("number");
    assert_eq!(f.read("data.bin"), Some(turn.to_string().repeat(1_000)));
}

#[test]
fn a_checkpoint_alone_over_the_budget_is_unrestorable() {
    let f = Fixture::new();
    f.write("big.txt", &"y".repeat(5_000));
    let budget = RecordOptions {
        budget_bytes: 1_000,
        ..opts()
    };
    let done = f
        .store
        .record("s1", "t1", &f.root, &budget)
        .expect("record");
    assert!(done.unrestorable.is_some(), "{done:?}");
    assert!(f.store.usage("s1").expect("usage") <= 1_000);

    // The next turn starts from nothing recorded, and is restorable, loaded again or not.
    std::fs::remove_file(f.root.join("big.txt")).expect("remove");
    f.write("small.txt", "s");
    let done = f
        .store
        .record("s1", "t2", &f.root, &budget)
        .expect("record");
    assert_eq!(done.unrestorable, None, "{done:?}");
    assert_eq!(done.hashed, 1, "{done:?}");
    for unloaded in [false, true] {
        if unloaded {
            f.store.unload("s1");
        }
        let turns = f.store.turns("s1").expect("turns");
        assert_eq!(turns.len(), 2);
        assert!(
            turns[0]
                .unrestorable
                .as_deref()
                .is_some_and(|r| r.contains("evicted"))
        );
        assert_eq!(turns[1].unrestorable, None);
        f.write("small.txt", "changed");
        assert!(f.restore("t2").unrestorable.is_empty());
        assert_eq!(f.read("small.txt").as_deref(), Some("s"));
    }
}

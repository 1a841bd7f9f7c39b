//! The storage budget of a session (SPEC §18, `checkpoint_budget_mb`): while its objects
//! add up to more than the budget, the oldest restorable turn is evicted — its record
//! rewritten without a manifest (the turn becomes unrestorable, and says why) — and the
//! objects no remaining manifest refers to are removed. Objects nothing refers to at all
//! (left by a recording that stopped midway) go first.
//!
//! Order: the evicted records are written before any object is removed, so a crash in
//! between leaves only unreferenced objects, never a manifest without its content. A leaf
//! above [`session`](crate::session).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::digest::Digest;
use crate::error::Result;
use crate::manifest::Manifest;
use crate::session::SessionStore;
use crate::turns;

/// The reason an evicted turn gives.
pub fn evicted_reason(budget_bytes: u64) -> String {
    format!(
        "evicted: the session's checkpoints were over checkpoint_budget_mb ({} MiB)",
        budget_bytes / (1024 * 1024)
    )
}

/// Evicts the oldest turns until the store fits `budget_bytes`; returns their turn ids.
/// `known` is a manifest already in memory (spares parsing it again).
pub fn enforce(
    store: &mut SessionStore,
    budget_bytes: u64,
    known: Option<(Digest, &Arc<Manifest>)>,
) -> Result<Vec<String>> {
    let total = store.total_bytes();
    if total <= budget_bytes {
        return Ok(Vec::new());
    }
    // How many retained turns use each manifest, and how many distinct manifests use each
    // content object.
    let mut turns_of: HashMap<Digest, usize> = HashMap::new();
    for r in &store.index {
        if let Some(d) = r.manifest {
            *turns_of.entry(d).or_default() += 1;
        }
    }
    let mut contents_of: HashMap<Digest, Vec<Digest>> = HashMap::new();
    let mut refs: HashMap<Digest, usize> = HashMap::new();
    for &m in turns_of.keys() {
        let objects: HashSet<Digest> = match known {
            Some((d, manifest)) if d == m => manifest.objects().collect(),
            _ => store.read_manifest(m)?.objects().collect(),
        };
        for &o in &objects {
            *refs.entry(o).or_default() += 1;
        }
        contents_of.insert(m, objects.into_iter().collect());
    }
    let mut freed: Vec<Digest> = store
        .sizes
        .keys()
        .filter(|d| !turns_of.contains_key(d) && !refs.contains_key(d))
        .copied()
        .collect();
    let size = |d: &Digest| store.sizes.get(d).copied().unwrap_or(0);
    let mut left = total.saturating_sub(freed.iter().map(size).sum::<u64>());
    let mut evicted = Vec::new();
    for r in &store.index {
        if left <= budget_bytes {
            break;
        }
        let Some(m) = r.manifest else {
            continue;
        };
        evicted.push(r.seq);
        let users = turns_of.entry(m).or_default();
        *users = users.saturating_sub(1);
        if *users > 0 {
            continue;
        }
        // (A manifest's text may also be some file's content: freed only when unused as both.)
        if refs.get(&m).is_none_or(|&n| n == 0) {
            left = left.saturating_sub(size(&m));
            freed.push(m);
        }
        for o in contents_of.remove(&m).unwrap_or_default() {
            let n = refs.entry(o).or_default();
            *n = n.saturating_sub(1);
            if *n == 0 && turns_of.get(&o).is_none_or(|&t| t == 0) {
                left = left.saturating_sub(size(&o));
                freed.push(o);
            }
        }
    }
    let reason = evicted_reason(budget_bytes);
    let mut ids = Vec::new();
    for mut r in turns::load_seqs(&store.turns_dir, &evicted)? {
        r.manifest = None;
        r.unrestorable = Some(reason.clone());
        ids.push(r.turn_id.clone());
        store.put_record(r)?;
    }
    for d in freed {
        store.objects.remove(d)?;
        store.sizes.remove(&d);
    }
    Ok(ids)
}

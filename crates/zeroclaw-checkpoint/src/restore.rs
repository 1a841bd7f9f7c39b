//! Restoring the tree to a turn's start ([`restore`]), and completing a restore a crash
//! interrupted ([`complete_journal`]).
//!
//! A restore makes every path the manifest holds what it was (modified and deleted files
//! put back with their mode and mtime, symlinks re-made as links, directories re-made) and
//! removes what was created since — whatever changed it, a tool of the session or anything
//! else. Paths ignored by `.gitignore` are never touched: the manifest's `.gitignore`
//! files are put back first, so the rules in force are those of the turn start, and a
//! file that was ignored then is never taken for one created since.
//!
//! Every change goes through [`Tree`] (no symlink is ever followed). Order: the journal,
//! durably; the changes; the changes made durable (one `fsync` each for a few, one
//! `syncfs` for many); the journal removed. After a crash the journal is found and the
//! restore runs again, comparing every file's content (nothing is assumed from metadata),
//! until the tree matches. A leaf above the session store, the walk, the tree and the
//! journal.

use std::collections::BTreeSet;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::digest::Digest;
use crate::durable;
use crate::error::{Error, IoContext, Result};
use crate::escape;
use crate::journal::Journal;
use crate::limits::{FSYNC_EACH_UP_TO, MAX_RESTORE_WALK, RACY_NS};
use crate::manifest::{Content, Entry, Kind, Manifest};
use crate::objects::Objects;
use crate::ownership;
use crate::session::SessionStore;
use crate::tree::{Current, Tree, split};
use crate::walk::{self, FoundKind, WalkSpec};

/// What a restore did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    /// Paths (relative to the root) written back or removed.
    pub restored: Vec<String>,
    /// Paths that could not be put back, and why (the root itself when the whole turn
    /// cannot be restored).
    pub unrestorable: Vec<(String, String)>,
    /// Paths a rewind left alone because someone else changed them, and why
    /// ([`plan_own`], [`apply_own`]).
    pub conflicts: Vec<(String, String)>,
}

/// Restores `root` to the state recorded at turn `turn_id`'s start.
pub fn restore(
    store: &SessionStore,
    skip: Option<&Path>,
    turn_id: &str,
    root: &Path,
) -> Result<Restored> {
    let record = store
        .find(turn_id)?
        .ok_or_else(|| Error::UnknownTurn(turn_id.to_owned()))?;
    let root = root
        .canonicalize()
        .ctx(|| format!("resolve {}", root.display()))?;
    let root_text = escape::encode(root.as_os_str().as_bytes());
    let whole = |reason: String| Restored {
        unrestorable: vec![(root.display().to_string(), reason)],
        ..Restored::default()
    };
    if record.root != root_text {
        let then = escape::decode(&record.root).unwrap_or_default();
        return Ok(whole(format!(
            "the checkpoint is of another directory: {}",
            escape::display(&then)
        )));
    }
    let Some(digest) = record.manifest_digest()? else {
        let reason = record
            .unrestorable
            .unwrap_or_else(|| "no checkpoint content".to_owned());
        return Ok(whole(reason));
    };
    let manifest = store.read_manifest(digest)?;
    let journal_path = store.journal_path();
    // A journal left by a restore that failed in this process: its temporaries go.
    if let Ok(Some(old)) = Journal::read(&journal_path) {
        sweep_after(store, &old);
    }
    Journal {
        turn_id: turn_id.to_owned(),
        root: root_text,
        manifest: digest.to_hex(),
        only: None,
    }
    .write(&journal_path)?;
    let out = apply(
        &store.objects,
        skip,
        &root,
        &manifest,
        record.started_ns,
        false,
    )?;
    Journal::clear(&journal_path)?;
    Ok(out)
}

/// What a rewind that restores only its session's changes will do ([`plan_own`]).
pub enum OwnPlan {
    /// Nothing can be compared or restored: the report says why.
    Whole(Restored),
    /// These paths go back ([`apply_own`]); the rest are conflicts.
    Paths(Box<OwnPaths>),
}

pub struct OwnPaths {
    turn_id: String,
    root: PathBuf,
    root_text: String,
    digest: Digest,
    manifest: Manifest,
    started_ns: i64,
    decision: ownership::Decision,
}

impl OwnPaths {
    /// Whether the restore will change anything.
    pub fn touches_files(&self) -> bool {
        !self.decision.restore.is_empty()
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// Decides what a rewind to `turn_id` restores of `root`: only what the turns from
/// `turn_id` on (every later turn start the session recorded, rewound before or not)
/// changed and nobody changed since — or, with `force`, everything — back to its state at
/// `turn_id`'s start ([`ownership::decide`]); the rest becomes `conflicts`.
pub fn plan_own(
    store: &SessionStore,
    skip: Option<&Path>,
    turn_id: &str,
    root: &Path,
    force: bool,
) -> Result<OwnPlan> {
    let turns: Vec<String> = store
        .records()?
        .into_iter()
        .map(|r| r.turn_id)
        .filter(|t| !t.ends_with(ownership::END_SUFFIX))
        .skip_while(|t| t != turn_id)
        .collect();
    let record = store
        .find(turn_id)?
        .ok_or_else(|| Error::UnknownTurn(turn_id.to_owned()))?;
    let root = root
        .canonicalize()
        .ctx(|| format!("resolve {}", root.display()))?;
    let root_text = escape::encode(root.as_os_str().as_bytes());
    let whole = |reason: String| {
        OwnPlan::Whole(Restored {
            unrestorable: vec![(root.display().to_string(), reason)],
            ..Restored::default()
        })
    };
    if record.root != root_text {
        let then = escape::decode(&record.root).unwrap_or_default();
        return Ok(whole(format!(
            "the checkpoint is of another directory: {}",
            escape::display(&then)
        )));
    }
    let Some(digest) = record.manifest_digest()? else {
        let reason = record
            .unrestorable
            .unwrap_or_else(|| "no checkpoint content".to_owned());
        return Ok(whole(reason));
    };
    let manifest = store.read_manifest(digest)?;
    let decision = match ownership::decide(store, skip, &root, &manifest, &turns, force)? {
        Ok(d) => d,
        Err(reason) => return Ok(whole(reason)),
    };
    Ok(OwnPlan::Paths(Box::new(OwnPaths {
        turn_id: turn_id.to_owned(),
        root,
        root_text,
        digest,
        manifest,
        started_ns: record.started_ns,
        decision,
    })))
}

/// Carries out a [`plan_own`] plan, journaled like [`restore`] with the paths it may
/// touch.
pub fn apply_own(store: &SessionStore, plan: OwnPaths) -> Result<Restored> {
    let journal_path = store.journal_path();
    if let Ok(Some(old)) = Journal::read(&journal_path) {
        sweep_after(store, &old);
    }
    Journal {
        turn_id: plan.turn_id,
        root: plan.root_text,
        manifest: plan.digest.to_hex(),
        only: Some(
            plan.decision
                .restore
                .iter()
                .map(|p| escape::encode(p))
                .collect(),
        ),
    }
    .write(&journal_path)?;
    let mut out = apply_only(
        &store.objects,
        &plan.root,
        &plan.manifest,
        &plan.decision.restore,
        plan.started_ns,
        false,
    )?;
    Journal::clear(&journal_path)?;
    out.conflicts = plan.decision.conflicts;
    Ok(out)
}

/// Completes the restore a crash interrupted, if the session has a journal.
pub fn complete_journal(store: &SessionStore, skip: Option<&Path>) -> Result<Option<Restored>> {
    let journal_path = store.journal_path();
    let Some(journal) = Journal::read(&journal_path)? else {
        return Ok(None);
    };
    let root = escape::decode(&journal.root)
        .map(|b| PathBuf::from(std::ffi::OsStr::from_bytes(&b)))
        .ok_or_else(|| Error::Damaged("a restore journal with a bad root".into()))?;
    let digest = Digest::from_hex(&journal.manifest)
        .ok_or_else(|| Error::Damaged("a restore journal with a bad manifest name".into()))?;
    let manifest = store.read_manifest(digest)?;
    sweep_temps(&root, &manifest);
    let out = match &journal.only {
        None => apply(&store.objects, skip, &root, &manifest, 0, true)?,
        Some(only) => {
            let only = only
                .iter()
                .map(|p| escape::decode(p))
                .collect::<Option<BTreeSet<Vec<u8>>>>()
                .ok_or_else(|| Error::Damaged("a restore journal with a bad path".into()))?;
            apply_only(&store.objects, &root, &manifest, &only, 0, true)?
        }
    };
    Journal::clear(&journal_path)?;
    Ok(Some(out))
}

fn sweep_after(store: &SessionStore, journal: &Journal) {
    let root =
        escape::decode(&journal.root).map(|b| PathBuf::from(std::ffi::OsStr::from_bytes(&b)));
    let manifest = Digest::from_hex(&journal.manifest).and_then(|d| store.read_manifest(d).ok());
    if let (Some(root), Some(manifest)) = (root, manifest) {
        sweep_temps(&root, &manifest);
    }
}

/// Removes the temporaries an interrupted restore may have left next to the manifest's
/// files and symlinks.
fn sweep_temps(root: &Path, manifest: &Manifest) {
    let Ok(mut tree) = Tree::open(root) else {
        return;
    };
    for e in &manifest.entries {
        if !matches!(e.kind, Kind::Dir { .. }) {
            tree.remove_temp_of(&e.path);
        }
    }
}

struct Run<'a> {
    tree: Tree,
    objects: &'a Objects,
    /// Compare contents whatever the metadata says (after a crash).
    verify: bool,
    started_ns: i64,
    out: Restored,
    written: Vec<Vec<u8>>,
    /// Directories whose entries changed.
    touched: BTreeSet<Vec<u8>>,
}

fn apply(
    objects: &Objects,
    skip: Option<&Path>,
    root: &Path,
    manifest: &Manifest,
    started_ns: i64,
    verify: bool,
) -> Result<Restored> {
    let tree = Tree::open(root).ctx(|| format!("open {}", root.display()))?;
    let mut run = Run {
        tree,
        objects,
        verify,
        started_ns,
        out: Restored::default(),
        written: Vec::new(),
        touched: BTreeSet::new(),
    };
    // 1. The ignore rules of the turn start.
    for e in &manifest.entries {
        if split(&e.path).1 == b".gitignore" {
            run.ensure(e)?;
        }
    }
    // 2. What was created since goes, deepest first.
    run.remove_created(skip, root, manifest)?;
    // 3. Everything recorded, parents before children.
    for e in &manifest.entries {
        run.ensure(e)?;
    }
    run.make_durable(root);
    run.out.restored.sort();
    run.out.restored.dedup();
    Ok(run.out)
}

/// Makes exactly the paths `only` what `manifest` holds (removing those it does not
/// hold, deepest first; a directory still holding files stays), touching nothing else.
fn apply_only(
    objects: &Objects,
    root: &Path,
    manifest: &Manifest,
    only: &BTreeSet<Vec<u8>>,
    started_ns: i64,
    verify: bool,
) -> Result<Restored> {
    let tree = Tree::open(root).ctx(|| format!("open {}", root.display()))?;
    let mut run = Run {
        tree,
        objects,
        verify,
        started_ns,
        out: Restored::default(),
        written: Vec::new(),
        touched: BTreeSet::new(),
    };
    for path in only.iter().rev() {
        if manifest.get(path).is_some() {
            continue;
        }
        let current = match run.tree.current(path) {
            Ok(c) => c,
            Err(err) => {
                run.unrestorable(path, format!("cannot inspect it: {err}"));
                continue;
            }
        };
        let is_dir = matches!(current, Current::Dir(_));
        match current {
            Current::Absent => {}
            _ => match run.tree.remove(path, is_dir) {
                Ok(()) if is_dir => {
                    run.touched.insert(split(path).0.to_vec());
                }
                Ok(()) => run.changed(path, false),
                Err(e) if is_dir && e.raw_os_error() == Some(libc::ENOTEMPTY) => {}
                Err(e) => run.unrestorable(path, format!("cannot remove it: {e}")),
            },
        }
        crash_point()?;
    }
    for e in &manifest.entries {
        if only.contains(&*e.path) {
            run.ensure(e)?;
        }
    }
    run.make_durable(root);
    run.out.restored.sort();
    run.out.restored.dedup();
    Ok(run.out)
}

impl Run<'_> {
    fn unrestorable(&mut self, path: &[u8], reason: impl Into<String>) {
        self.out
            .unrestorable
            .push((escape::display(path), reason.into()));
    }

    fn changed(&mut self, path: &[u8], wrote: bool) {
        self.out.restored.push(escape::display(path));
        self.touched.insert(split(path).0.to_vec());
        if wrote {
            self.written.push(path.to_vec());
        }
    }

    fn remove_created(
        &mut self,
        skip: Option<&Path>,
        root: &Path,
        manifest: &Manifest,
    ) -> Result<()> {
        let spec = WalkSpec {
            root,
            skip,
            max_files: MAX_RESTORE_WALK,
            max_bytes: None,
            deadline: None,
        };
        let found = match walk::walk(&spec)? {
            Ok(found) => found,
            Err(stop) => {
                self.unrestorable(
                    root.as_os_str().as_bytes(),
                    format!("{}; files created since were not removed", stop.describe()),
                );
                return Ok(());
            }
        };
        for f in found.iter().rev() {
            if manifest.get(&f.path).is_some() {
                continue;
            }
            let is_dir = f.kind == FoundKind::Dir;
            match self.tree.remove(&f.path, is_dir) {
                Ok(()) if is_dir => {
                    self.touched.insert(split(&f.path).0.to_vec());
                }
                Ok(()) => self.changed(&f.path, false),
                // A directory still holding ignored files stays.
                Err(e) if is_dir && e.raw_os_error() == Some(libc::ENOTEMPTY) => {}
                Err(e) => self.unrestorable(&f.path, format!("cannot remove it: {e}")),
            }
            crash_point()?;
        }
        Ok(())
    }

    /// Makes `e.path` what `e` records.
    fn ensure(&mut self, e: &Entry) -> Result<()> {
        let path = &e.path;
        let current = match self.tree.current(path) {
            Ok(c) => c,
            Err(err) => {
                self.unrestorable(path, format!("cannot inspect it: {err}"));
                return Ok(());
            }
        };
        match &e.kind {
            Kind::Dir { mode } => match current {
                Current::Dir(m) => {
                    if m != *mode {
                        let _ = self.tree.chmod(path, *mode);
                    }
                }
                other => {
                    if other != Current::Absent
                        && let Err(err) = self.tree.remove(path, false)
                    {
                        self.unrestorable(path, format!("cannot remove what is there: {err}"));
                        return Ok(());
                    }
                    self.tree.forget(path);
                    match self.tree.make_dir(path, *mode) {
                        Ok(()) => {
                            // The umask applied to mkdir; the recorded bits are exact.
                            let _ = self.tree.chmod(path, *mode);
                            self.touched.insert(split(path).0.to_vec());
                        }
                        Err(err) => self.unrestorable(path, format!("cannot make it: {err}")),
                    }
                }
            },
            Kind::File {
                stat,
                content: Content::NotStored(why),
                ..
            } => {
                let same = matches!(current, Current::File(s, _)
                    if s.size == stat.size && s.mtime_ns == stat.mtime_ns);
                if !same {
                    self.unrestorable(path, why.describe());
                }
            }
            Kind::File {
                stat,
                mode,
                content: Content::Stored(d),
            } => {
                if let Current::File(s, m) = current {
                    let settled =
                        !self.verify && s == *stat && s.ctime_ns < self.started_ns - RACY_NS;
                    let same = settled
                        || (s.size == stat.size
                            && self
                                .tree
                                .read_file(path)
                                .is_ok_and(|b| Digest::of(&b) == *d));
                    if same {
                        if m != *mode {
                            let _ = self.tree.chmod(path, *mode);
                        }
                        return Ok(());
                    }
                }
                if !self.clear_dir(path, current) {
                    return Ok(());
                }
                let bytes = match self.objects.read(*d) {
                    Ok(b) => b,
                    Err(err) => {
                        self.unrestorable(path, format!("its stored content is lost: {err}"));
                        return Ok(());
                    }
                };
                match self.tree.write_file(path, &bytes, *mode, stat.mtime_ns) {
                    Ok(()) => self.changed(path, true),
                    Err(err) => self.unrestorable(path, format!("cannot write it: {err}")),
                }
                crash_point()?;
            }
            Kind::Symlink { target } => {
                if current == Current::Symlink
                    && self.tree.read_link(path).is_ok_and(|t| *t == **target)
                {
                    return Ok(());
                }
                if !self.clear_dir(path, current) {
                    return Ok(());
                }
                match self.tree.replace_symlink(path, target) {
                    Ok(()) => self.changed(path, false),
                    Err(err) => self.unrestorable(path, format!("cannot make the link: {err}")),
                }
                crash_point()?;
            }
        }
        Ok(())
    }

    /// Removes the (empty) directory standing where a file or link goes; false (and the
    /// path reported) when it cannot.
    fn clear_dir(&mut self, path: &[u8], current: Current) -> bool {
        if !matches!(current, Current::Dir(_)) {
            return true;
        }
        match self.tree.remove(path, true) {
            Ok(()) => true,
            Err(err) => {
                self.unrestorable(path, format!("a directory is in the way: {err}"));
                false
            }
        }
    }

    /// Makes the changes durable; a failure is logged (the journal is cleared anyway: the
    /// changes are in place, only their durability is in doubt).
    fn make_durable(&mut self, root: &Path) {
        let changes = self.written.len() + self.touched.len();
        if changes == 0 {
            return;
        }
        let mut each = changes <= FSYNC_EACH_UP_TO;
        if each {
            let written = std::mem::take(&mut self.written);
            let touched = std::mem::take(&mut self.touched);
            let ok = written.iter().all(|p| self.tree.sync_file(p).is_ok())
                && touched.iter().all(|d| self.tree.sync_dir(d).is_ok());
            each = ok;
        }
        if !each && let Err(e) = durable::syncfs(root) {
            tracing::warn!(root = %root.display(), "restored files not synced: {e}");
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Tests: the restore stops (as a crash would) after this many more changes.
    pub static CRASH_AFTER: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Tests only: fails when [`CRASH_AFTER`] runs out (leaving the journal in place).
fn crash_point() -> Result<()> {
    #[cfg(test)]
    {
        let left = CRASH_AFTER.with(|c| c.get());
        if let Some(n) = left {
            if n == 0 {
                return Err(Error::Damaged("simulated crash".into()));
            }
            CRASH_AFTER.with(|c| c.set(Some(n - 1)));
        }
    }
    Ok(())
}

//! What changed between two checkpoints of a tree (`session/diff`, SPEC §22 "What a turn
//! changed"): the regular files added, modified and deleted, each with its count of lines
//! added and removed and, for text up to [`PATCH_MAX_BYTES`] on both sides, a unified diff.
//!
//! A file is text when its content is UTF-8 without a NUL byte; other files (and those whose
//! content was not stored: over the size limit, unreadable) are listed without counts or
//! patch. Directories and symlinks are not listed. Lines are compared whole; the common
//! start and end are set aside first and the rest is matched by a longest common
//! subsequence when it is small enough ([`LCS_MAX_CELLS`]), else taken as replaced whole
//! (still a correct diff, only not the shortest).
//!
//! A leaf above the manifest and the objects.

use crate::Checkpoints;
use crate::digest::Digest;
use crate::error::{Error, Result};
use crate::manifest::{Content, Kind, Manifest};
use crate::objects::Objects;
use crate::ownership;
use crate::session::SessionStore;
use crate::turns::TurnRecord;

/// Files larger than this (either side) are listed without a patch.
pub const PATCH_MAX_BYTES: usize = 256 * 1024;
/// The most line pairs matched one by one; past it the changed middle is taken whole.
pub const LCS_MAX_CELLS: usize = 4_000_000;
/// Lines of context around each change in a patch.
const CONTEXT: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Added,
    Modified,
    Deleted,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Added => "added",
            Status::Modified => "modified",
            Status::Deleted => "deleted",
        }
    }
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// Relative to the recorded root, `/`-separated (lossily decoded when not UTF-8).
    pub path: String,
    pub status: Status,
    pub additions: u64,
    pub deletions: u64,
    /// The unified diff, for text files up to [`PATCH_MAX_BYTES`].
    pub patch: Option<String>,
}

/// What [`Checkpoints::diff`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Diffed {
    Files(Vec<FileChange>),
    /// The checkpoints cannot tell: why (a turn recorded unrestorable, a turn not ended).
    Unavailable(String),
}

impl Checkpoints {
    /// What turn `turn_id` changed (its start checkpoint to its end checkpoint), or with
    /// `None` what the whole session changed so far (the first turn's start to the latest
    /// checkpoint: a turn's end, or a rewind's restore). [`Error::UnknownTurn`] when the
    /// session has no checkpoint of `turn_id`.
    pub fn diff(&self, session_id: &str, turn_id: Option<&str>) -> Result<Diffed> {
        self.with_store(session_id, false, |store| {
            let Some(store) = store else {
                return match turn_id {
                    Some(t) => Err(Error::UnknownTurn(t.to_owned())),
                    None => Ok(Diffed::Files(Vec::new())),
                };
            };
            let (from, to) = match turn_id {
                Some(t) => {
                    let start = store
                        .find(t)?
                        .ok_or_else(|| Error::UnknownTurn(t.to_owned()))?;
                    let Some(end) = store.find(&ownership::end_id(t))? else {
                        return Ok(Diffed::Unavailable(format!(
                            "turn {t} has not ended (its end is not recorded)"
                        )));
                    };
                    (start, end)
                }
                None => {
                    let records = store.records()?;
                    let first = records
                        .iter()
                        .find(|r| ownership::is_turn_start(&r.turn_id) && r.manifest.is_some());
                    let last = records.iter().rev().find(|r| r.manifest.is_some());
                    match (first, last) {
                        (Some(f), Some(l)) => (f.clone(), l.clone()),
                        _ => return Ok(Diffed::Files(Vec::new())),
                    }
                }
            };
            let (Some(a), Some(b)) = (manifest_of(store, &from)?, manifest_of(store, &to)?) else {
                let why = [&from, &to]
                    .into_iter()
                    .find_map(|r| r.unrestorable.clone())
                    .unwrap_or_else(|| "not recorded".to_owned());
                return Ok(Diffed::Unavailable(format!(
                    "the checkpoint cannot tell: {why}"
                )));
            };
            Ok(Diffed::Files(between(&store.objects, &a, &b)?))
        })
    }
}

fn manifest_of(store: &SessionStore, record: &TurnRecord) -> Result<Option<Manifest>> {
    match record.manifest_digest()? {
        Some(d) => store.read_manifest(d).map(Some),
        None => Ok(None),
    }
}

/// A regular file's side of a change.
#[derive(Clone, Copy)]
enum Side {
    Absent,
    Stored(Digest),
    /// Content not stored; its size and mtime tell whether it changed.
    Unstored(u64, i64),
}

fn side_of(m: &Manifest, path: &[u8]) -> Side {
    match m.get(path).map(|e| &e.kind) {
        Some(Kind::File {
            content: Content::Stored(d),
            ..
        }) => Side::Stored(*d),
        Some(Kind::File { stat, .. }) => Side::Unstored(stat.size, stat.mtime_ns),
        _ => Side::Absent,
    }
}

/// The regular files that differ from `from` to `to`, in path order.
pub fn between(objects: &Objects, from: &Manifest, to: &Manifest) -> Result<Vec<FileChange>> {
    let mut paths: Vec<&[u8]> = from
        .entries
        .iter()
        .chain(to.entries.iter())
        .filter(|e| matches!(e.kind, Kind::File { .. }))
        .map(|e| &*e.path)
        .collect();
    paths.sort_unstable();
    paths.dedup();
    let mut out = Vec::new();
    for path in paths {
        let (a, b) = (side_of(from, path), side_of(to, path));
        let status = match (a, b) {
            (Side::Absent, Side::Absent) => continue,
            (Side::Absent, _) => Status::Added,
            (_, Side::Absent) => Status::Deleted,
            (Side::Stored(x), Side::Stored(y)) if x == y => continue,
            (Side::Unstored(s1, t1), Side::Unstored(s2, t2)) if (s1, t1) == (s2, t2) => continue,
            _ => Status::Modified,
        };
        let name = String::from_utf8_lossy(path).into_owned();
        let old = read_side(objects, a)?;
        let new = read_side(objects, b)?;
        let mut change = FileChange {
            path: name,
            status,
            additions: 0,
            deletions: 0,
            patch: None,
        };
        if let (Some(old), Some(new)) = (text_of(&old), text_of(&new)) {
            let lines_a = split_lines(old);
            let lines_b = split_lines(new);
            let ops = line_ops(&lines_a, &lines_b);
            change.additions = ops.iter().filter(|o| matches!(o, Op::Ins(_))).count() as u64;
            change.deletions = ops.iter().filter(|o| matches!(o, Op::Del(_))).count() as u64;
            if old.len() <= PATCH_MAX_BYTES && new.len() <= PATCH_MAX_BYTES {
                change.patch = Some(unified(&change.path, status, &lines_a, &lines_b, &ops));
            }
        }
        out.push(change);
    }
    Ok(out)
}

/// A side's bytes: empty for an absent file, `None` when its content was not stored.
fn read_side(objects: &Objects, side: Side) -> Result<Option<Vec<u8>>> {
    Ok(match side {
        Side::Absent => Some(Vec::new()),
        Side::Stored(d) => Some(objects.read(d)?),
        Side::Unstored(..) => None,
    })
}

/// The content as text, when it is.
fn text_of(bytes: &Option<Vec<u8>>) -> Option<&str> {
    let bytes = bytes.as_deref()?;
    if bytes.contains(&0) {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}

/// The lines, each with its `\n` (the last one may lack it).
fn split_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// Old line i and new line j are the same.
    Eq(usize, usize),
    Del(usize),
    Ins(usize),
}

/// The edit from `a` to `b`, in order.
fn line_ops(a: &[&str], b: &[&str]) -> Vec<Op> {
    let pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..]
        .iter()
        .rev()
        .zip(b[pre..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    let mut ops: Vec<Op> = (0..pre).map(|i| Op::Eq(i, i)).collect();
    let (n, m) = (ma.len(), mb.len());
    if n.saturating_mul(m) <= LCS_MAX_CELLS && n > 0 && m > 0 {
        // Longest common subsequence of the middle, lengths from the end so the walk
        // goes forward; one row of lengths at a time, the choices kept.
        let mut next = vec![0u32; m + 1];
        let mut row = vec![0u32; m + 1];
        // 0: same line, 1: drop the old line, 2: take the new line.
        let mut choice = vec![0u8; n * m];
        for i in (0..n).rev() {
            row[m] = 0;
            for j in (0..m).rev() {
                let (len, c) = if ma[i] == mb[j] {
                    (next[j + 1] + 1, 0)
                } else if next[j] >= row[j + 1] {
                    (next[j], 1)
                } else {
                    (row[j + 1], 2)
                };
                row[j] = len;
                choice[i * m + j] = c;
            }
            std::mem::swap(&mut next, &mut row);
        }
        let (mut i, mut j) = (0, 0);
        while i < n && j < m {
            match choice[i * m + j] {
                0 => {
                    ops.push(Op::Eq(pre + i, pre + j));
                    i += 1;
                    j += 1;
                }
                1 => {
                    ops.push(Op::Del(pre + i));
                    i += 1;
                }
                _ => {
                    ops.push(Op::Ins(pre + j));
                    j += 1;
                }
            }
        }
        ops.extend((i..n).map(|i| Op::Del(pre + i)));
        ops.extend((j..m).map(|j| Op::Ins(pre + j)));
    } else {
        ops.extend((0..n).map(|i| Op::Del(pre + i)));
        ops.extend((0..m).map(|j| Op::Ins(pre + j)));
    }
    ops.extend((0..suf).map(|k| Op::Eq(a.len() - suf + k, b.len() - suf + k)));
    ops
}

/// The unified diff of `ops` (`a/` and `b/` prefixes; `/dev/null` for a side that is not
/// there), hunks with [`CONTEXT`] lines around changes.
fn unified(path: &str, status: Status, a: &[&str], b: &[&str], ops: &[Op]) -> String {
    let mut out = String::new();
    out.push_str(&match status {
        Status::Added => "--- /dev/null\n".to_owned(),
        _ => format!("--- a/{path}\n"),
    });
    out.push_str(&match status {
        Status::Deleted => "+++ /dev/null\n".to_owned(),
        _ => format!("+++ b/{path}\n"),
    });
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| !matches!(o, Op::Eq(..)))
        .map(|(k, _)| k)
        .collect();
    let mut k = 0;
    while k < changed.len() {
        // A hunk: changes closer than twice the context share one.
        let first = changed[k];
        let mut last = first;
        while k + 1 < changed.len() && changed[k + 1] - last <= 2 * CONTEXT + 1 {
            k += 1;
            last = changed[k];
        }
        k += 1;
        let start = first.saturating_sub(CONTEXT);
        let end = (last + CONTEXT + 1).min(ops.len());
        let hunk = &ops[start..end];
        // Where the hunk starts on each side: the first line of that side in it, or
        // after what came before it.
        let before_a = ops[..start]
            .iter()
            .filter(|o| !matches!(o, Op::Ins(_)))
            .count();
        let before_b = ops[..start]
            .iter()
            .filter(|o| !matches!(o, Op::Del(_)))
            .count();
        let count_a = hunk.iter().filter(|o| !matches!(o, Op::Ins(_))).count();
        let count_b = hunk.iter().filter(|o| !matches!(o, Op::Del(_))).count();
        let at = |before: usize, count: usize| if count == 0 { before } else { before + 1 };
        out.push_str(&format!(
            "@@ -{},{count_a} +{},{count_b} @@\n",
            at(before_a, count_a),
            at(before_b, count_b)
        ));
        for op in hunk {
            let (mark, line) = match *op {
                Op::Eq(i, _) => (' ', a[i]),
                Op::Del(i) => ('-', a[i]),
                Op::Ins(j) => ('+', b[j]),
            };
            out.push(mark);
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(a: &str, b: &str) -> (u64, u64, String) {
        let (la, lb) = (split_lines(a), split_lines(b));
        let ops = line_ops(&la, &lb);
        let adds = ops.iter().filter(|o| matches!(o, Op::Ins(_))).count() as u64;
        let dels = ops.iter().filter(|o| matches!(o, Op::Del(_))).count() as u64;
        (adds, dels, unified("f", Status::Modified, &la, &lb, &ops))
    }

    #[test]
    fn one_changed_line_among_many() {
        let a: String = (1..=20).map(|i| format!("{i}\n")).collect();
        let b = a.replace("10\n", "ten\n");
        let (adds, dels, patch) = diff(&a, &b);
        assert_eq!((adds, dels), (1, 1));
        assert_eq!(
            patch,
            "--- a/f\n+++ b/f\n@@ -7,7 +7,7 @@\n 7\n 8\n 9\n-10\n+ten\n 11\n 12\n 13\n"
        );
    }

    #[test]
    fn added_and_emptied_files_and_a_missing_newline() {
        let (la, lb) = (split_lines(""), split_lines("x\ny"));
        let ops = line_ops(&la, &lb);
        assert_eq!(
            unified("n", Status::Added, &la, &lb, &ops),
            "--- /dev/null\n+++ b/n\n@@ -0,0 +1,2 @@\n+x\n+y\n\\ No newline at end of file\n"
        );
        let (adds, dels, patch) = diff("a\nb\nc\n", "");
        assert_eq!((adds, dels), (0, 3));
        assert!(patch.ends_with("@@ -1,3 +0,0 @@\n-a\n-b\n-c\n"), "{patch}");
    }

    #[test]
    fn far_apart_changes_make_two_hunks() {
        let a: String = (1..=30).map(|i| format!("{i}\n")).collect();
        let b: String = (1..=30)
            .filter_map(|i| match i {
                2 => Some("two\n".to_owned()),
                28 => None,
                29 => Some("29\nnew\n".to_owned()),
                _ => Some(format!("{i}\n")),
            })
            .collect();
        let (adds, dels, patch) = diff(&a, &b);
        assert_eq!((adds, dels), (2, 2));
        assert_eq!(patch.matches("@@ -").count(), 2, "{patch}");
        assert!(
            patch.contains("@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n"),
            "{patch}"
        );
    }
}

//! The manifest of one checkpoint ([`Manifest`]): every recorded entry of the tree — regular
//! files with `(size, mtime, ctime, inode, mode)` and their content's [`Digest`] (or why it
//! was not stored), directories, symlinks with their target — sorted by path.
//!
//! Its text form is one line per entry, the same tree always giving the same bytes, so an
//! unchanged tree's manifest is stored once (manifests are objects too, named by their
//! hash):
//!
//! ```text
//! zeroclaw-manifest 1
//! f SIZE MTIME CTIME INO MODE DIGEST PATH      a stored regular file
//! n SIZE MTIME CTIME INO MODE REASON PATH      a regular file whose content was not stored
//! d MODE PATH                                  a directory
//! l TARGET PATH                                a symlink (never followed)
//! ```
//!
//! Times are nanoseconds since the epoch, `MODE` is octal, paths and targets are
//! [`escape`]d and relative to the recorded root, `/`-separated. A leaf above
//! [`digest`](crate::digest) and [`escape`].

use crate::digest::Digest;
use crate::error::{Error, Result};
use crate::escape;

const HEADER: &str = "zeroclaw-manifest 1";

/// What identifies a file's content without reading it: when all of it is unchanged, the
/// content is taken as unchanged (the change time and inode catch `touch -r` and a file
/// replaced by a rename).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
}

/// Why a regular file's content was not stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotStored {
    /// Over the per-file limit.
    TooLarge,
    /// It could not be opened or read.
    Unreadable,
    /// It was replaced or vanished between the walk and the read.
    Vanished,
}

impl NotStored {
    fn token(self) -> &'static str {
        match self {
            NotStored::TooLarge => "too-large",
            NotStored::Unreadable => "unreadable",
            NotStored::Vanished => "vanished",
        }
    }

    fn from_token(token: &str) -> Option<NotStored> {
        match token {
            "too-large" => Some(NotStored::TooLarge),
            "unreadable" => Some(NotStored::Unreadable),
            "vanished" => Some(NotStored::Vanished),
            _ => None,
        }
    }

    /// The reason as a restore reports it.
    pub fn describe(self) -> &'static str {
        match self {
            NotStored::TooLarge => "over 10 MiB: its content was not stored",
            NotStored::Unreadable => "it could not be read when the checkpoint was taken",
            NotStored::Vanished => "it changed while the checkpoint was taken",
        }
    }
}

/// A regular file's content in a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    Stored(Digest),
    NotStored(NotStored),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    File {
        stat: Stat,
        mode: u32,
        content: Content,
    },
    Dir {
        mode: u32,
    },
    Symlink {
        target: Box<[u8]>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Relative to the root, `/`-separated, never empty.
    pub path: Box<[u8]>,
    pub kind: Kind,
}

/// The recorded tree, entries sorted by path bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    pub entries: Vec<Entry>,
}

impl Manifest {
    /// The digests of the stored contents it refers to.
    pub fn objects(&self) -> impl Iterator<Item = Digest> + '_ {
        self.entries.iter().filter_map(|e| match e.kind {
            Kind::File {
                content: Content::Stored(d),
                ..
            } => Some(d),
            _ => None,
        })
    }

    /// The entry at `path`, by binary search.
    pub fn get(&self, path: &[u8]) -> Option<&Entry> {
        self.entries
            .binary_search_by(|e| (*e.path).cmp(path))
            .ok()
            .map(|i| &self.entries[i])
    }

    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut out = String::with_capacity(64 + self.entries.len() * 120);
        out.push_str(HEADER);
        out.push('\n');
        for e in &self.entries {
            let path = escape::encode(&e.path);
            // Writing to a String cannot fail.
            let _ = match &e.kind {
                Kind::File {
                    stat,
                    mode,
                    content,
                } => {
                    let (tag, what) = match content {
                        Content::Stored(d) => ('f', d.to_hex()),
                        Content::NotStored(r) => ('n', r.token().to_owned()),
                    };
                    writeln!(
                        out,
                        "{tag} {} {} {} {} {mode:o} {what} {path}",
                        stat.size, stat.mtime_ns, stat.ctime_ns, stat.ino
                    )
                }
                Kind::Dir { mode } => writeln!(out, "d {mode:o} {path}"),
                Kind::Symlink { target } => {
                    writeln!(out, "l {} {path}", escape::encode(target))
                }
            };
        }
        out
    }

    /// Parses [`Manifest::to_text`]'s output; anything else is [`Error::Damaged`].
    pub fn parse(text: &str) -> Result<Manifest> {
        let mut lines = text.lines();
        if lines.next() != Some(HEADER) {
            return Err(Error::Damaged("a manifest without its header".into()));
        }
        let mut entries = Vec::new();
        for (n, line) in lines.enumerate() {
            let entry = parse_line(line)
                .ok_or_else(|| Error::Damaged(format!("manifest line {}: {line:?}", n + 2)))?;
            entries.push(entry);
        }
        if !entries.windows(2).all(|w| w[0].path < w[1].path) {
            return Err(Error::Damaged("manifest entries out of order".into()));
        }
        Ok(Manifest { entries })
    }
}

fn parse_line(line: &str) -> Option<Entry> {
    let (tag, rest) = line.split_once(' ')?;
    let kind_and_path = match tag {
        "f" | "n" => {
            let mut f = rest.splitn(7, ' ');
            let stat = Stat {
                size: f.next()?.parse().ok()?,
                mtime_ns: f.next()?.parse().ok()?,
                ctime_ns: f.next()?.parse().ok()?,
                ino: f.next()?.parse().ok()?,
            };
            let mode = u32::from_str_radix(f.next()?, 8).ok()?;
            let what = f.next()?;
            let content = if tag == "f" {
                Content::Stored(Digest::from_hex(what)?)
            } else {
                Content::NotStored(NotStored::from_token(what)?)
            };
            (
                Kind::File {
                    stat,
                    mode,
                    content,
                },
                f.next()?,
            )
        }
        "d" => {
            let (mode, path) = rest.split_once(' ')?;
            let mode = u32::from_str_radix(mode, 8).ok()?;
            (Kind::Dir { mode }, path)
        }
        "l" => {
            let (target, path) = rest.split_once(' ')?;
            let target = escape::decode(target)?.into_boxed_slice();
            (Kind::Symlink { target }, path)
        }
        _ => return None,
    };
    let (kind, path) = kind_and_path;
    let path = escape::decode(path)?;
    if !valid_relative(&path) {
        return None;
    }
    Some(Entry {
        path: path.into_boxed_slice(),
        kind,
    })
}

/// A non-empty relative path of normal components only (no `.`, `..`, empty parts, or a
/// leading `/`): restoring it can never leave the root.
pub fn valid_relative(path: &[u8]) -> bool {
    !path.is_empty()
        && path
            .split(|&b| b == b'/')
            .all(|c| !c.is_empty() && c != b"." && c != b".." && !c.contains(&0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        let stat = Stat {
            size: 3,
            mtime_ns: 1_700_000_000_123_456_789,
            ctime_ns: -5,
            ino: 42,
        };
        Manifest {
            entries: vec![
                Entry {
                    path: b"a b".to_vec().into(),
                    kind: Kind::Dir { mode: 0o755 },
                },
                Entry {
                    path: b"a b/big.bin".to_vec().into(),
                    kind: Kind::File {
                        stat,
                        mode: 0o644,
                        content: Content::NotStored(NotStored::TooLarge),
                    },
                },
                Entry {
                    path: b"a b/x\xff".to_vec().into(),
                    kind: Kind::File {
                        stat,
                        mode: 0o755,
                        content: Content::Stored(Digest::of(b"abc")),
                    },
                },
                Entry {
                    path: b"link".to_vec().into(),
                    kind: Kind::Symlink {
                        target: b"/etc/passwd".to_vec().into(),
                    },
                },
            ],
        }
    }

    #[test]
    fn text_round_trips() {
        let m = sample();
        let text = m.to_text();
        assert_eq!(Manifest::parse(&text).unwrap(), m);
        assert_eq!(m.objects().collect::<Vec<_>>(), vec![Digest::of(b"abc")]);
        assert!(m.get(b"link").is_some() && m.get(b"nope").is_none());
    }

    #[test]
    fn refuses_paths_that_leave_the_root_and_damaged_lines() {
        for bad in [
            "d 755 ../up",
            "d 755 /abs",
            "d 755 a//b",
            "d 755 a/./b",
            "f 1 2 3 4 644 nothex a",
            "x 1 a",
            "d 9 a",
        ] {
            let text = format!("{HEADER}\n{bad}\n");
            assert!(Manifest::parse(&text).is_err(), "{bad}");
        }
        assert!(Manifest::parse("d 755 a\n").is_err());
        let unsorted = format!("{HEADER}\nd 755 b\nd 755 a\n");
        assert!(Manifest::parse(&unsorted).is_err());
    }
}

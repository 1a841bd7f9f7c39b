//! What `/proc` says of a process (Linux): its parent, its state and when it started, and
//! the pids that exist. Read by the lineage check of local peers and by the reaper of
//! adopted orphans (SPEC §17.2): the lineage check inline (a few small reads), the reaper
//! off the async threads.

use std::io;

/// The fields of `/proc/PID/stat` the daemon reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub ppid: u32,
    /// `R`, `S`, `Z` (a zombie: exited, not yet reaped), …
    pub state: u8,
    /// Clock ticks after boot at which the process started.
    pub start: u64,
}

/// The longest `/proc/PID/stat` line read: the name is at most 64 bytes and the 50-odd
/// numbers after it a few hundred.
const STAT_BYTES: usize = 1024;

/// Reads `/proc/PID/stat`; an error when the process is gone (or hidden). One open and one
/// or two reads into a buffer on the stack: `std::fs::read` would first ask the size (which
/// procfs reports as 0) and then grow its buffer read by read, three times the system calls
/// on the path of every local connect (SPEC §17.2's lineage walk).
pub(crate) fn stat(pid: u32) -> io::Result<Stat> {
    use std::io::Read;
    let mut file = std::fs::File::open(format!("/proc/{pid}/stat"))?;
    let mut buf = [0u8; STAT_BYTES];
    let mut len = 0;
    while len < buf.len() {
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    parse_stat(&buf[..len]).ok_or_else(|| io::Error::other(format!("/proc/{pid}/stat: unreadable")))
}

/// `PID (COMM) STATE PPID …` with the start time the 22nd field; COMM may hold anything,
/// `)` and spaces included, so the fields are counted after its last `)`.
fn parse_stat(text: &[u8]) -> Option<Stat> {
    let close = text.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&text[close + 1..]).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = *fields.next()?.as_bytes().first()?;
    let ppid = fields.next()?.parse().ok()?;
    // After the parent: 17 fields (pgrp … itrealvalue, the 5th to the 21st) before the
    // start time.
    let start = fields.nth(17)?.parse().ok()?;
    Some(Stat { ppid, state, start })
}

/// The pids listed in `/proc` now.
pub(crate) fn pids() -> io::Result<Vec<u32>> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc")? {
        let Ok(entry) = entry else { continue };
        if let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) {
            pids.push(pid);
        }
    }
    Ok(pids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_name() {
        let line = b"42 (a) b (c)) S 7 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 1 2 3";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                ppid: 7,
                state: b'S',
                start: 98765
            })
        );
        assert_eq!(parse_stat(b"42 (sh) S 7"), None);
        assert_eq!(parse_stat(b"garbage"), None);
    }

    #[test]
    fn this_process_reads_as_the_child_of_its_parent() {
        let me = stat(std::process::id()).expect("own stat");
        assert_eq!(me.ppid, std::os::unix::process::parent_id());
        let parent = stat(me.ppid).expect("parent's stat");
        assert!(parent.start <= me.start);
        assert!(pids().expect("pids").contains(&std::process::id()));
    }
}

//! What a turn changed, in `zeroclaw chat` (SPEC §22): `/diff [N]` shows the files the
//! session changed (or the turn N prompts back changed), with their line counts and
//! patches, from `session/diff`; `/rewind` first lists the turns it takes back and the
//! files it will put back and asks before it goes (`/rewind --keep-files` says the files
//! stay).

use std::collections::BTreeMap;

use zeroclaw_client::ClientHandle;
use zeroclaw_client::protocol::diff::{DiffResult, FileDiff, FileStatus};
use zeroclaw_client::protocol::session::MessagesParams;
use zeroclaw_client::protocol::{Role, call};

use super::input::{Input, Read};
use super::ui::{Ui, message};

/// Transcript rows read per page while collecting turns.
const PAGE: u32 = 200;
/// Patch lines `/diff` prints in all (the counts of every file are always shown).
const PATCH_LINES: usize = 400;
/// Characters of a prompt in the rewind's list.
const PROMPT_CHARS: usize = 80;

/// The last `n` turns of the session, newest first: (turn id, its prompt). Fewer when the
/// session has fewer.
async fn last_turns(
    handle: &ClientHandle,
    session_id: &str,
    n: u32,
) -> Result<Vec<(String, String)>, String> {
    turns_back(handle, session_id, false, |turns| turns.len() == n as usize).await
}

/// Turns newest first, rewound ones too with `include_rewound`, until `enough` says so
/// (or the transcript's start).
async fn turns_back(
    handle: &ClientHandle,
    session_id: &str,
    include_rewound: bool,
    enough: impl Fn(&[(String, String)]) -> bool,
) -> Result<Vec<(String, String)>, String> {
    let mut turns: Vec<(String, String)> = Vec::new();
    let mut before: Option<i64> = None;
    loop {
        let params = MessagesParams {
            session_id: session_id.to_string().into(),
            mode: None,
            limit: Some(PAGE),
            before_seq: before,
            include_rewound: include_rewound.then_some(true),
        };
        let page = handle
            .call_typed::<call::SessionMessages>(&params)
            .await
            .map_err(|e| format!("session/messages failed: {}", message(&e)))?;
        for row in page.messages.iter().rev() {
            let (Role::User, Some(turn)) = (row.role, row.turn_id.as_deref()) else {
                continue;
            };
            if turns.last().map(|t| t.0.as_str()) != Some(turn) {
                turns.push((turn.to_string(), row.content.clone()));
            }
            if enough(&turns) {
                return Ok(turns);
            }
        }
        match page.messages.first() {
            Some(row) if page.has_more == Some(true) || page.messages.len() == PAGE as usize => {
                before = Some(row.seq)
            }
            _ => return Ok(turns),
        }
    }
}

fn letter(status: FileStatus) -> &'static str {
    match status {
        FileStatus::Added => "A",
        FileStatus::Modified => "M",
        FileStatus::Deleted => "D",
    }
}

/// `N files changed` and a line per file: `M path +a -d`.
fn summary(files: &[FileDiff]) -> String {
    let mut out = format!(
        "{} file{} changed\n",
        files.len(),
        if files.len() == 1 { "" } else { "s" }
    );
    for f in files {
        let counts = if f.patch.is_some() || f.additions + f.deletions > 0 {
            format!(" +{} -{}", f.additions, f.deletions)
        } else {
            " (binary or not stored: no line counts)".to_owned()
        };
        out.push_str(&format!("  {} {}{counts}\n", letter(f.status), f.path));
    }
    out
}

/// `/diff [N]`: the whole session's changes, or those of the turn N prompts back.
pub async fn show(handle: &ClientHandle, session_id: &str, ui: &mut Ui, n: Option<u32>) {
    let turn = match n {
        None => None,
        Some(n) => match last_turns(handle, session_id, n).await {
            Ok(turns) if turns.len() == n as usize => turns.last().map(|t| t.0.clone()),
            Ok(turns) => {
                ui.note(&format!("the session has only {} turns", turns.len()));
                return;
            }
            Err(why) => {
                ui.error(&why);
                return;
            }
        },
    };
    let result: DiffResult = match handle.diff(session_id, turn.as_deref()).await {
        Ok(r) => r,
        Err(e) => {
            ui.error(&format!("session/diff failed: {}", message(&e)));
            return;
        }
    };
    if let Some(why) = &result.unavailable {
        ui.note(&format!("no diff: {why}"));
        return;
    }
    let mut text = summary(&result.files);
    let mut budget = PATCH_LINES;
    for f in &result.files {
        let Some(patch) = &f.patch else { continue };
        for line in patch.lines() {
            if budget == 0 {
                break;
            }
            budget -= 1;
            let styled = if line.starts_with("+++") || line.starts_with("---") {
                ui.paint("\x1b[1m", line)
            } else if line.starts_with('+') {
                ui.paint("\x1b[32m", line)
            } else if line.starts_with('-') {
                ui.paint("\x1b[31m", line)
            } else if line.starts_with("@@") {
                ui.paint("\x1b[36m", line)
            } else {
                line.to_owned()
            };
            text.push_str(&styled);
            text.push('\n');
        }
    }
    if budget == 0 {
        text.push_str(&format!("… (patches cut at {PATCH_LINES} lines)\n"));
    }
    ui.print(&text);
}

/// Before `/rewind [--keep-files] N`: lists the turns it takes back and (unless the files
/// are kept) the files it will put back, and asks. `true` to go ahead: also when there
/// are not `n` turns (the rewind itself then says so).
pub async fn confirm_rewind(
    handle: &ClientHandle,
    session_id: &str,
    ui: &mut Ui,
    input: &mut Input,
    n: u32,
    restore_files: bool,
) -> bool {
    let turns = match last_turns(handle, session_id, n).await {
        Ok(turns) if turns.len() == n as usize => turns,
        Ok(_) => return true,
        Err(why) => {
            ui.error(&why);
            return false;
        }
    };
    let mut text = format!("/rewind takes back {n} turn(s):\n");
    for (_, prompt) in turns.iter().rev() {
        let one: String = prompt.replace('\n', " ");
        let clipped: String = one.chars().take(PROMPT_CHARS).collect();
        let more = if one.chars().count() > PROMPT_CHARS {
            "…"
        } else {
            ""
        };
        text.push_str(&format!("  > {clipped}{more}\n"));
    }
    if restore_files {
        // What the turns from the target on changed, those rewound earlier without their
        // files included (the rewind puts theirs back too), each path once.
        let target = turns.last().map(|t| t.0.clone()).unwrap_or_default();
        let since = match turns_back(handle, session_id, true, |t| {
            t.last().is_some_and(|(id, _)| *id == target)
        })
        .await
        {
            Ok(since) => since,
            Err(why) => {
                ui.error(&why);
                return false;
            }
        };
        let mut files: BTreeMap<String, FileStatus> = BTreeMap::new();
        let mut unknown = Vec::new();
        for (turn, _) in since.iter().rev() {
            match handle.diff(session_id, Some(turn)).await {
                Ok(r) => {
                    if let Some(why) = r.unavailable {
                        unknown.push(why);
                    }
                    for f in r.files {
                        files.entry(f.path).or_insert(f.status);
                    }
                }
                Err(e) => unknown.push(message(&e)),
            }
        }
        if files.is_empty() {
            text.push_str("no files to restore\n");
        } else {
            text.push_str(&format!("files it will restore ({}):\n", files.len()));
            for (path, status) in &files {
                let what = match status {
                    FileStatus::Added => "removed again",
                    FileStatus::Modified => "put back",
                    FileStatus::Deleted => "brought back",
                };
                text.push_str(&format!("  {} {path} ({what})\n", letter(*status)));
            }
        }
        for why in unknown {
            text.push_str(&format!("  (some changes unknown: {why})\n"));
        }
    } else {
        text.push_str("files stay as they are (--keep-files)\n");
    }
    ui.print(&text);
    match input.next("rewind? [y/N] ", false).await {
        Read::Line(line) if line.trim().eq_ignore_ascii_case("y") || line.trim() == "yes" => true,
        _ => {
            ui.note("rewind cancelled");
            false
        }
    }
}

//! A running tool's live output in `zeroclaw chat` (SPEC §22 "Live tool output"): the last
//! lines the command printed (`tool_output_chunk`) and how long it has been running, drawn
//! as one small block under the tool's line and redrawn in place as chunks arrive and the
//! clock ticks; erased before anything else is written and when the result comes. Only on a
//! terminal: piped output gets the result alone.

use std::collections::VecDeque;
use std::time::Instant;

/// Output lines the block shows.
const TAIL_LINES: usize = 3;
/// Characters of one shown line.
const LINE_CHARS: usize = 120;

/// The block of the tool call running now, if any.
#[derive(Default)]
pub struct LiveOutput {
    running: Option<Running>,
    /// Lines of the block on the screen now (0: nothing drawn).
    drawn: usize,
}

struct Running {
    call_id: String,
    /// From the block's first drawing: a call waiting for approval is not running yet.
    started: Option<Instant>,
    tail: VecDeque<String>,
    /// The last line, while it has no newline yet.
    partial: String,
}

impl LiveOutput {
    /// A tool call started (its line is printed): its output is shown from now on.
    pub fn start(&mut self, call_id: &str) {
        self.running = Some(Running {
            call_id: call_id.to_owned(),
            started: None,
            tail: VecDeque::new(),
            partial: String::new(),
        });
    }

    /// Whether a call's block is shown (the clock needs redrawing).
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Takes a piece of the call's output; `false` when it is not the running call's.
    pub fn chunk(&mut self, call_id: &str, text: &str) -> bool {
        let Some(r) = self.running.as_mut().filter(|r| r.call_id == call_id) else {
            return false;
        };
        for piece in text.split_inclusive('\n') {
            r.partial.push_str(piece.trim_end_matches(['\n', '\r']));
            if piece.ends_with('\n') {
                r.tail.push_back(std::mem::take(&mut r.partial));
                while r.tail.len() > TAIL_LINES {
                    r.tail.pop_front();
                }
            }
        }
        true
    }

    /// The call ended (its result came): the block goes.
    pub fn finish(&mut self) {
        self.running = None;
    }

    /// What erases the block drawn now (the cursor ends where the block started).
    pub fn erase(&mut self) -> String {
        let mut out = String::new();
        if self.drawn > 0 {
            out.push_str("\r\x1b[K");
            for _ in 1..self.drawn {
                out.push_str("\x1b[1A\x1b[K");
            }
        }
        self.drawn = 0;
        out
    }

    /// The block as it is now (empty when no call runs), `paint` styling each line; the
    /// cursor stays at the end of its last line.
    pub fn draw(&mut self, paint: impl Fn(&str) -> String) -> String {
        let Some(r) = &mut self.running else {
            return String::new();
        };
        let started = *r.started.get_or_insert_with(Instant::now);
        let mut lines: Vec<String> = r.tail.iter().cloned().collect();
        if !r.partial.is_empty() {
            lines.push(r.partial.clone());
        }
        let skip = lines.len().saturating_sub(TAIL_LINES);
        let mut shown: Vec<String> = lines[skip..]
            .iter()
            .map(|l| paint(&format!("  │ {}", clip(l))))
            .collect();
        shown.push(paint(&format!(
            "  ⏱ running {:.1} s",
            started.elapsed().as_secs_f64()
        )));
        self.drawn = shown.len();
        shown.join("\n")
    }
}

/// At most [`LINE_CHARS`] characters, tabs as spaces and no control characters.
fn clip(line: &str) -> String {
    let clean: String = line
        .chars()
        .map(|c| if c == '\t' { ' ' } else { c })
        .filter(|c| !c.is_control())
        .collect();
    if clean.chars().count() > LINE_CHARS {
        let mut cut: String = clean.chars().take(LINE_CHARS - 1).collect();
        cut.push('…');
        cut
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_lines_and_erases_what_it_drew() {
        let mut live = LiveOutput::default();
        assert!(!live.chunk("c1", "nobody runs\n"));
        live.start("c1");
        assert!(live.chunk("c1", "1\n2\n3\n4\npart"));
        assert!(!live.chunk("c2", "other call\n"));
        let block = live.draw(|s| s.to_owned());
        let lines: Vec<&str> = block.lines().collect();
        assert_eq!(lines[..3], ["  │ 3", "  │ 4", "  │ part"]);
        assert!(lines[3].starts_with("  ⏱ running "), "{block}");
        assert_eq!(
            live.erase(),
            "\r\x1b[K\x1b[1A\x1b[K\x1b[1A\x1b[K\x1b[1A\x1b[K"
        );
        assert_eq!(live.erase(), "");
        live.finish();
        assert_eq!(live.draw(|s| s.to_owned()), "");
    }
}

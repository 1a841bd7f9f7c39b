//! Markdown for the terminal, as streamed text arrives: fenced code blocks get a gutter,
//! headings and emphasis are styled (markers removed), list bullets become `•`, quotes
//! and rules are drawn. Lines are rendered when they end, except that plain paragraph
//! text is written at once up to the first character that could start inline markup.
//! Block state (inside a fence or not) is kept across lines; the inline part of each line
//! is parsed with `pulldown-cmark`. Table rows (`| a | b |`) are held until the table
//! ends, then drawn with aligned columns (SPEC §22, issue 46).

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

const RESET: &str = "\x1b[0m";
const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const ITALIC: &str = "\x1b[3m";
const UNDERLINE: &str = "\x1b[4m";
const STRIKE: &str = "\x1b[9m";
const CODE: &str = "\x1b[36m";
const HEADING: &str = "\x1b[1;35m";

/// Renders streamed markdown line by line.
pub struct Markdown {
    color: bool,
    /// The fence (```` ``` ```` or `~~~`, with its length) of the open code block.
    fence: Option<String>,
    /// Text of the line not finished yet (and not written yet).
    pending: String,
    /// The start of the current line was written already (a paragraph).
    started: bool,
    /// Rows of the table being read (drawn when a line that is not a row comes).
    table: Vec<String>,
}

/// Characters that may begin inline markup: text before the first of them renders as is.
const INLINE_MARKUP: [char; 9] = ['*', '_', '`', '[', '<', '~', '\\', '!', '&'];

impl Markdown {
    pub fn new(color: bool) -> Markdown {
        Markdown {
            color,
            fence: None,
            pending: String::new(),
            started: false,
            table: Vec::new(),
        }
    }

    /// Adds streamed text; returns the rendering of every line it completed.
    pub fn push(&mut self, text: &str) -> String {
        self.pending.push_str(text);
        let mut out = String::new();
        while let Some(end) = self.pending.find('\n') {
            let line: String = self.pending.drain(..=end).collect();
            let line = line.trim_end_matches(['\n', '\r']);
            if std::mem::take(&mut self.started) {
                out.push_str(&self.rest_of_line(line));
            } else if self.fence.is_none() && is_table_row(line) {
                self.table.push(line.to_string());
                continue;
            } else {
                out.push_str(&self.flush_table());
                out.push_str(&self.line(line));
            }
            out.push('\n');
        }
        out.push_str(&self.plain_prefix());
        out
    }

    /// Writes the unfinished line up to its first possible markup, when it is paragraph
    /// text (anything that may start a block waits for the end of its line).
    fn plain_prefix(&mut self) -> String {
        if self.fence.is_some() || self.pending.is_empty() {
            return String::new();
        }
        if !self.started && !self.table.is_empty() {
            // The table ends before this line: drawn once the line is known not to be a
            // row (at its end).
            return String::new();
        }
        if !self.started {
            let first = self.pending.chars().next().unwrap_or(' ');
            if !first.is_alphabetic() {
                return String::new();
            }
            self.started = true;
        }
        let end = self
            .pending
            .find(INLINE_MARKUP)
            .unwrap_or(self.pending.len());
        self.pending.drain(..end).collect()
    }

    /// The remainder of a line whose start was written: inline markup only.
    fn rest_of_line(&self, rest: &str) -> String {
        let trimmed = rest.trim_start();
        let space = &rest[..rest.len() - trimmed.len()];
        format!("{space}{}", self.inline(trimmed, ""))
    }

    /// Renders the unfinished line (without a newline) and forgets the block state: the
    /// message ended.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        let out = if rest.is_empty() {
            self.flush_table().trim_end_matches('\n').to_string()
        } else if self.started {
            self.rest_of_line(&rest)
        } else if self.fence.is_none() && is_table_row(&rest) {
            self.table.push(rest);
            self.flush_table().trim_end_matches('\n').to_string()
        } else {
            let table = self.flush_table();
            format!("{table}{}", self.line(&rest))
        };
        self.fence = None;
        self.started = false;
        out
    }

    /// The table read so far, drawn with aligned columns (each line ending in `\n`);
    /// empty when there is none.
    fn flush_table(&mut self) -> String {
        let rows = std::mem::take(&mut self.table);
        if rows.is_empty() {
            return String::new();
        }
        let cells: Vec<Vec<String>> = rows.iter().map(|r| split_row(r)).collect();
        // The `|---|:--:|` line under the header, if any, gives the alignment.
        let rule_at = cells
            .iter()
            .position(|r| r.iter().all(|c| is_align_cell(c)));
        let align: Vec<Align> = rule_at
            .map(|i| cells[i].iter().map(|c| align_of(c)).collect())
            .unwrap_or_default();
        let shown: Vec<Option<Vec<String>>> = cells
            .iter()
            .enumerate()
            .map(|(i, row)| {
                (Some(i) != rule_at).then(|| row.iter().map(|c| self.inline(c, "")).collect())
            })
            .collect();
        let columns = cells.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0usize; columns];
        for row in shown.iter().flatten() {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(visible_width(cell));
            }
        }
        let mut out = String::new();
        for (i, row) in shown.iter().enumerate() {
            let Some(row) = row else {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                out.push_str(&self.paint(DIM, &rule.join("─┼─")));
                out.push('\n');
                continue;
            };
            let header = rule_at == Some(i + 1);
            let mut line = Vec::with_capacity(columns);
            for (c, width) in widths.iter().enumerate() {
                let cell = row.get(c).map_or("", String::as_str);
                let pad = " ".repeat(width.saturating_sub(visible_width(cell)));
                let cell = if header && self.color {
                    format!("{BOLD}{cell}{RESET}")
                } else {
                    cell.to_string()
                };
                line.push(match align.get(c).copied().unwrap_or(Align::Left) {
                    Align::Right => format!("{pad}{cell}"),
                    Align::Center => {
                        let half = pad.len() / 2;
                        format!("{}{cell}{}", &pad[..half], &pad[half..])
                    }
                    Align::Left => format!("{cell}{pad}"),
                });
            }
            let bar = self.paint(DIM, " │ ");
            out.push_str(line.join(&bar).trim_end());
            out.push('\n');
        }
        out
    }

    fn paint(&self, style: &str, text: &str) -> String {
        if self.color {
            format!("{style}{text}{RESET}")
        } else {
            text.to_string()
        }
    }

    fn line(&mut self, line: &str) -> String {
        let trimmed = line.trim_start();
        if let Some(fence) = &self.fence {
            if trimmed.starts_with(fence.as_str()) && trimmed[fence.len()..].trim().is_empty() {
                self.fence = None;
                return self.paint(DIM, "  ╰─");
            }
            return format!("{}{}", self.paint(DIM, "  │ "), self.paint(CODE, line));
        }
        if let Some(fence) = fence_of(trimmed) {
            let lang = trimmed[fence.len()..].trim();
            self.fence = Some(fence);
            return self.paint(DIM, format!("  ╭─ {lang}").trim_end());
        }
        let indent = &line[..line.len() - trimmed.len()];
        if let Some((level, text)) = heading(trimmed) {
            let style = if level == 1 {
                format!("{HEADING}{UNDERLINE}")
            } else {
                HEADING.to_string()
            };
            return self.inline(text, &style);
        }
        if is_rule(trimmed) {
            return self.paint(DIM, "────────────────────────────────");
        }
        if let Some(rest) = trimmed
            .strip_prefix("> ")
            .or(trimmed.strip_prefix('>').filter(|r| r.is_empty()))
        {
            return format!("{}{}", self.paint(DIM, "│ "), self.inline(rest, ""));
        }
        if let Some(rest) = bullet(trimmed) {
            return format!("{indent}• {}", self.inline(rest, ""));
        }
        if let Some((number, rest)) = ordered(trimmed) {
            return format!("{indent}{number} {}", self.inline(rest, ""));
        }
        format!("{indent}{}", self.inline(trimmed, ""))
    }

    /// Inline markdown of one line (`base` = the style of the whole line).
    fn inline(&self, text: &str, base: &str) -> String {
        let source = escape_block_start(text);
        let mut out = String::new();
        let mut styles: Vec<&str> = Vec::new();
        if self.color && !base.is_empty() {
            out.push_str(base);
        }
        let mut links: Vec<String> = Vec::new();
        for event in Parser::new_ext(&source, Options::ENABLE_STRIKETHROUGH) {
            match event {
                Event::Text(t) => out.push_str(&t),
                Event::Code(c) => {
                    if self.color {
                        out.push_str(CODE);
                        out.push_str(&c);
                        out.push_str(RESET);
                        out.push_str(base);
                        styles.iter().for_each(|s| out.push_str(s));
                    } else {
                        out.push('`');
                        out.push_str(&c);
                        out.push('`');
                    }
                }
                Event::SoftBreak | Event::HardBreak => out.push(' '),
                Event::Html(h) | Event::InlineHtml(h) => out.push_str(&h),
                Event::Start(tag) => {
                    let style = match tag {
                        Tag::Strong => BOLD,
                        Tag::Emphasis => ITALIC,
                        Tag::Strikethrough => STRIKE,
                        Tag::Link { dest_url, .. } => {
                            links.push(dest_url.to_string());
                            UNDERLINE
                        }
                        _ => continue,
                    };
                    styles.push(style);
                    if self.color {
                        out.push_str(style);
                    }
                }
                Event::End(end) => {
                    if !matches!(
                        end,
                        TagEnd::Strong | TagEnd::Emphasis | TagEnd::Strikethrough | TagEnd::Link
                    ) {
                        continue;
                    }
                    styles.pop();
                    if self.color {
                        out.push_str(RESET);
                        out.push_str(base);
                        styles.iter().for_each(|s| out.push_str(s));
                    }
                    if end == TagEnd::Link
                        && let Some(url) = links.pop()
                        && !out.ends_with(&url)
                    {
                        out.push_str(&self.paint(DIM, &format!(" ({url})")));
                        if self.color {
                            out.push_str(base);
                        }
                    }
                }
                _ => {}
            }
        }
        if self.color && !base.is_empty() {
            out.push_str(RESET);
        }
        out
    }
}

/// How a table column is aligned (`:--`, `--:`, `:-:`).
#[derive(Clone, Copy)]
enum Align {
    Left,
    Right,
    Center,
}

/// A line of a pipe table: starts with `|` and has another `|` after it.
fn is_table_row(line: &str) -> bool {
    let t = line.trim();
    t.len() >= 2 && t.starts_with('|') && t[1..].contains('|')
}

/// The cells of a table row, trimmed (`\|` stays a `|` inside its cell).
fn split_row(line: &str) -> Vec<String> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t
        .strip_suffix('|')
        .filter(|r| !r.ends_with('\\'))
        .unwrap_or(t);
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('|');
                chars.next();
            }
            '|' => cells.push(std::mem::take(&mut cell).trim().to_string()),
            c => cell.push(c),
        }
    }
    cells.push(cell.trim().to_string());
    cells
}

/// A cell of the line under a table's header: `---`, `:--`, `--:`, `:-:`.
fn is_align_cell(cell: &str) -> bool {
    let inner = cell.trim_start_matches(':').trim_end_matches(':');
    !inner.is_empty() && inner.chars().all(|c| c == '-')
}

fn align_of(cell: &str) -> Align {
    match (cell.starts_with(':'), cell.ends_with(':')) {
        (true, true) => Align::Center,
        (false, true) => Align::Right,
        _ => Align::Left,
    }
}

/// Characters shown on the terminal (colour escapes not counted).
fn visible_width(text: &str) -> usize {
    let mut n = 0;
    let mut escape = false;
    for c in text.chars() {
        match (escape, c) {
            (false, '\x1b') => escape = true,
            (true, 'm') => escape = false,
            (true, _) => {}
            (false, _) => n += 1,
        }
    }
    n
}

/// The fence a line opens with: three or more backticks or tildes.
fn fence_of(line: &str) -> Option<String> {
    let ch = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = line.chars().take_while(|c| *c == ch).count();
    (n >= 3).then(|| ch.to_string().repeat(n))
}

/// `## Title` → (2, "Title").
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &line[level..];
    if rest.is_empty() {
        return Some((level, ""));
    }
    rest.strip_prefix(' ')
        .map(|text| (level, text.trim().trim_end_matches('#').trim_end()))
}

/// `---`, `***`, `___` (three or more, spaces allowed).
fn is_rule(line: &str) -> bool {
    let chars: Vec<char> = line.chars().filter(|c| !c.is_whitespace()).collect();
    chars.len() >= 3 && ['-', '*', '_'].iter().any(|m| chars.iter().all(|c| c == m))
}

/// `- item`, `* item`, `+ item` → "item".
fn bullet(line: &str) -> Option<&str> {
    ["- ", "* ", "+ "]
        .iter()
        .find_map(|marker| line.strip_prefix(marker))
}

/// `12. item` → ("12.", "item").
fn ordered(line: &str) -> Option<(&str, &str)> {
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 || digits > 9 {
        return None;
    }
    let after = &line[digits..];
    let marker = after.chars().next().filter(|c| *c == '.' || *c == ')')?;
    let rest = after[1..].strip_prefix(' ')?;
    let _ = marker;
    Some((&line[..digits + 1], rest))
}

/// Text parsed as inline only: a start that `pulldown-cmark` would read as a block (a
/// list marker, a heading, a quote, indentation) is escaped.
fn escape_block_start(text: &str) -> String {
    let text = text.trim_start();
    let block = bullet(text).is_some()
        || ordered(text).is_some()
        || heading(text).is_some()
        || text.starts_with('>')
        || fence_of(text).is_some()
        || is_rule(text);
    if !block {
        return text.to_string();
    }
    let digits = text.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 {
        // `2024. year` → `2024\. year`.
        format!("{}\\{}", &text[..digits], &text[digits..])
    } else {
        format!("\\{text}")
    }
}

#[cfg(test)]
mod tests {
    use super::Markdown;

    fn plain(text: &str) -> String {
        let mut md = Markdown::new(false);
        let mut out = md.push(text);
        out.push_str(&md.finish());
        out
    }

    #[test]
    fn code_blocks_get_a_gutter_across_chunks() {
        let mut md = Markdown::new(false);
        let mut out = md.push("Here:\n``");
        out.push_str(&md.push("`rust\nlet x = 1;\n# not a heading\n``"));
        out.push_str(&md.push("`\ndone"));
        out.push_str(&md.finish());
        assert_eq!(
            out,
            "Here:\n  ╭─ rust\n  │ let x = 1;\n  │ # not a heading\n  ╰─\ndone"
        );
    }

    #[test]
    fn paragraph_text_is_written_before_its_line_ends() {
        let mut md = Markdown::new(false);
        assert_eq!(md.push("working "), "working ");
        assert_eq!(md.push("on it, **bo"), "on it, ");
        assert_eq!(md.push("ld** then"), "");
        assert_eq!(md.push(" more\n- item"), "bold then more\n");
        assert_eq!(md.push(" two\n"), "• item two\n");
        assert_eq!(md.push("2 words"), "");
        assert_eq!(md.finish(), "2 words");
    }

    #[test]
    fn blocks_and_inline_without_colour() {
        assert_eq!(plain("# Title\n"), "Title\n");
        assert_eq!(plain("- **bold** and *it*\n"), "• bold and it\n");
        assert_eq!(plain("  * nested `code`\n"), "  • nested `code`\n");
        assert_eq!(plain("3. third\n"), "3. third\n");
        assert_eq!(plain("> quoted\n"), "│ quoted\n");
        assert_eq!(plain("---\n"), "────────────────────────────────\n");
        assert_eq!(plain("see [docs](http://x.y)\n"), "see docs (http://x.y)\n");
        assert_eq!(plain("a <b> c\n"), "a <b> c\n");
        assert_eq!(plain("- 2024. was a year\n"), "• 2024. was a year\n");
    }

    #[test]
    fn tables_are_drawn_with_aligned_columns() {
        let mut md = Markdown::new(false);
        let mut out = md.push("Counts:\n| name | n |\n|---|--:|\n| alpha | 1 |\n| `b` | 1");
        // Nothing of the table until it ends.
        assert_eq!(out, "Counts:\n");
        out.push_str(&md.push("234 |\nafter\n"));
        out.push_str(&md.finish());
        assert_eq!(
            out,
            "Counts:\nname  │    n\n──────┼─────\nalpha │    1\n`b`   │ 1234\nafter\n"
        );
        // A table that ends the message; a cell with an escaped bar.
        assert_eq!(
            plain("| a | b \\| c |\n| long cell | x |"),
            "a         │ b | c\nlong cell │ x"
        );
        // Inside a code block a row stays as written.
        assert_eq!(plain("```\n| a |\n```\n"), "  ╭─\n  │ | a |\n  ╰─\n");
    }

    #[test]
    fn colour_styles_and_resets() {
        let mut md = Markdown::new(true);
        let out = md.push("**b** `c`\n");
        assert_eq!(out, "\x1b[1mb\x1b[0m \x1b[36mc\x1b[0m\n");
        let out = md.push("## H\n");
        assert_eq!(out, "\x1b[1;35mH\x1b[0m\n");
    }
}

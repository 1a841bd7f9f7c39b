//! What a terminal shows for the bytes a program wrote to it: enough of a VT100 to read a
//! pseudo-terminal the way a person would (carriage return, line feed, erase in line and
//! display, cursor moves). Text that a program overwrote or erased is gone here too, which
//! is what tests of "what the user sees" need; colours and modes are ignored.

/// The screen: lines of characters and the cursor.
#[derive(Default)]
pub struct Screen {
    lines: Vec<Vec<char>>,
    row: usize,
    col: usize,
}

impl Screen {
    /// The screen after `text` was written to an empty one.
    pub fn of(text: &str) -> Screen {
        let mut screen = Screen::default();
        screen.feed(text);
        screen
    }

    /// Every line, trailing blanks removed.
    pub fn lines(&self) -> Vec<String> {
        self.lines
            .iter()
            .map(|l| l.iter().collect::<String>().trim_end().to_string())
            .collect()
    }

    fn line(&mut self) -> &mut Vec<char> {
        while self.lines.len() <= self.row {
            self.lines.push(Vec::new());
        }
        &mut self.lines[self.row]
    }

    fn put(&mut self, c: char) {
        let col = self.col;
        let line = self.line();
        while line.len() <= col {
            line.push(' ');
        }
        line[col] = c;
        self.col += 1;
    }

    pub fn feed(&mut self, text: &str) {
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\r' => self.col = 0,
                '\n' => {
                    self.row += 1;
                    self.line();
                }
                '\x08' => self.col = self.col.saturating_sub(1),
                '\x07' => {}
                '\x1b' => match chars.next() {
                    Some('[') => {
                        let mut params = String::new();
                        let mut last = None;
                        for c in chars.by_ref() {
                            if ('\x40'..='\x7e').contains(&c) {
                                last = Some(c);
                                break;
                            }
                            params.push(c);
                        }
                        if let Some(last) = last {
                            self.csi(&params, last);
                        }
                    }
                    Some(']') => {
                        // An operating system command: up to BEL or ESC \.
                        while let Some(c) = chars.next() {
                            if c == '\x07' {
                                break;
                            }
                            if c == '\x1b' {
                                chars.next();
                                break;
                            }
                        }
                    }
                    _ => {}
                },
                c if c.is_control() => {}
                c => self.put(c),
            }
        }
    }

    fn csi(&mut self, params: &str, last: char) {
        if params.starts_with('?') || params.starts_with('>') {
            return;
        }
        let nums: Vec<usize> = params.split(';').map(|p| p.parse().unwrap_or(0)).collect();
        let first = nums.first().copied().unwrap_or(0);
        let n = first.max(1);
        match last {
            'K' => {
                let col = self.col;
                let line = self.line();
                match first {
                    0 => line.truncate(col),
                    1 => line.iter_mut().take(col + 1).for_each(|c| *c = ' '),
                    _ => line.clear(),
                }
            }
            'J' if first == 0 => {
                let col = self.col;
                self.line().truncate(col);
                self.lines.truncate(self.row + 1);
            }
            'J' => {
                self.lines.clear();
                self.row = 0;
                self.col = 0;
            }
            'C' => self.col += n,
            'D' => self.col = self.col.saturating_sub(n),
            'A' => self.row = self.row.saturating_sub(n),
            'B' => self.row += n,
            'G' => self.col = n - 1,
            'H' | 'f' => {
                self.row = n - 1;
                self.col = nums.get(1).copied().unwrap_or(1).max(1) - 1;
            }
            _ => {}
        }
    }
}

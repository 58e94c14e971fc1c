//! Code frames: the source line of an error with a caret under its column, as rustc and oxc
//! print them, for load errors and script exceptions shown on a terminal or in a log.
//!
//! Start at [`CodeFrame::new`]: a position and the text of its file; print it with `{}`.
//! Error messages themselves stay on one line (they also go into Events and conditions);
//! the frame travels beside them (`HandlerError::frame`, `ctop-runtime`'s errors) and is
//! shown under them. `ctop-runtime` builds frames from a bundle's source maps.

use std::fmt;

use unicode_width::UnicodeWidthStr as _;

/// Longest source line shown whole; longer lines are cut around the column.
const MAX_SHOWN: usize = 160;

/// One position in a source file with the text of its line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CodeFrame {
    /// File relative to the operator directory.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column in UTF-16 units (as editors and source maps count).
    pub column: u32,
    /// The text of the line, without its line break.
    pub source_line: String,
}

impl CodeFrame {
    /// The frame at `line`:`column` of `source`, the whole text of `file`; `None` when the
    /// file has no such line.
    pub fn new(file: &str, source: &str, line: u32, column: u32) -> Option<Self> {
        let text = source.lines().nth(usize::try_from(line).ok()?.checked_sub(1)?)?;
        Some(Self { file: file.to_owned(), line, column, source_line: text.to_owned() })
    }
}

impl CodeFrame {
    /// The frame without its `-->` header: the gutter, the source line and the caret line,
    /// each ending in a newline; for output whose first line already names the position
    /// (`file:line:col: error ...`, as tsc and gcc print).
    #[must_use]
    pub fn snippet(&self) -> String {
        let number = self.line.to_string();
        let gutter = " ".repeat(number.len());
        let (shown, before) = shown_text(&self.source_line, self.column);
        format!("{gutter} |\n{number} | {shown}\n{gutter} | {}^\n", " ".repeat(before.width()))
    }
}

impl fmt::Display for CodeFrame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pad = " ".repeat(self.line.to_string().len());
        writeln!(f, "{pad}--> {}:{}:{}", self.file, self.line, self.column)?;
        f.write_str(self.snippet().trim_end_matches('\n'))
    }
}

/// The part of `line` to show (tabs as four spaces, cut around the column when long) and
/// the shown text before a 1-based UTF-16 `column`, whose display width places the caret.
/// A column past the end puts the caret just after the text.
fn shown_text(line: &str, column: u32) -> (String, String) {
    let target = usize::try_from(column.saturating_sub(1)).unwrap_or(usize::MAX);
    let mut units = 0;
    let mut caret = 0;
    for c in line.chars() {
        if units >= target {
            break;
        }
        units += c.len_utf16();
        caret += 1;
    }
    let chars: Vec<char> = line.trim_end().chars().collect();
    let caret = caret.min(chars.len());
    let (start, end) = if chars.len() <= MAX_SHOWN {
        (0, chars.len())
    } else {
        let start = caret.saturating_sub(MAX_SHOWN / 2).min(chars.len() - MAX_SHOWN);
        (start, start + MAX_SHOWN)
    };
    let expand = |part: &[char]| part.iter().collect::<String>().replace('\t', "    ");
    let ellipsis = |on: bool| if on { "…" } else { "" };
    let shown =
        format!("{}{}{}", ellipsis(start > 0), expand(&chars[start..end]), ellipsis(end < chars.len()));
    let before = format!("{}{}", ellipsis(start > 0), expand(&chars[start..caret.max(start)]));
    (shown, before)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caret_under_the_column() {
        let src = "import { z } from \"ctop\";\nconst a = ;\n";
        let frame = CodeFrame::new("operator.ct", src, 2, 11).unwrap();
        assert_eq!(frame.to_string(), " --> operator.ct:2:11\n  |\n2 | const a = ;\n  |           ^");
    }

    #[test]
    fn wide_line_numbers_tabs_and_utf16_columns() {
        let mut src = "\n".repeat(99);
        // "é" is one UTF-16 unit, "😀" two: column 14 is the `x` after them.
        src.push_str("\tconst é😀 = x;\n");
        let frame = CodeFrame::new("lib/a.ts", &src, 100, 14).unwrap();
        // The tab shows as four spaces; the emoji is two columns wide.
        assert_eq!(
            frame.to_string(),
            "   --> lib/a.ts:100:14\n    |\n100 |     const é😀 = x;\n    |                 ^"
        );
        assert_eq!(frame.snippet(), "    |\n100 |     const é😀 = x;\n    |                 ^\n");
    }

    #[test]
    fn long_lines_are_cut_around_the_column() {
        let line = format!("{}BOOM{}", "a".repeat(300), "b".repeat(300));
        let frame = CodeFrame::new("x.ts", &line, 1, 301).unwrap();
        let text = frame.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[2].starts_with("1 | …") && lines[2].ends_with('…'), "{text}");
        let caret = lines[3].find('^').unwrap();
        let boom = lines[2].find("BOOM").unwrap();
        // The caret sits under the B: `…` takes 3 bytes but one column.
        assert_eq!(caret, boom - 2, "{text}");
    }

    #[test]
    fn no_frame_past_the_end() {
        assert_eq!(CodeFrame::new("x.ts", "one line", 2, 1), None);
        assert_eq!(CodeFrame::new("x.ts", "one line", 0, 1), None);
        let past = CodeFrame::new("x.ts", "ab", 1, 9).unwrap();
        assert_eq!(past.to_string(), " --> x.ts:1:9\n  |\n1 | ab\n  |   ^");
    }
}

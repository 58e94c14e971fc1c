//! Findings and how they print: `file:line:col: error CODE: message`, the source line with
//! a caret under the column (the layout of rustc and oxc), then what to do.
//!
//! The first line is the `file:line:col:` prefix that editors and CI annotators parse (as
//! tsc and gcc print it), so the frame is `CodeFrame::snippet`, without its `-->` header.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// How bad a finding is: errors fail `ctop check`, warnings do not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// `ctop check` exits non-zero.
    Error,
    /// Worth knowing; does not fail the check.
    Warning,
}

/// A position in one of the operator's files (line and column from 1; the column counts
/// UTF-16 code units, as tsc and the loader count them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The file as it is shown (the operator directory joined with its relative path).
    pub shown: String,
    /// The file on disk, to read the source line from; `None` when it cannot be read.
    pub path: Option<PathBuf>,
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1.
    pub column: u32,
}

/// One problem `ctop check` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Whether it fails the check.
    pub severity: Severity,
    /// Where, when it is in a file.
    pub location: Option<Location>,
    /// The checker's code, e.g. `TS2322` or `rbac`.
    pub code: String,
    /// What is wrong (may span lines: tsc's elaborations).
    pub message: String,
    /// What to do about it.
    pub help: Option<String>,
}

impl Finding {
    /// An error without a location.
    pub fn error(code: &str, message: impl Into<String>, help: Option<String>) -> Self {
        Self {
            severity: Severity::Error,
            location: None,
            code: code.to_owned(),
            message: message.into(),
            help,
        }
    }

    /// A warning without a location.
    pub fn warning(code: &str, message: impl Into<String>, help: Option<String>) -> Self {
        Self {
            severity: Severity::Warning,
            location: None,
            code: code.to_owned(),
            message: message.into(),
            help,
        }
    }

    /// The finding as printed, ending in a newline.
    pub fn render(&self) -> String {
        let severity = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let mut out = String::new();
        let mut lines = self.message.lines();
        let first = lines.next().unwrap_or_default();
        match &self.location {
            Some(at) => {
                let _ = writeln!(
                    out,
                    "{}:{}:{}: {severity} {}: {first}",
                    at.shown, at.line, at.column, self.code
                );
            }
            None => {
                let _ = writeln!(out, "{severity} {}: {first}", self.code);
            }
        }
        for more in lines {
            let _ = writeln!(out, "  {}", more.trim_end());
        }
        if let Some(frame) = self.location.as_ref().and_then(code_frame) {
            out.push_str(&frame);
        }
        if let Some(help) = &self.help {
            let _ = writeln!(out, "  = help: {help}");
        }
        out
    }
}

/// The path a file of the operator directory `dir` is shown as: relative to where ctop
/// runs, as the user named the directory (`operator.ct` for `.`).
pub fn shown(dir: &Path, rel: &str) -> String {
    if dir == Path::new(".") || dir.as_os_str().is_empty() {
        rel.to_owned()
    } else {
        dir.join(rel).display().to_string()
    }
}

/// The source line of `at` with a caret under its column ([`ctop_core::CodeFrame`]'s
/// snippet), or `None` when the file or line cannot be read.
fn code_frame(at: &Location) -> Option<String> {
    let text = std::fs::read_to_string(at.path.as_ref()?).ok()?;
    Some(ctop_core::CodeFrame::new(&at.shown, &text, at.line, at.column)?.snippet())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caret_sits_under_the_column_counted_in_utf16_units() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("operator.ct");
        std::fs::write(&file, "const a = 1;\nconst é: number = \"x\";\n\tlet 😀 = b;\n").expect("write");
        let at =
            |line, column| Location { shown: "operator.ct".into(), path: Some(file.clone()), line, column };
        let finding = Finding {
            severity: Severity::Error,
            location: Some(at(2, 7)),
            code: "TS2322".into(),
            message: "Type 'string' is not assignable to type 'number'.\nmore".into(),
            help: Some("fix it".into()),
        };
        assert_eq!(
            finding.render(),
            "operator.ct:2:7: error TS2322: Type 'string' is not assignable to type 'number'.\n  more\n  |\n2 | const é: number = \"x\";\n  |       ^\n  = help: fix it\n"
        );
        // A tab is four columns; the emoji is two UTF-16 units and two columns wide.
        assert_eq!(code_frame(&at(3, 10)).expect("frame"), "  |\n3 |     let 😀 = b;\n  |             ^\n");
        assert_eq!(code_frame(&at(9, 1)), None);
    }
}

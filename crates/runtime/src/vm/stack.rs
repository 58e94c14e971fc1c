//! QuickJS stack traces: their frames read, mapped through the source maps, moved to the
//! call site of an SDK function that threw, and the frame an error is reported at.

use super::PositionMapper;
use crate::bundle::Bundle;

/// One `    at fn (file:line:col)` or `    at file:line:col` line of a QuickJS stack.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Frame<'a> {
    pub(super) function: Option<&'a str>,
    pub(super) file: &'a str,
    pub(super) line: u32,
    pub(super) column: u32,
}

pub(super) fn parse_frame(text: &str) -> Option<Frame<'_>> {
    let rest = text.trim().strip_prefix("at ")?;
    let (function, location) = match rest.strip_suffix(')').and_then(|r| r.rsplit_once(" (")) {
        Some((function, location)) => (Some(function), location),
        None => (None, rest),
    };
    let (location, column) = location.rsplit_once(':')?;
    let (file, line) = location.rsplit_once(':')?;
    Some(Frame { function, file, line: line.parse().ok()?, column: column.parse().ok()? })
}

/// Rewrites every frame position through `mapper`; frames it has no mapping for are kept.
pub(super) fn map_stack(stack: &str, mapper: Option<&PositionMapper>) -> String {
    let Some(mapper) = mapper else {
        return stack.to_owned();
    };
    let mut out = String::with_capacity(stack.len());
    for text in stack.lines() {
        let mapped = parse_frame(text).and_then(|frame| {
            let (line, column) = mapper(frame.file, frame.line, frame.column)?;
            let indent = &text[..text.len() - text.trim_start().len()];
            Some(match frame.function {
                Some(function) => format!("{indent}at {function} ({}:{line}:{column})", frame.file),
                None => format!("{indent}at {}:{line}:{column}", frame.file),
            })
        });
        out.push_str(mapped.as_deref().unwrap_or(text));
        out.push('\n');
    }
    out
}

/// `stack` with the innermost frame in a bundle module moved to the call it made, when that
/// frame called out of the bundle (the SDK, whose functions check their arguments and throw):
/// QuickJS gives a call the position of the last expression of its arguments, and a user
/// expects the error of `resource(..., { ...ten lines... })` at `resource(`. Other stacks
/// (the error thrown in the bundle's own code) are returned as they are.
pub(super) fn at_call_site(stack: &str, bundle: &Bundle) -> String {
    let lines: Vec<&str> = stack.lines().collect();
    let Some(at) =
        lines.iter().position(|l| parse_frame(l).is_some_and(|f| bundle.modules.contains_key(f.file)))
    else {
        return stack.to_owned();
    };
    let (Some(caller), Some(callee)) =
        (parse_frame(lines[at]), at.checked_sub(1).and_then(|i| parse_frame(lines[i])))
    else {
        return stack.to_owned();
    };
    let Some(function) = callee.function.filter(|f| !f.starts_with('<')) else {
        return stack.to_owned();
    };
    let Some((line, column)) = bundle
        .modules
        .get(caller.file)
        .and_then(|m| crate::diagnostic::call_site::call_start(&m.js, caller.line, caller.column, function))
    else {
        return stack.to_owned();
    };
    let indent = &lines[at][..lines[at].len() - lines[at].trim_start().len()];
    let moved = match caller.function {
        Some(f) => format!("{indent}at {f} ({}:{line}:{column})", caller.file),
        None => format!("{indent}at {}:{line}:{column}", caller.file),
    };
    let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    out[at] = moved;
    let mut text = out.join("\n");
    if stack.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The innermost frame in a bundle module, else the innermost frame with a position.
pub(super) fn pick_frame<'a>(stack: &'a str, bundle: &Bundle) -> Option<Frame<'a>> {
    let mut first = None;
    for frame in stack.lines().filter_map(parse_frame) {
        if bundle.modules.contains_key(frame.file) {
            return Some(frame);
        }
        first.get_or_insert(frame);
    }
    first
}

//! Where a call is, for an error thrown by the function it called.
//!
//! QuickJS gives a call the source position last recorded before its call instruction: the
//! callee's when it has no arguments, else the last expression its arguments evaluated. An
//! error that `resource("apps.example.com/v1", "App", { scope: "Global", spec: {...} })`
//! throws (the SDK checks its options) would point at the last line of the options object,
//! not at `resource(`. [`call_start`] finds the call a position belongs to, by the name of
//! the function it called (the next frame of the stack), and gives the start of its callee's
//! name: `resource` in `resource(...)`, `manages` in `operator(app).manages(...)`, as V8
//! and editors point at calls.

use oxc_allocator::Allocator;
use oxc_ast::ast::{CallExpression, Expression};
use oxc_ast_visit::{Visit, walk};
use oxc_parser::Parser;
use oxc_span::{GetSpan, SourceType, Span};

/// The 1-based line and byte column of the callee's name of the innermost call of
/// `function` whose arguments hold `line:column` (1-based, the column counted in bytes as
/// QuickJS counts it) in the ES module `source`; `None` when there is no such call (the
/// position is not a call of `function`, or the source does not parse).
pub fn call_start(source: &str, line: u32, column: u32, function: &str) -> Option<(u32, u32)> {
    let offset = offset_of(source, line, column)?;
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, source, SourceType::mjs()).parse();
    if parsed.panicked || parsed.diagnostics.errors().next().is_some() {
        return None;
    }
    let mut find = Find { offset, function, found: None };
    find.visit_program(&parsed.program);
    find.found.map(|start| position_of(source, start))
}

/// The byte offset of a 1-based line and byte column.
fn offset_of(source: &str, line: u32, column: u32) -> Option<u32> {
    let mut start = 0usize;
    for _ in 1..line {
        start += source[start..].find('\n')? + 1;
    }
    let offset = start + usize::try_from(column.checked_sub(1)?).ok()?;
    (offset <= source.len()).then(|| u32::try_from(offset).ok()).flatten()
}

/// The 1-based line and byte column of a byte offset.
fn position_of(source: &str, offset: u32) -> (u32, u32) {
    let before = &source.as_bytes()[..(offset as usize).min(source.len())];
    let line = before.iter().filter(|b| **b == b'\n').count();
    let column = before.iter().rev().take_while(|b| **b != b'\n').count();
    (u32::try_from(line + 1).unwrap_or(u32::MAX), u32::try_from(column + 1).unwrap_or(u32::MAX))
}

struct Find<'f> {
    offset: u32,
    function: &'f str,
    /// The start of the innermost matching callee name seen so far.
    found: Option<u32>,
}

impl<'a> Visit<'a> for Find<'_> {
    fn visit_call_expression(&mut self, it: &CallExpression<'a>) {
        // The position is after the callee: in the arguments, or at the closing parenthesis.
        let inside = Span::new(it.callee.span().end, it.span.end);
        if inside.start <= self.offset && self.offset <= inside.end {
            let name = match it.callee.without_parentheses() {
                Expression::Identifier(id) => Some((id.name.as_str(), id.span.start)),
                Expression::StaticMemberExpression(m) => {
                    Some((m.property.name.as_str(), m.property.span.start))
                }
                _ => None,
            };
            if let Some((name, start)) = name
                && name == self.function
            {
                // Calls nested in the arguments are visited after this one: the innermost wins.
                self.found = Some(start);
            }
        }
        walk::walk_call_expression(self, it);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "import { resource, z, operator } from \"ctop\";\n\
        const app = resource(\"apps.example.com/v1\", \"App\", {\n  scope: \"Global\",\n  spec: { image: z.string().min(1) },\n});\n\
        operator(app).manages(\n  app,\n);\n";

    #[test]
    fn a_position_in_the_arguments_is_the_callees_name() {
        // The `1` of `.min(1)` on line 4 is inside `resource(...)` too: the call named is the
        // one that threw.
        assert_eq!(call_start(SOURCE, 4, 33, "resource"), Some((2, 13)));
        assert_eq!(call_start(SOURCE, 4, 33, "min"), Some((4, 29)));
        // A method: its property name, not the start of the chain.
        assert_eq!(call_start(SOURCE, 7, 3, "manages"), Some((6, 15)));
        assert_eq!(call_start(SOURCE, 8, 1, "manages"), Some((6, 15)), "the closing parenthesis");
    }

    #[test]
    fn no_call_of_that_name_holds_the_position() {
        assert_eq!(call_start(SOURCE, 4, 33, "operator"), None);
        assert_eq!(call_start(SOURCE, 4, 30, "min"), None, "in the callee's name");
        assert_eq!(call_start(SOURCE, 2, 7, "resource"), None, "before the call's arguments");
        assert_eq!(call_start(SOURCE, 99, 1, "resource"), None);
        assert_eq!(call_start("resource(", 1, 10, "resource"), None, "does not parse");
    }

    #[test]
    fn columns_count_bytes() {
        let source = "const é = 1; f(\n  é);\n";
        assert_eq!(call_start(source, 2, 3, "f"), Some((1, 15)));
        assert_eq!(position_of(source, 14), (1, 15));
        assert_eq!(offset_of(source, 2, 3), Some(19));
    }
}

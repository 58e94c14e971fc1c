//! `pattern` with Go's RE2 semantics on the `regex` crate: Go's ASCII-only `\\d \\w \\s \\b`,
//! literal `[`, `&&` and `~~` inside classes, and Go's parse-error words for invalid
//! patterns. Compiled patterns are cached per thread.

use std::cell::RefCell;
use std::collections::HashMap;

use regex::Regex;

thread_local! {
    static REGEXES: RefCell<HashMap<String, Result<Regex, String>>> = RefCell::new(HashMap::new());
}

/// Runs `f` with the pattern compiled with Go's semantics, or returns Go's parse error.
pub(crate) fn with_regex<T>(pattern: &str, f: impl FnOnce(&Regex) -> T) -> Result<T, String> {
    REGEXES.with(|cache| {
        let mut cache = cache.borrow_mut();
        let entry = cache.entry(pattern.to_owned()).or_insert_with(|| compile_go_regex(pattern));
        match entry {
            Ok(re) => Ok(f(re)),
            Err(e) => Err(e.clone()),
        }
    })
}

/// Go's ASCII-only Perl classes as bracket classes (nested inside a class).
pub(crate) fn perl_class(c: char) -> Option<&'static str> {
    Some(match c {
        'd' => "[0-9]",
        'D' => "[^0-9]",
        'w' => "[0-9A-Za-z_]",
        'W' => "[^0-9A-Za-z_]",
        's' => "[\\t\\n\\x0C\\r ]",
        'S' => "[^\\t\\n\\x0C\\r ]",
        _ => return None,
    })
}

/// Rewrites a Go (RE2) pattern for the regex crate: Go's `\d`, `\w`, `\s` and `\b` are
/// ASCII-only, and a `[`, `&&` or `~~` inside a class is literal in Go.
pub(crate) fn go_to_rust_pattern(p: &str) -> String {
    let chars: Vec<char> = p.chars().collect();
    let mut out = String::with_capacity(p.len() + 16);
    let mut in_class = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            match chars.get(i + 1) {
                None => out.push('\\'),
                Some(&n) => match (n, perl_class(n)) {
                    ('b' | 'B', _) if !in_class => out.push_str(&format!("(?-u:\\{n})")),
                    (_, Some(class)) => out.push_str(class),
                    _ => {
                        out.push('\\');
                        out.push(n);
                    }
                },
            }
            i += 2;
            continue;
        }
        if !in_class && c == '[' {
            in_class = true;
            out.push('[');
            i += 1;
            if chars.get(i) == Some(&'^') {
                out.push('^');
                i += 1;
            }
            if chars.get(i) == Some(&']') {
                out.push_str("\\]");
                i += 1;
            }
            continue;
        }
        if in_class {
            match c {
                '[' if chars.get(i + 1) == Some(&':') => {
                    let rest: String = chars[i..].iter().collect();
                    let len = rest.find(":]").map_or(rest.len(), |e| e + 2);
                    out.push_str(&rest[..len]);
                    i += rest[..len].chars().count();
                    continue;
                }
                '[' | '&' | '~' => out.push('\\'),
                ']' => in_class = false,
                _ => {}
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

pub(crate) fn compile_go_regex(pattern: &str) -> Result<Regex, String> {
    Regex::new(&go_to_rust_pattern(pattern)).map_err(|e| {
        let text = e.to_string();
        let (code, frag) = if text.contains("unclosed group") {
            ("missing closing )", pattern.to_owned())
        } else if text.contains("unopened group") {
            ("unexpected )", pattern.to_owned())
        } else if text.contains("unclosed character class") {
            ("missing closing ]", pattern.find('[').map_or(pattern, |i| &pattern[i..]).to_owned())
        } else if text.contains("repetition operator missing expression") {
            ("missing argument to repetition operator", pattern.to_owned())
        } else if text.contains("escape sequence") {
            ("invalid escape sequence", pattern.to_owned())
        } else if text.contains("repetition") {
            ("invalid repeat count", pattern.to_owned())
        } else {
            ("invalid regular expression", pattern.to_owned())
        };
        format!("error parsing regexp: {code}: `{frag}`")
    })
}

// ---------------------------------------------------------------------------
// CRD-time schema checks

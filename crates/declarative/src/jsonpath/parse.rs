//! The JSONPath parser: text to [`JsonPath`], one character at a time.

use serde_json::Value;

use super::{CompareOp, Filter, JsonPath, Operand, Segment, Selector};

/// Parses a whole path; anything left over is an error.
pub(super) fn parse(text: &str) -> Result<JsonPath, String> {
    let mut p = Parser { chars: text.chars().collect(), pos: 0 };
    let path = p.path()?;
    p.skip_ws();
    if p.pos < p.chars.len() {
        return Err(format!("unexpected {:?} at offset {}", p.chars[p.pos], p.pos));
    }
    Ok(path)
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

/// Characters that end a name written after a `.`.
fn ends_name(c: char) -> bool {
    c.is_whitespace() || ".[]()=!<>&|,'\"~$@".contains(c)
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, off: usize) -> Option<char> {
        self.chars.get(self.pos + off).copied()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn eat_str(&mut self, s: &str) -> bool {
        let n = s.chars().count();
        if self.chars.len() >= self.pos + n
            && self.chars[self.pos..self.pos + n].iter().copied().eq(s.chars())
        {
            self.pos += n;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(match self.peek() {
                Some(got) => format!("expected {c:?} at offset {}, found {got:?}", self.pos),
                None => format!("expected {c:?} at the end"),
            })
        }
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn path(&mut self) -> Result<JsonPath, String> {
        let relative = match self.peek() {
            Some('$') => false,
            Some('@') => true,
            _ => return Err("a path starts with '$' or '@'".to_string()),
        };
        self.pos += 1;
        let mut segments = Vec::new();
        loop {
            match self.peek() {
                Some('.') if self.peek_at(1) == Some('.') => {
                    self.pos += 2;
                    let step = if self.peek() == Some('[') { self.bracket()? } else { self.dotted()? };
                    segments.push(Segment::Descent(Box::new(step)));
                }
                Some('.') => {
                    self.pos += 1;
                    segments.push(self.dotted()?);
                }
                Some('[') => segments.push(self.bracket()?),
                _ => break,
            }
        }
        Ok(JsonPath { relative, segments })
    }

    /// A step after `.`: `*` or a name.
    fn dotted(&mut self) -> Result<Segment, String> {
        if self.eat('*') {
            return Ok(Segment::Wildcard);
        }
        let start = self.pos;
        while self.peek().is_some_and(|c| !ends_name(c)) {
            self.pos += 1;
        }
        if start == self.pos {
            return Err(format!("expected a name at offset {start}"));
        }
        Ok(Segment::Key(self.chars[start..self.pos].iter().collect()))
    }

    fn bracket(&mut self) -> Result<Segment, String> {
        self.expect('[')?;
        self.skip_ws();
        let seg = if self.eat('*') {
            Segment::Wildcard
        } else if self.eat('?') {
            self.skip_ws();
            let filter = if self.peek() == Some('(') {
                // `?(…)`: the parenthesis belongs to the filter syntax, not to a group.
                self.pos += 1;
                let f = self.or()?;
                self.skip_ws();
                self.expect(')')?;
                f
            } else {
                self.or()?
            };
            Segment::Filter(Box::new(filter))
        } else {
            self.union_or_slice()?
        };
        self.skip_ws();
        self.expect(']')?;
        Ok(seg)
    }

    fn union_or_slice(&mut self) -> Result<Segment, String> {
        let mut items = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                Some('\'' | '"') => items.push(Selector::Key(self.quoted()?)),
                Some(':') => return self.slice(None),
                _ => {
                    let n = self.integer()?;
                    self.skip_ws();
                    if self.peek() == Some(':') && items.is_empty() {
                        return self.slice(Some(n));
                    }
                    items.push(Selector::Index(n));
                }
            }
            self.skip_ws();
            if !self.eat(',') {
                break;
            }
        }
        Ok(match items.as_slice() {
            [Selector::Key(k)] => Segment::Key(k.clone()),
            [Selector::Index(i)] => Segment::Index(*i),
            _ => Segment::Union(items),
        })
    }

    fn slice(&mut self, start: Option<i64>) -> Result<Segment, String> {
        let mut parts = [start, None, None];
        for part in parts.iter_mut().skip(1) {
            if !self.eat(':') {
                break;
            }
            self.skip_ws();
            if self.peek().is_some_and(|c| c == '-' || c.is_ascii_digit()) {
                *part = Some(self.integer()?);
            }
            self.skip_ws();
        }
        Ok(Segment::Slice(parts[0], parts[1], parts[2]))
    }

    fn integer(&mut self) -> Result<i64, String> {
        let start = self.pos;
        self.eat('-');
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        text.parse().map_err(|_| format!("expected an index at offset {start}"))
    }

    fn quoted(&mut self) -> Result<String, String> {
        let quote = self.peek().ok_or("expected a quoted string")?;
        self.pos += 1;
        let mut out = String::new();
        loop {
            match self.peek() {
                None => return Err("unterminated string".to_string()),
                Some('\\') => {
                    self.pos += 1;
                    let c = self.peek().ok_or("unterminated string")?;
                    out.push(match c {
                        'n' => '\n',
                        't' => '\t',
                        other => other,
                    });
                    self.pos += 1;
                }
                Some(c) if c == quote => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn or(&mut self) -> Result<Filter, String> {
        let mut left = self.and()?;
        loop {
            self.skip_ws();
            if !self.eat_str("||") {
                return Ok(left);
            }
            let right = self.and()?;
            left = Filter::Or(Box::new(left), Box::new(right));
        }
    }

    fn and(&mut self) -> Result<Filter, String> {
        let mut left = self.unary()?;
        loop {
            self.skip_ws();
            if !self.eat_str("&&") {
                return Ok(left);
            }
            let right = self.unary()?;
            left = Filter::And(Box::new(left), Box::new(right));
        }
    }

    fn unary(&mut self) -> Result<Filter, String> {
        self.skip_ws();
        if self.peek() == Some('!') && self.peek_at(1) != Some('=') {
            self.pos += 1;
            return Ok(Filter::Not(Box::new(self.unary()?)));
        }
        if self.eat('(') {
            let f = self.or()?;
            self.skip_ws();
            self.expect(')')?;
            return Ok(f);
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Filter, String> {
        let left = self.operand()?;
        self.skip_ws();
        let op = if self.eat_str("==") {
            CompareOp::Eq
        } else if self.eat_str("!=") {
            CompareOp::Ne
        } else if self.eat_str("<=") {
            CompareOp::Le
        } else if self.eat_str(">=") {
            CompareOp::Ge
        } else if self.eat('<') {
            CompareOp::Lt
        } else if self.eat('>') {
            CompareOp::Gt
        } else if self.eat_str("=~") {
            self.skip_ws();
            let pattern = if self.peek() == Some('/') { self.regex_literal()? } else { self.quoted()? };
            let re = regex::Regex::new(&pattern).map_err(|e| format!("invalid regular expression: {e}"))?;
            return Ok(Filter::Regex(left, re));
        } else if self.eat_str("in") {
            let right = self.operand()?;
            return Ok(Filter::In(left, right));
        } else {
            return Ok(Filter::Exists(left));
        };
        let right = self.operand()?;
        Ok(Filter::Compare(left, op, right))
    }

    fn regex_literal(&mut self) -> Result<String, String> {
        self.expect('/')?;
        let mut out = String::new();
        loop {
            match self.peek() {
                None => return Err("unterminated regular expression".to_string()),
                Some('\\') if self.peek_at(1) == Some('/') => {
                    out.push('/');
                    self.pos += 2;
                }
                Some('/') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn operand(&mut self) -> Result<Operand, String> {
        self.skip_ws();
        match self.peek() {
            Some('$' | '@') => Ok(Operand::Path(self.path()?)),
            _ => Ok(Operand::Literal(self.literal()?)),
        }
    }

    fn literal(&mut self) -> Result<Value, String> {
        self.skip_ws();
        match self.peek() {
            Some('\'' | '"') => Ok(Value::String(self.quoted()?)),
            Some('[') => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_ws();
                    if self.eat(']') {
                        return Ok(Value::Array(items));
                    }
                    items.push(self.literal()?);
                    self.skip_ws();
                    if !self.eat(',') {
                        self.skip_ws();
                        self.expect(']')?;
                        return Ok(Value::Array(items));
                    }
                }
            }
            _ => {
                for (word, value) in
                    [("true", Value::Bool(true)), ("false", Value::Bool(false)), ("null", Value::Null)]
                {
                    if self.eat_str(word) {
                        return Ok(value);
                    }
                }
                let start = self.pos;
                while self.peek().is_some_and(|c| c.is_ascii_digit() || "+-.eE".contains(c)) {
                    self.pos += 1;
                }
                let text: String = self.chars[start..self.pos].iter().collect();
                if let Ok(i) = text.parse::<i64>() {
                    return Ok(Value::from(i));
                }
                text.parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map(Value::Number)
                    .ok_or_else(|| format!("expected a value at offset {start}"))
            }
        }
    }
}

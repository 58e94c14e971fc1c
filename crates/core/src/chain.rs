//! An error with its causes on one line, each once: [`Chain`]. ctop's errors follow one
//! rule: the message says what failed, the source says why, and nothing repeats its source
//! in its own message; where an error is shown as a line (a log field, a CLI error, an
//! Event), it is shown with `Chain`, as `anyhow`'s `{:#}` shows one.

use std::error::Error;
use std::fmt;

/// `error` and each of its sources, joined by `: ` (`cannot read a.pem: No such file or
/// directory (os error 2)`). A cause whose text the error before it already says is left
/// out: errors of other crates often print their cause themselves.
pub struct Chain<'a>(pub &'a (dyn Error + 'a));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut last = self.0.to_string();
        f.write_str(&last)?;
        let mut cause = self.0.source();
        while let Some(e) = cause {
            let said = e.to_string();
            if !said.is_empty() && !last.contains(&said) {
                write!(f, ": {said}")?;
            }
            last = said;
            cause = e.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read a.pem")]
    struct Read(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("cannot load: {0}")]
    struct Repeats(#[source] std::io::Error);

    #[test]
    fn each_cause_is_shown_once() {
        let e = Read(std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"));
        assert_eq!(Chain(&e).to_string(), "cannot read a.pem: no such file");
        let e = Repeats(std::io::Error::other("disk full"));
        assert_eq!(Chain(&e).to_string(), "cannot load: disk full");
    }
}

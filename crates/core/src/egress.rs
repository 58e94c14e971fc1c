//! Where a script's `fetch` may go: the rules of `.egress(url, ...)` and `--egress`.
//!
//! A rule is a URL prefix, `scheme://host[:port][/path]`:
//! - `scheme` is `http` or `https`;
//! - `host` is a DNS name (`api.github.com`), a wildcard of its subdomains (`*.example.com`
//!   matches `a.example.com` and `a.b.example.com`, not `example.com`), or an IP address
//!   (`10.0.0.7`, `[fd00::7]`); names compare case-insensitively;
//! - `port` is a number or `*`; without one, the scheme's (80, 443);
//! - `path`, when given, is a prefix on segment boundaries (`/v1` matches `/v1` and `/v1/x`,
//!   not `/v10`).
//!
//! The runtime checks every request (redirects included) against the rules, and the
//! manifests turn them into NetworkPolicy egress. Parsed by hand: the `url` crate would be one
//! more dependency of this pure-data crate for a grammar of four parts that must also accept
//! `*` where URLs do not.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One allowed destination.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EgressRule {
    /// `http` or `https`.
    pub scheme: EgressScheme,
    /// Who may be reached.
    pub host: EgressHost,
    /// On which port.
    pub port: EgressPort,
    /// Path prefix; empty for any path.
    pub path: String,
    text: String,
}

/// The scheme of a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EgressScheme {
    /// `http`, default port 80.
    Http,
    /// `https`, default port 443.
    Https,
}

impl EgressScheme {
    /// `http` or `https`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            EgressScheme::Http => "http",
            EgressScheme::Https => "https",
        }
    }

    /// 80 or 443.
    #[must_use]
    pub const fn default_port(self) -> u16 {
        match self {
            EgressScheme::Http => 80,
            EgressScheme::Https => 443,
        }
    }
}

/// The host of a rule.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum EgressHost {
    /// Exactly this DNS name (lower case).
    Name(String),
    /// Any name ending in `.` + this suffix (lower case, without the `*.`).
    Subdomains(String),
    /// This address.
    Ip(IpAddr),
}

/// The port of a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EgressPort {
    /// This port.
    Exact(u16),
    /// Any port (`:*`).
    Any,
}

/// Why an egress rule could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "egress rule {rule:?}: {reason}; write a URL prefix like https://api.example.com or http://svc.ns.svc:8080/v1"
)]
pub struct EgressError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong.
    pub reason: &'static str,
}

impl EgressRule {
    /// Whether a request to `scheme://host:port/path` is allowed by this rule. `host` is the
    /// URL's host (an IPv6 address without brackets); `port` the effective port.
    #[must_use]
    pub fn allows(&self, scheme: &str, host: &str, port: u16, path: &str) -> bool {
        if !scheme.eq_ignore_ascii_case(self.scheme.as_str()) {
            return false;
        }
        let port_ok = match self.port {
            EgressPort::Any => true,
            EgressPort::Exact(p) => p == port,
        };
        let host = host.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.');
        let host_ok = match &self.host {
            EgressHost::Name(name) => host.eq_ignore_ascii_case(name),
            EgressHost::Subdomains(suffix) => {
                host.len() > suffix.len() + 1
                    && host.is_char_boundary(host.len() - suffix.len() - 1)
                    && host[host.len() - suffix.len() - 1..].eq_ignore_ascii_case(&format!(".{suffix}"))
            }
            EgressHost::Ip(ip) => host.parse::<IpAddr>().is_ok_and(|h| h == *ip),
        };
        let path = if path.is_empty() { "/" } else { path };
        let path_ok = self.path.is_empty()
            || path == self.path
            || path.strip_prefix(self.path.as_str()).is_some_and(|rest| rest.starts_with(['/', '?']));
        port_ok && host_ok && path_ok
    }

    /// The port a request matching this rule uses, when the rule fixes one.
    #[must_use]
    pub fn exact_port(&self) -> Option<u16> {
        match self.port {
            EgressPort::Exact(p) => Some(p),
            EgressPort::Any => None,
        }
    }
}

impl FromStr for EgressRule {
    type Err = EgressError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = |reason| EgressError { rule: text.to_owned(), reason };
        let (scheme, rest) = text.split_once("://").ok_or_else(|| err("no scheme"))?;
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "http" => EgressScheme::Http,
            "https" => EgressScheme::Https,
            _ => return Err(err("the scheme must be http or https")),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        if authority.contains('@') {
            return Err(err("credentials do not belong in a rule"));
        }
        if path.contains(['?', '#', '*']) {
            return Err(err("the path is a plain prefix, without query, fragment or wildcard"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (ip, after) = v6.split_once(']').ok_or_else(|| err("an IPv6 address needs its closing ]"))?;
            (format!("[{ip}]"), after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_owned(), Some(p)),
                None => (authority.to_owned(), None),
            }
        };
        let port = match port {
            None => EgressPort::Exact(scheme.default_port()),
            Some("*") => EgressPort::Any,
            Some(p) => EgressPort::Exact(p.parse().ok().filter(|p| *p > 0).ok_or_else(|| err("bad port"))?),
        };
        let host = if let Some(ip) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            EgressHost::Ip(ip.parse().map_err(|_| err("bad IPv6 address"))?)
        } else if let Ok(ip) = host.parse::<IpAddr>() {
            EgressHost::Ip(ip)
        } else {
            let lower = host.to_ascii_lowercase();
            let (wild, name) = match lower.strip_prefix("*.") {
                Some(name) => (true, name.to_owned()),
                None => (false, lower),
            };
            let valid = !name.is_empty()
                && name.split('.').all(|label| {
                    !label.is_empty()
                        && label.len() <= 63
                        && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                        && !label.starts_with('-')
                        && !label.ends_with('-')
                });
            if !valid {
                return Err(err("the host must be a DNS name, *.name or an IP address"));
            }
            if wild { EgressHost::Subdomains(name) } else { EgressHost::Name(name) }
        };
        Ok(EgressRule { scheme, host, port, path: path.to_owned(), text: text.to_owned() })
    }
}

impl fmt::Display for EgressRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for EgressRule {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for EgressRule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> EgressRule {
        text.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn reads_the_parts() {
        let r = rule("https://API.GitHub.com");
        assert_eq!(
            (r.scheme, r.host.clone(), r.port, r.path.as_str()),
            (EgressScheme::Https, EgressHost::Name("api.github.com".into()), EgressPort::Exact(443), "")
        );
        let r = rule("http://svc.ns.svc:8080/v1/");
        assert_eq!((r.port, r.path.as_str()), (EgressPort::Exact(8080), "/v1"));
        assert_eq!(rule("http://*.example.com:*").host, EgressHost::Subdomains("example.com".into()));
        assert_eq!(rule("http://*.example.com:*").port, EgressPort::Any);
        let ip: IpAddr = [10, 0, 0, 7].into();
        assert_eq!(rule("http://10.0.0.7:9000").host, EgressHost::Ip(ip));
        assert_eq!(rule("https://[fd00::7]").port, EgressPort::Exact(443));
        assert_eq!(rule("https://x.io").to_string(), "https://x.io");
    }

    #[test]
    fn refuses_what_is_not_a_prefix_url() {
        for bad in [
            "api.github.com",
            "ftp://x.io",
            "https://user:pw@x.io",
            "https://x.io:0",
            "https://x.io:http",
            "https://x.io/a?b",
            "https://*",
            "https://a..b",
            "https://-a.io",
            "https://[fd00::7",
            "https://a/b*",
        ] {
            assert!(bad.parse::<EgressRule>().is_err(), "{bad} must be refused");
        }
        let e = "ftp://x.io".parse::<EgressRule>().map_err(|e| e.to_string());
        assert_eq!(
            e,
            Err("egress rule \"ftp://x.io\": the scheme must be http or https; write a URL prefix like \
                 https://api.example.com or http://svc.ns.svc:8080/v1"
                .into())
        );
    }

    #[test]
    fn matches_scheme_host_port_and_path_prefix() {
        let r = rule("https://api.github.com");
        assert!(r.allows("https", "api.github.com", 443, "/repos"));
        assert!(r.allows("HTTPS", "API.github.com.", 443, ""));
        assert!(!r.allows("http", "api.github.com", 443, "/"));
        assert!(!r.allows("https", "api.github.com", 8443, "/"));
        assert!(!r.allows("https", "evil-api.github.com", 443, "/"));
        assert!(!r.allows("https", "api.github.com.evil.io", 443, "/"));

        let w = rule("http://*.example.com:*");
        assert!(w.allows("http", "a.example.com", 1, "/"));
        assert!(w.allows("http", "a.b.example.com", 8080, "/"));
        assert!(!w.allows("http", "example.com", 80, "/"));
        assert!(!w.allows("http", "aexample.com", 80, "/"));

        let p = rule("http://svc.ns.svc:8080/v1");
        assert!(p.allows("http", "svc.ns.svc", 8080, "/v1"));
        assert!(p.allows("http", "svc.ns.svc", 8080, "/v1/apps"));
        assert!(p.allows("http", "svc.ns.svc", 8080, "/v1?x=1"));
        assert!(!p.allows("http", "svc.ns.svc", 8080, "/v10"));
        assert!(!p.allows("http", "svc.ns.svc", 8080, "/"));

        let ip = rule("http://[fd00::7]:81");
        assert!(ip.allows("http", "[fd00::7]", 81, "/"));
        assert!(ip.allows("http", "fd00::7", 81, "/"));
        assert!(!ip.allows("http", "fd00::8", 81, "/"));
    }
}

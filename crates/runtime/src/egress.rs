//! Where `fetch` may go: the script's `.egress(...)` rules plus the deployer's `--egress`,
//! and the addresses no rule can open.
//!
//! Every request a script makes, each redirect hop included, must match a rule
//! ([`ctop_core::EgressRule`]: scheme, host, port and path prefix); with no rule, `fetch` reaches
//! nothing. Whatever the rules say, a connection never goes to:
//! - a link-local address (`169.254.0.0/16`, `fe80::/10`: the cloud metadata service lives
//!   there and hands out the node's credentials), an unspecified or a multicast address;
//! - the operator's own ports (health, metrics, webhook) on loopback.
//!
//! The address checks apply to what the host name resolves to, so a name that points at the
//! metadata address is refused too (the check runs in the resolver, right before connecting).
//! Through an `HTTP(S)_PROXY` the proxy resolves and connects, so only the rules apply.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use ctop_core::EgressRule;
use parking_lot::RwLock;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// The destinations of one script's `fetch`, shared by all its runtimes.
#[derive(Debug, Default, Clone)]
pub struct EgressPolicy {
    /// The allowed destinations.
    pub rules: Vec<EgressRule>,
    /// Loopback ports that stay closed (the operator's own servers).
    pub own_ports: Vec<u16>,
}

/// The policy of a script, set once its registry is read and whenever the host adds rules.
pub(crate) type EgressSlot = Arc<RwLock<EgressPolicy>>;

/// Why a destination is refused (the text becomes the fetch error a script sees).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum Denied {
    /// No rule allows the URL.
    #[error(
        "{url} is not an allowed destination ({}); declare it with .egress(\"{suggest}\") on the operator, \
         or let the deployer allow it with ctop run --egress {suggest}",
        declared(.rules)
    )]
    NoRule {
        /// The URL asked for.
        url: String,
        /// The rules in force.
        rules: Vec<String>,
        /// The rule that would allow it.
        suggest: String,
    },
    /// The name resolves only to addresses no rule can open.
    #[error("{host} resolves to {address}, {why}, which a script may never reach")]
    Address {
        /// The host name.
        host: String,
        /// One refused address.
        address: IpAddr,
        /// Which kind of address it is.
        why: &'static str,
    },
}

fn declared(rules: &[String]) -> String {
    if rules.is_empty() {
        "the operator declares no egress".to_owned()
    } else {
        format!("allowed: {}", rules.join(", "))
    }
}

impl EgressPolicy {
    /// Checks a request URL (absolute http or https) against the rules.
    pub(crate) fn check(&self, uri: &Uri) -> Result<(), Denied> {
        let scheme = uri.scheme_str().unwrap_or_default();
        let host = uri.host().unwrap_or_default();
        let port = uri.port_u16().unwrap_or(if scheme.eq_ignore_ascii_case("https") { 443 } else { 80 });
        let path = uri.path();
        if self.rules.iter().any(|r| r.allows(scheme, host, port, path)) {
            return Ok(());
        }
        let default_port = (scheme.eq_ignore_ascii_case("https") && port == 443)
            || (scheme.eq_ignore_ascii_case("http") && port == 80);
        let suggest =
            if default_port { format!("{scheme}://{host}") } else { format!("{scheme}://{host}:{port}") };
        Err(Denied::NoRule {
            url: uri.to_string(),
            rules: self.rules.iter().map(ToString::to_string).collect(),
            suggest,
        })
    }

    /// Why `addr` may not be connected to, if it may not.
    pub(crate) fn refuses(&self, addr: SocketAddr) -> Option<&'static str> {
        let ip = canonical(addr.ip());
        match ip {
            IpAddr::V4(v4) if v4.is_link_local() => Some("a link-local address (cloud metadata)"),
            IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80 => {
                Some("a link-local address (cloud metadata)")
            }
            ip if ip.is_unspecified() => Some("an unspecified address"),
            ip if ip.is_multicast() => Some("a multicast address"),
            ip if ip.is_loopback() && self.own_ports.contains(&addr.port()) => {
                Some("one of the operator's own ports (health, metrics or webhook)")
            }
            _ => None,
        }
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// ureq's resolver with the policy's address checks: refused addresses are dropped, and a
/// name left with none fails.
#[derive(Debug)]
pub(crate) struct GuardedResolver {
    pub(crate) policy: EgressSlot,
    pub(crate) inner: DefaultResolver,
}

impl Resolver for GuardedResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let resolved = self.inner.resolve(uri, config, timeout)?;
        let policy = self.policy.read();
        let mut kept = self.empty();
        kept.truncate(0);
        let mut refused = None;
        for addr in resolved.iter().copied() {
            match policy.refuses(addr) {
                None => kept.push(addr),
                Some(why) => refused = Some((addr.ip(), why)),
            }
        }
        match refused {
            Some((address, why)) if kept.is_empty() => {
                let host = uri.host().unwrap_or_default().to_owned();
                let denied = Denied::Address { host, address, why };
                Err(ureq::Error::Io(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    denied.to_string(),
                )))
            }
            _ => Ok(kept),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn policy(rules: &[&str], own_ports: &[u16]) -> EgressPolicy {
        EgressPolicy {
            rules: rules.iter().map(|r| r.parse().unwrap()).collect(),
            own_ports: own_ports.to_vec(),
        }
    }

    #[test]
    fn only_declared_destinations_pass() {
        let p = policy(&["https://api.github.com", "http://registry.apps.svc:8080/v1"], &[]);
        let ok = |u: &str| p.check(&u.parse().unwrap());
        assert_eq!(ok("https://api.github.com/repos/x"), Ok(()));
        assert_eq!(ok("http://registry.apps.svc:8080/v1/apps/a"), Ok(()));
        let denied = ok("http://169.254.169.254/latest/meta-data").unwrap_err().to_string();
        assert_eq!(
            denied,
            "http://169.254.169.254/latest/meta-data is not an allowed destination (allowed: \
             https://api.github.com, http://registry.apps.svc:8080/v1); declare it with \
             .egress(\"http://169.254.169.254\") on the operator, or let the deployer allow it with \
             ctop run --egress http://169.254.169.254"
        );
        let none = policy(&[], &[]).check(&"http://x.io:81/".parse().unwrap()).unwrap_err().to_string();
        assert!(
            none.contains("(the operator declares no egress)") && none.contains("http://x.io:81"),
            "{none}"
        );
    }

    #[test]
    fn link_local_and_own_ports_are_never_reached() {
        let p = policy(&["http://*.example.com:*"], &[8080, 8081]);
        let addr = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert!(p.refuses(addr("169.254.169.254:80")).is_some());
        assert!(p.refuses(addr("[fe80::1]:80")).is_some());
        assert!(p.refuses(addr("[::ffff:169.254.169.254]:80")).is_some());
        assert!(p.refuses(addr("0.0.0.0:80")).is_some());
        assert!(p.refuses(addr("224.0.0.1:80")).is_some());
        assert!(p.refuses(addr("127.0.0.1:8081")).is_some());
        assert!(p.refuses(addr("[::1]:8080")).is_some());
        assert_eq!(p.refuses(addr("127.0.0.1:9000")), None);
        assert_eq!(p.refuses(addr("10.0.0.7:8080")), None);
        assert_eq!(p.refuses(addr("93.184.216.34:443")), None);
    }
}

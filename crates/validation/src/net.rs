//! IP addresses and CIDRs as `k8s.io/utils/net` parses them (`ParseIPSloppy`,
//! `ParseCIDRSloppy`: Go's `net` parsers, but an IPv4 octet may have leading zeros, read as
//! decimal), and the messages of `validation.IsValidIP` / `IsValidCIDR`. Kubernetes 1.33
//! runs with StrictIPCIDRValidation off (alpha), so the `...ForLegacyField` checks are
//! these.

use std::net::Ipv6Addr;

/// `IsValidIP`'s detail.
pub(crate) const INVALID_IP: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
/// `IsValidCIDR`'s detail.
pub(crate) const INVALID_CIDR: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

/// A parsed address: 4 bytes for IPv4 (dotted form), 16 for IPv6.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ip {
    V4([u8; 4]),
    V6([u8; 16]),
}

impl Ip {
    fn bits(&self) -> u32 {
        match self {
            Ip::V4(_) => 32,
            Ip::V6(_) => 128,
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Ip::V4(b) => b,
            Ip::V6(b) => b,
        }
    }
}

/// Dotted IPv4, each octet 1-3 decimal digits (leading zeros allowed), at most 255.
fn parse_v4(s: &str) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    let mut parts = s.split('.');
    for slot in &mut out {
        let part = parts.next()?;
        if part.is_empty() || part.len() > 3 || !part.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        *slot = part.parse::<u16>().ok().and_then(|n| u8::try_from(n).ok())?;
    }
    parts.next().is_none().then_some(out)
}

/// `netutils.ParseIPSloppy`: `None` where it returns nil.
pub(crate) fn parse_ip(s: &str) -> Option<Ip> {
    if s.contains(':') {
        // Go accepts a trailing dotted IPv4 in an IPv6 address, as Rust does; a zone is
        // refused by both.
        s.parse::<Ipv6Addr>().ok().map(|a| Ip::V6(a.octets()))
    } else {
        parse_v4(s).map(Ip::V4)
    }
}

impl Ip {
    /// The address as Go's `net.IP` methods see it: an IPv4-mapped IPv6 is IPv4.
    fn unmapped(&self) -> Ip {
        match self {
            Ip::V6(b) if b[..10].iter().all(|x| *x == 0) && b[10] == 0xff && b[11] == 0xff => {
                Ip::V4([b[12], b[13], b[14], b[15]])
            }
            other => *other,
        }
    }
}

/// `ValidateNonSpecialIP`'s details for a parsed address (Go's `IsUnspecified`,
/// `IsLoopback`, `IsLinkLocalUnicast`, `IsLinkLocalMulticast`); `text` is the value as
/// written.
pub(crate) fn special_ip_errors(ip: &Ip, text: &str) -> Vec<String> {
    let (unspecified, loopback, link_local, link_local_multicast) = match ip.unmapped() {
        Ip::V4(b) => (
            b == [0, 0, 0, 0],
            b[0] == 127,
            b[0] == 169 && b[1] == 254,
            b[0] == 224 && b[1] == 0 && b[2] == 0,
        ),
        Ip::V6(b) => (
            b.iter().all(|x| *x == 0),
            b[..15].iter().all(|x| *x == 0) && b[15] == 1,
            b[0] == 0xfe && b[1] & 0xc0 == 0x80,
            b[0] == 0xff && b[1] & 0x0f == 0x02,
        ),
    };
    let mut out = Vec::new();
    if unspecified {
        out.push(format!("may not be unspecified ({text})"));
    }
    if loopback {
        out.push("may not be in the loopback range (127.0.0.0/8, ::1/128)".to_owned());
    }
    if link_local {
        out.push("may not be in the link-local range (169.254.0.0/16, fe80::/10)".to_owned());
    }
    if link_local_multicast {
        out.push("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)".to_owned());
    }
    out
}

/// A network: its masked address and prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cidr {
    net: Ip,
    prefix: u32,
}

impl Cidr {
    /// `ipnet.Contains(ip)`: same family, and the first `prefix` bits agree.
    pub(crate) fn contains(&self, ip: &Ip) -> bool {
        if self.net.bits() != ip.bits() {
            return false;
        }
        masked(ip, self.prefix) == self.net
    }

    /// The network address (`ipnet.IP`).
    pub(crate) fn ip(&self) -> Ip {
        self.net
    }

    /// `ipnet.Mask.Size()`'s ones.
    pub(crate) fn prefix(&self) -> u32 {
        self.prefix
    }
}

fn masked(ip: &Ip, prefix: u32) -> Ip {
    let mut bytes = [0u8; 16];
    for (i, b) in ip.bytes().iter().enumerate() {
        let bit = u32::try_from(i).unwrap_or(u32::MAX).saturating_mul(8);
        let keep = prefix.saturating_sub(bit).min(8);
        let mask = if keep == 0 { 0 } else { 0xffu8 << (8 - keep) };
        bytes[i] = b & mask;
    }
    match ip {
        Ip::V4(_) => Ip::V4([bytes[0], bytes[1], bytes[2], bytes[3]]),
        Ip::V6(_) => Ip::V6(bytes),
    }
}

/// `netutils.ParseCIDRSloppy`: `addr/prefix`, the prefix decimal and within the family.
pub(crate) fn parse_cidr(s: &str) -> Option<Cidr> {
    let (addr, prefix) = s.split_once('/')?;
    let ip = parse_ip(addr)?;
    if prefix.is_empty() || prefix.len() > 3 || !prefix.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let prefix: u32 = prefix.parse().ok()?;
    if prefix > ip.bits() {
        return None;
    }
    Some(Cidr { net: masked(&ip, prefix), prefix })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// k8s.io/utils/net ParseIPSloppy / ParseCIDRSloppy (Go's net parsers, leading zeros allowed).
    #[test]
    fn parses_like_sloppy_go() {
        assert_eq!(parse_ip("10.0.0.1"), Some(Ip::V4([10, 0, 0, 1])));
        assert_eq!(parse_ip("010.000.0.1"), Some(Ip::V4([10, 0, 0, 1])));
        assert!(parse_ip("256.0.0.1").is_none());
        assert!(parse_ip("10.0.0").is_none());
        assert!(parse_ip("2001:db8::1").is_some());
        assert!(parse_ip("None").is_none());
        assert!(parse_ip("").is_none());
        let net = parse_cidr("10.0.0.0/8").expect("parses");
        assert!(net.contains(&Ip::V4([10, 1, 2, 3])));
        assert!(!net.contains(&Ip::V4([11, 0, 0, 0])));
        assert_eq!(parse_cidr("10.1.2.3/16").map(|c| c.ip()), Some(Ip::V4([10, 1, 0, 0])));
        assert!(parse_cidr("10.0.0.0/33").is_none());
        assert!(parse_cidr("10.0.0.0").is_none());
        assert!(parse_cidr("2001:db8::/64").is_some());
    }
}

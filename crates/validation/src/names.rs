//! apimachinery's `util/validation` string checks (`IsDNS1123Label`, `IsQualifiedName`,
//! `IsValidLabelValue`, `IsValidPortName`, ...): each returns the list of detail messages
//! the server puts after `Invalid value: "x": `, empty when the value is valid. The
//! regular expressions are written out as character scans.

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const CONFIG_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
const PERCENT_FMT: &str = "[0-9]+%";
const PERCENT_MSG: &str = "a valid percent string must be a numeric string followed by an ending '%'";
const HEADER_FMT: &str = "[-A-Za-z0-9]+";
const HEADER_MSG: &str = "a valid HTTP header must consist of alphanumeric characters or '-'";

/// `MaxLenError`.
pub(crate) fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// `RegexError`: the message, the examples, then the expression.
pub(crate) fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let shown: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!("{msg} (e.g. {}regex used for validation is '{fmt}')", shown.join(" or "))
}

/// `InclusiveRangeError`.
pub(crate) fn range_error(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

fn alnum_lower(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn dns_label_shape(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && alnum_lower(b[0])
        && alnum_lower(b[b.len() - 1])
        && b.iter().all(|&c| alnum_lower(c) || c == b'-')
}

fn subdomain_shape(s: &str) -> bool {
    s.split('.').all(dns_label_shape)
}

/// `IsDNS1123Label`.
pub(crate) fn dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !dns_label_shape(s) {
        if subdomain_shape(s) {
            errs.push("must not contain dots".to_owned());
        } else {
            errs.push(regex_error(DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, &["my-name", "123-abc"]));
        }
    }
    errs
}

/// `IsDNS1123Subdomain`.
pub(crate) fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !subdomain_shape(s) {
        errs.push(regex_error(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errs
}

/// `NameIsDNSSubdomain(name, false)` and friends: the name rules of `ValidateObjectMeta`.
pub(crate) fn subdomain_name(s: &str) -> Vec<String> {
    dns1123_subdomain(s)
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn qualified_shape(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `IsQualifiedName` (label keys, annotation keys, finalizers, condition types, ...).
pub(crate) fn qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else {
                errs.extend(dns1123_subdomain(prefix).into_iter().map(|m| format!("prefix part {m}")));
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !qualified_shape(name) {
        errs.push(format!(
            "name part {}",
            regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
        ));
    }
    errs
}

/// `IsValidLabelValue`.
pub(crate) fn label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !value.is_empty() && !qualified_shape(value) {
        errs.push(regex_error(LABEL_VALUE_MSG, LABEL_VALUE_FMT, &["MyValue", "my_value", "12345"]));
    }
    errs
}

/// `IsValidPortNum`.
pub(crate) fn port_num(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) { Vec::new() } else { vec![range_error(1, 65535)] }
}

/// `IsValidPortName` (an IANA_SVC_NAME).
pub(crate) fn port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push(max_len_error(15));
    }
    if port.is_empty() || !port.bytes().all(|c| alnum_lower(c) || c == b'-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_owned());
    }
    if !port.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_owned());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".to_owned());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_owned());
    }
    errs
}

/// `IsRelaxedEnvVarName`: 1.33 runs with RelaxedEnvironmentVariableValidation on (beta,
/// default on), so env names and envFrom prefixes follow this rule.
pub(crate) fn relaxed_env_var_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.is_empty() {
        errs.push("environment variable name must be non-empty".to_owned());
    }
    if value.chars().any(|c| !c.is_ascii() || c.is_ascii_control() || c == '=') {
        errs.push("a valid environment variable name must consist only of printable ASCII characters other than '='".to_owned());
    }
    errs
}

fn chdir_prefix(value: &str) -> Vec<String> {
    match value {
        "." => vec!["must not be '.'".to_owned()],
        ".." => vec!["must not be '..'".to_owned()],
        v if v.starts_with("..") => vec!["must not start with '..'".to_owned()],
        _ => Vec::new(),
    }
}

/// `IsConfigMapKey` (ConfigMap and Secret data keys, key selectors).
pub(crate) fn config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len_error(253));
    }
    if value.is_empty()
        || !value.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'))
    {
        errs.push(regex_error(CONFIG_KEY_MSG, CONFIG_KEY_FMT, &["key.name", "KEY_NAME", "key-name"]));
    }
    errs.extend(chdir_prefix(value));
    errs
}

/// `IsValidPercent`.
pub(crate) fn percent(value: &str) -> Vec<String> {
    let digits = value.strip_suffix('%').unwrap_or_default();
    if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) {
        Vec::new()
    } else {
        vec![regex_error(PERCENT_MSG, PERCENT_FMT, &["1%", "93%"])]
    }
}

/// `IsHTTPHeaderName`.
pub(crate) fn http_header_name(value: &str) -> Vec<String> {
    if !value.is_empty() && value.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-') {
        Vec::new()
    } else {
        vec![regex_error(HEADER_MSG, HEADER_FMT, &["X-Header-Name"])]
    }
}

/// `IsValidUserID` / `IsValidGroupID`.
pub(crate) fn unix_id(id: i64) -> Vec<String> {
    if (0..=0xffff_ffff).contains(&id) { Vec::new() } else { vec![range_error(0, 0xffff_ffff)] }
}

const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const WILDCARD_SUBDOMAIN_FMT: &str = "\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const WILDCARD_SUBDOMAIN_MSG: &str = "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character";

/// `IsDNS1035Label` (`NameIsDNS1035Label`, which `ValidateServiceName` is).
pub(crate) fn dns1035_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !(dns_label_shape(s) && s.as_bytes()[0].is_ascii_lowercase()) {
        errs.push(regex_error(DNS1035_LABEL_MSG, DNS1035_LABEL_FMT, &["my-name", "abc-123"]));
    }
    errs
}

/// `IsWildcardDNS1123Subdomain`: `*.` and a subdomain.
pub(crate) fn wildcard_dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !s.strip_prefix("*.").is_some_and(subdomain_shape) {
        errs.push(regex_error(WILDCARD_SUBDOMAIN_MSG, WILDCARD_SUBDOMAIN_FMT, &["*.example.com"]));
    }
    errs
}

/// `path.IsValidPathSegmentName`: not `.` or `..`, no `/` or `%`.
pub(crate) fn path_segment_name(s: &str) -> Vec<String> {
    if s == "." || s == ".." {
        return vec![format!("may not be '{s}'")];
    }
    ["/", "%"].iter().filter(|c| s.contains(*c)).map(|c| format!("may not contain '{c}'")).collect()
}

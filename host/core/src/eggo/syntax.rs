//! The value syntaxes Eggo's checker tests with Go's and Kubernetes'
//! parsers, redone here so a file is judged as Eggo would judge it.

use std::net::IpAddr;

/// Kubernetes' `IsDNS1123Subdomain`: lower-case letters, digits, `-` and
/// `.`, alphanumeric at both ends of each label, at most 253 characters.
pub(super) fn dns1123_subdomain(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err("must not be empty (an RFC 1123 subdomain)".to_owned());
    }
    if text.len() > 253 {
        return Err(format!("{text:?} is longer than 253 characters"));
    }
    let label_ok = |label: &str| {
        let bytes = label.as_bytes();
        !bytes.is_empty()
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            && bytes[0] != b'-'
            && bytes[bytes.len() - 1] != b'-'
    };
    if text.split('.').all(label_ok) {
        Ok(())
    } else {
        Err(format!(
            "{text:?} is not an RFC 1123 subdomain (lower-case letters, digits, '-' and '.', \
             starting and ending with a letter or digit)"
        ))
    }
}

/// Go's `net.ParseIP`: an IPv4 or IPv6 address.
pub(super) fn ip(text: &str) -> Result<IpAddr, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not an IP address"))
}

/// Go's `net.ParseCIDR`: an address, `/`, and a prefix length that fits it.
pub(super) fn cidr(text: &str) -> Result<(), String> {
    let bad = || format!("{text:?} is not a CIDR (address/prefix length)");
    let (address, prefix) = text.split_once('/').ok_or_else(bad)?;
    let address = ip(address).map_err(|_| bad())?;
    if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let bits = if address.is_ipv4() { 32 } else { 128 };
    match prefix.parse::<u32>() {
        Ok(length) if length <= bits => Ok(()),
        _ => Err(bad()),
    }
}

/// Go's `time.ParseDuration`: an optional sign, then one or more decimal
/// numbers each with a unit (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`), or `0`.
pub(super) fn go_duration(text: &str) -> Result<(), String> {
    go_seconds(text).map(|_| ())
}

/// A Go duration that is not negative, such as a `shell` package's
/// timeout.
pub fn parse_go_duration(text: &str) -> Result<std::time::Duration, String> {
    let seconds = go_seconds(text)?;
    std::time::Duration::try_from_secs_f64(seconds)
        .map_err(|_| format!("{text:?} is not a duration a step can wait for"))
}

/// The seconds a Go duration stands for, with its sign.
fn go_seconds(text: &str) -> Result<f64, String> {
    let bad = || format!("{text:?} is not a Go duration (e.g. 30s, 1m30s, 120s)");
    let sign = if text.starts_with('-') { -1.0 } else { 1.0 };
    let rest = text.strip_prefix(['+', '-']).unwrap_or(text);
    if rest == "0" {
        return Ok(0.0);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut rest = rest;
    let mut seconds = 0.0;
    while !rest.is_empty() {
        let number = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let digits = &rest[..number];
        if digits.is_empty() || digits == "." || digits.matches('.').count() > 1 {
            return Err(bad());
        }
        let value: f64 = digits.parse().map_err(|_| bad())?;
        rest = &rest[number..];
        let (unit, scale) = [
            ("ns", 1e-9),
            ("us", 1e-6),
            ("µs", 1e-6),
            ("μs", 1e-6),
            ("ms", 1e-3),
            ("s", 1.0),
            ("m", 60.0),
            ("h", 3600.0),
        ]
        .into_iter()
        .filter(|(unit, _)| rest.starts_with(*unit))
        .max_by_key(|(unit, _)| unit.len())
        .ok_or_else(bad)?;
        seconds += value * scale;
        rest = &rest[unit.len()..];
    }
    // Go counts in int64 nanoseconds, about 292 years.
    if seconds > i64::MAX as f64 / 1e9 {
        return Err(format!("{text:?} is longer than a Go duration can be"));
    }
    Ok(sign * seconds)
}

/// Go's `net.SplitHostPort`: `host:port` or `[v6-host]:port`; the port
/// may be empty but its colon may not be missing.
pub(super) fn split_host_port(text: &str) -> Result<(&str, &str), String> {
    if let Some(bracketed) = text.strip_prefix('[') {
        let (host, after) = bracketed
            .split_once(']')
            .ok_or_else(|| format!("{text:?}: missing ']' in address"))?;
        let port = after
            .strip_prefix(':')
            .ok_or_else(|| format!("{text:?}: missing port in address"))?;
        return Ok((host, port));
    }
    let (host, port) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("{text:?}: missing port in address"))?;
    if host.contains(':') {
        return Err(format!("{text:?}: too many colons in address"));
    }
    Ok((host, port))
}

/// Go's `filepath.IsAbs` on Linux.
pub(super) fn is_absolute(path: &str) -> bool {
    path.starts_with('/')
}

/// What Go's `url.Parse` refuses in a runtime endpoint such as
/// `unix:///var/run/docker.sock`: control characters, a bad `%` escape, a
/// scheme that is empty, and (with no scheme) a colon in the first segment.
pub(super) fn url(text: &str) -> Result<(), String> {
    if text.chars().any(char::is_control) {
        return Err(format!("{text:?}: invalid control character in URL"));
    }
    let bytes = text.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        let escape_ok = || {
            bytes
                .get(i + 1..i + 3)
                .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
        };
        if *b == b'%' && !escape_ok() {
            return Err(format!("{text:?}: invalid URL escape"));
        }
    }
    match scheme_end(text) {
        Some(0) => Err(format!("{text:?}: missing protocol scheme")),
        Some(_) => Ok(()),
        None => {
            let first_segment = text.split('/').next().unwrap_or_default();
            if first_segment.contains(':') {
                Err(format!(
                    "{text:?}: first path segment in URL cannot contain colon"
                ))
            } else {
                Ok(())
            }
        }
    }
}

/// Where the scheme's `:` is, as Go's `getScheme` finds it.
fn scheme_end(text: &str) -> Option<usize> {
    for (i, c) in text.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' => return Some(i),
            _ => return None,
        }
    }
    None
}

/// Go's `filepath.Clean` on Linux, for absolute paths: `.`, `..` and
/// repeated slashes resolved lexically.
pub(super) fn clean_absolute(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            _ => parts.push(part),
        }
    }
    format!("/{}", parts.join("/"))
}

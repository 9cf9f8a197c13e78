//! A kubeconfig's `server`: its scheme, host and port, and the spellings of
//! an address (numeric host names, IPv4 inside IPv6) that must be checked
//! as the address they stand for.

use std::net::{IpAddr, Ipv4Addr};

/// The host part of a server URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Host {
    Ip(IpAddr),
    Name(String),
}

/// A server URL: `https://`, or `http://` to a loopback address only.
#[derive(Debug, Clone)]
pub(super) struct ServerUrl {
    pub(super) host: Host,
    pub(super) port: u16,
}

impl ServerUrl {
    pub(super) fn parse(text: &str) -> Result<ServerUrl, String> {
        let uri: http::Uri = text.parse().map_err(|e| format!("not a URL: {e}"))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => {
                return Err(
                    "the server must be an https:// URL (http:// only for a loopback address)"
                        .to_owned(),
                );
            }
        };
        let authority = uri.authority().ok_or("the URL names no host")?;
        if authority.as_str().contains('@') {
            return Err("credentials in the URL are not accepted".to_owned());
        }
        let host_text = authority.host();
        let bare = host_text.trim_start_matches('[').trim_end_matches(']');
        // `169.254.169.254.` resolves as the address itself.
        let bare = bare.strip_suffix('.').unwrap_or(bare);
        let host = match bare.parse::<IpAddr>() {
            Ok(ip) => Host::Ip(ip),
            Err(_) if looks_numeric(bare) => {
                return Err(format!(
                    "{bare} is an IP address in a non-standard form; write it in dotted \
                     decimal"
                ));
            }
            Err(_) => Host::Name(bare.to_ascii_lowercase()),
        };
        if !https {
            let loopback = match &host {
                Host::Ip(ip) => ip.to_canonical().is_loopback(),
                Host::Name(name) => name == "localhost",
            };
            if !loopback {
                return Err(
                    "http:// is only for a loopback address (a virtual cluster on this \
                     machine); use https://"
                        .to_owned(),
                );
            }
        }
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        Ok(ServerUrl { host, port })
    }
}

/// Whether a host name is one of the numeric spellings of an IPv4 address
/// that the system resolver accepts (`2852039166`, `0xa9.0xfe.0xa9.0xfe`,
/// `0251.0376.0251.0376`, `169.254.43518`), which would bypass the network
/// check.
pub(super) fn looks_numeric(host: &str) -> bool {
    !host.is_empty()
        && host.split('.').all(|part| {
            let digits = part
                .strip_prefix("0x")
                .or_else(|| part.strip_prefix("0X"))
                .map(|hex| !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()));
            digits.unwrap_or(!part.is_empty() && part.chars().all(|c| c.is_ascii_digit()))
        })
}

/// An address and every IPv4 address it embeds.
pub(super) fn embedded_addresses(address: IpAddr) -> Vec<IpAddr> {
    let mut all = vec![address];
    if let IpAddr::V6(v6) = address {
        let octets = v6.octets();
        let segments = v6.segments();
        let tail = Ipv4Addr::new(octets[12], octets[13], octets[14], octets[15]);
        // ::ffff:a.b.c.d, and the deprecated ::a.b.c.d (but not :: or ::1).
        if let Some(v4) = v6.to_ipv4_mapped() {
            all.push(v4.into());
        } else if segments[..6] == [0; 6] && !matches!(segments[6..], [0, 0] | [0, 1]) {
            all.push(tail.into());
        }
        // NAT64, 64:ff9b::a.b.c.d.
        if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
            all.push(tail.into());
        }
        // 6to4, 2002:AABB:CCDD::.
        if segments[0] == 0x2002 {
            all.push(Ipv4Addr::new(octets[2], octets[3], octets[4], octets[5]).into());
        }
    }
    all
}

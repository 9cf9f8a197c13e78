//! Scoped API tokens: EMCO's projects are tenants, and a scoped token lets
//! its holder read (viewer) or change and deploy (editor) some projects and
//! nothing else. The admin token in `DATA_DIR/admin.token` can do anything.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::document::{FieldError, Metadata};

/// What a scoped token may do in its projects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads its projects.
    Viewer,
    /// Reads, changes and deploys its projects.
    Editor,
}

/// `POST /v2/tokens`: `{"metadata": {"name"}, "spec": {"projects", "role",
/// "expires"}}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenRequest {
    /// The token's name (who holds it, in the audit log).
    pub metadata: Metadata,
    /// Its scope.
    pub spec: TokenRequestSpec,
}

/// The scope a token is asked for, and shown with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenRequestSpec {
    /// The projects it may touch (they need not exist yet).
    pub projects: BTreeSet<String>,
    /// Viewer or editor.
    pub role: Role,
    /// When it stops working: an RFC 3339 time (`2027-01-31T00:00:00Z`) or
    /// a duration from now (`30d`, `12h`).
    pub expires: String,
}

/// A token as the API shows it: its scope and when it was issued, never
/// its secret or hash (but for its secret once, in the answer to its issue).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenShown {
    /// Its name.
    pub metadata: Metadata,
    /// Its scope; `expires` as RFC 3339.
    pub spec: TokenRequestSpec,
    /// When it was issued and whether it ran out.
    pub status: TokenStatus,
}

/// What the host says about a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenStatus {
    /// When it was issued, RFC 3339.
    pub issued: String,
    /// Whether it has run out.
    pub expired: bool,
    /// Its secret: only in the answer to its issue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// A token as stored and listed: never its secret, only the secret's hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    /// Its name.
    pub name: String,
    /// The projects it may touch.
    pub projects: BTreeSet<String>,
    /// What it may do there.
    pub role: Role,
    /// When it was issued (seconds since the Unix epoch).
    pub issued: u64,
    /// When it stops working (seconds since the Unix epoch).
    pub expires: u64,
    /// SHA-256 of the secret, hex.
    pub digest: String,
}

impl TokenRecord {
    /// Whether the token has run out at `now` (seconds since the epoch).
    pub fn expired(&self, now: u64) -> bool {
        now >= self.expires
    }

    /// Whether the token may touch `project`.
    pub fn covers(&self, project: &str) -> bool {
        self.projects.contains(project)
    }
}

/// `expires` as seconds since the epoch: an RFC 3339 time in the future, or
/// a duration after `now`.
pub fn parse_expiry(text: &str, now: u64) -> Result<u64, FieldError> {
    let field = "spec.expires";
    let at = match humantime::parse_duration(text) {
        Ok(duration) => now.saturating_add(duration.as_secs()),
        Err(_) => humantime::parse_rfc3339_weak(text)
            .map_err(|_| {
                FieldError::new(
                    field,
                    format!("{text:?} is neither an RFC 3339 time nor a duration such as 30d"),
                )
            })?
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    };
    if at <= now {
        return Err(FieldError::new(
            field,
            "the token would have expired already",
        ));
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_a_future_time_or_a_duration() {
        let now = 1_800_000_000;
        assert_eq!(parse_expiry("1h", now).unwrap(), now + 3600);
        assert_eq!(
            parse_expiry("2030-01-01T00:00:00Z", now).unwrap(),
            1_893_456_000
        );
        assert!(parse_expiry("2020-01-01T00:00:00Z", now).is_err());
        assert_eq!(parse_expiry("soon", now).unwrap_err().field, "spec.expires");
    }
}

//! Bounds on what a user's file may make the host do before it is refused:
//! how deep its YAML nests, how many entries its archive has and how much
//! it unpacks to.
//!
//! The YAML parser (libyaml, under serde_norway) stops at 128 levels only
//! after it has scanned the whole document, at about 10 µs per level of
//! flow nesting: 32 MiB of `[` would hold a parsing thread for minutes. The
//! scan here refuses such a document in one cheap pass first.

use std::io::Read;

/// Flow nesting (`[`, `{`) past which a document is refused before it is
/// parsed. The parser itself refuses past 128 levels, so nothing it would
/// accept is refused here unless its scalars hold over a hundred unmatched
/// brackets.
pub const MAX_YAML_FLOW_DEPTH: usize = 256;

/// Entries a `.tgz` may hold.
pub const MAX_ARCHIVE_ENTRIES: usize = 10_000;

/// Bytes a `.tgz` may unpack to; past this it is refused without being
/// inflated further (a gzip bomb stops here).
pub const MAX_UNPACKED_BYTES: u64 = 128 << 20;

/// Refuses YAML (or JSON) whose flow collections nest deeper than
/// [`MAX_YAML_FLOW_DEPTH`]. Brackets inside comments and quoted scalars do
/// not count; a quote opens a scalar only where a token can start (after
/// indentation, `[`, `{`, `,`, `:`, `-` or `?`), as the YAML scanner sees it.
pub fn check_yaml_depth(text: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    // The last byte that was not a space or tab on this line; None at a line start.
    let mut previous: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        match byte {
            b'\n' => previous = None,
            b' ' | b'\t' | b'\r' => {}
            b'#' if i == 0 || matches!(bytes[i - 1], b' ' | b'\t' | b'\n' | b'\r') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' | b'\'' if previous.is_none_or(|p| b"[{,:-?".contains(&p)) => {
                i = skip_quoted(bytes, i);
                previous = Some(byte);
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_YAML_FLOW_DEPTH {
                    return Err(format!(
                        "nests deeper than {MAX_YAML_FLOW_DEPTH} levels of [ and {{"
                    ));
                }
                previous = Some(byte);
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                previous = Some(byte);
            }
            _ => previous = Some(byte),
        }
        i += 1;
    }
    Ok(())
}

/// The index just past the quoted scalar opening at `start`.
fn skip_quoted(bytes: &[u8], start: usize) -> usize {
    let quote = bytes[start];
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if quote == b'"' => i += 2,
            // '' is an escaped quote inside single quotes.
            b'\'' if quote == b'\'' && bytes.get(i + 1) == Some(&b'\'') => i += 2,
            b if b == quote => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// How much of a message that comes from a controller or a user's input
/// reaches a response, a log line or the store.
pub const MAX_MESSAGE_BYTES: usize = 64 << 10;

/// `text` with its control characters escaped (`\r` as `\\r`, an escape
/// as `\\u{1b}`), newlines and tabs kept: what a controller or a cluster
/// wrote cannot move a terminal's cursor or forge a line of a log.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    escaped(text, |c| c.is_control() && c != '\n' && c != '\t')
}

/// [`printable`] for one line: newlines escaped too.
pub fn printable_line(text: &str) -> std::borrow::Cow<'_, str> {
    escaped(text, |c| c.is_control() && c != '\t')
}

fn escaped(text: &str, escape: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(&escape) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escape(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `message` cut to [`MAX_MESSAGE_BYTES`], saying how much was cut, and
/// made [`printable`].
pub fn bounded(message: String) -> String {
    let message = match printable(&message) {
        std::borrow::Cow::Borrowed(_) => message,
        std::borrow::Cow::Owned(escaped) => escaped,
    };
    if message.len() <= MAX_MESSAGE_BYTES {
        return message;
    }
    let kept = cut(&message, MAX_MESSAGE_BYTES);
    format!("{kept}… ({} more bytes cut)", message.len() - kept.len())
}

/// `text` cut to at most `max` bytes, at a character boundary.
pub fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A reader that fails once more than `limit` bytes have come through it.
pub struct Bounded<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Bounded<R> {
    /// `inner`, refused past `limit` bytes.
    pub fn new(inner: R, limit: u64) -> Self {
        Bounded { inner, left: limit }
    }
}

/// The error a [`Bounded`] reader gives past its limit.
#[derive(Debug, thiserror::Error)]
#[error("it unpacks to more than {} MiB", MAX_UNPACKED_BYTES >> 20)]
pub struct TooLarge;

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            // One byte more tells a stream that ends exactly at the limit
            // from one that goes on.
            let mut probe = [0u8];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(std::io::Error::other(TooLarge)),
            };
        }
        let room = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let read = self.inner.read(&mut buf[..room])?;
        self.left -= read as u64;
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_cannot_forge_a_line() {
        let forged = "ok\r[INFO] all clusters ready\x1b[2K";
        assert_eq!(
            printable(forged),
            "ok\\r[INFO] all clusters ready\\u{1b}[2K"
        );
        assert_eq!(printable("two\nlines\tkept"), "two\nlines\tkept");
        assert_eq!(printable_line("two\nlines"), "two\\nlines");
        assert!(matches!(printable("plain"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(bounded("a\rb".into()), "a\\rb");
    }

    #[test]
    fn deep_flow_nesting_is_refused_and_ordinary_yaml_passes() {
        let deep = format!("{}{}", "[".repeat(40_000), "]".repeat(40_000));
        assert!(check_yaml_depth(&deep).is_err());
        let deep_map = format!("a: {}", "{b: ".repeat(300));
        assert!(check_yaml_depth(&deep_map).is_err());
        let fine = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {x: y}}\ndata:\n  k: \"[[[[\"\n  j: '{{{{'\n  # [[[[[[\n  l: [1, [2, [3]]]\n";
        assert!(check_yaml_depth(fine).is_ok());
    }

    #[test]
    fn brackets_in_quoted_scalars_do_not_count_but_quotes_inside_plain_scalars_hide_nothing() {
        let quoted = format!("a: \"{}\"\nb: '{}'\n", "[".repeat(1000), "{".repeat(1000));
        assert!(check_yaml_depth(&quoted).is_ok());
        // `a "` is a plain scalar, not a quote: the brackets after it count.
        let hidden = format!("x: [a \"b, {}]", "[".repeat(1000));
        assert!(check_yaml_depth(&hidden).is_err());
        // Quoted closers cannot cancel real openers.
        let cancelled = "[\"]\", ".repeat(1000);
        assert!(check_yaml_depth(&cancelled).is_err());
        // Escapes do not end a scalar early.
        let escaped = format!(
            "a: \"\\\"{}\"\nb: 'it''s {}'\n",
            "[".repeat(500),
            "[".repeat(500)
        );
        assert!(check_yaml_depth(&escaped).is_ok());
    }

    #[test]
    fn long_messages_are_cut_at_a_character_boundary() {
        assert_eq!(bounded("short".into()), "short");
        let long = "é".repeat(MAX_MESSAGE_BYTES);
        let cut = bounded(long);
        assert!(cut.len() < MAX_MESSAGE_BYTES + 64, "{}", cut.len());
        assert!(cut.ends_with("bytes cut)"));
    }

    #[test]
    fn a_bounded_reader_stops_past_its_limit() {
        let mut out = Vec::new();
        let error = Bounded::new(&[7u8; 100][..], 10)
            .read_to_end(&mut out)
            .unwrap_err();
        assert!(error.get_ref().unwrap().is::<TooLarge>());
        let mut exact = Vec::new();
        Bounded::new(&[7u8; 10][..], 10)
            .read_to_end(&mut exact)
            .unwrap();
        assert_eq!(exact.len(), 10);
    }
}

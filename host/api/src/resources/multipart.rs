//! The parts of a multipart body wasmco reads.

use axum::http::StatusCode;

use crate::error::ApiError;

/// The parts of a multipart body that wasmco reads.
#[derive(Debug, Default)]
pub(crate) struct Parts {
    pub metadata: Option<Vec<u8>>,
    pub file: Option<Vec<u8>>,
    /// A cluster deployment's `privateKey` part: the key its deploy file's
    /// `private-key-path` names.
    pub private_key: Option<Vec<u8>>,
    /// `files` parts (EMCO's several-file uploads), by file name, in order.
    pub files: Vec<(String, Vec<u8>)>,
}

/// The `metadata` and `file` parts of a multipart body already read whole.
pub(super) fn parse_multipart(bytes: bytes::Bytes, boundary: String) -> Result<Parts, ApiError> {
    parse_multipart_parts(bytes, boundary, false)
}

/// [`parse_multipart`], taking any number of `files` parts when `many`.
pub(crate) fn parse_multipart_parts(
    bytes: bytes::Bytes,
    boundary: String,
    many: bool,
) -> Result<Parts, ApiError> {
    let body = futures_util::stream::once(async move { Ok::<_, std::convert::Infallible>(bytes) });
    let mut multipart = multer::Multipart::new(body, boundary);
    let malformed = |e: multer::Error| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("malformed multipart body: {e}"),
        )
    };
    // The whole body is in memory, so this future never waits: polled
    // once, it finishes here, on this (work pool) thread.
    let parsed = async {
        let mut parts = Parts::default();
        while let Some(field) = multipart.next_field().await.map_err(malformed)? {
            let name = field.name().unwrap_or_default().to_owned();
            let file_name = field.file_name().unwrap_or_default().to_owned();
            let part = field.bytes().await.map_err(malformed)?.to_vec();
            if many && name == "files" {
                parts.files.push((file_name, part));
                continue;
            }
            let slot = match name.as_str() {
                "metadata" => &mut parts.metadata,
                "file" => &mut parts.file,
                "privateKey" => &mut parts.private_key,
                other => {
                    return Err(ApiError::field(
                        StatusCode::BAD_REQUEST,
                        other,
                        format!(
                            "unexpected multipart part {other:?}; expected `metadata` and `file`"
                        ),
                    ));
                }
            };
            if slot.replace(part).is_some() {
                return Err(ApiError::field(
                    StatusCode::BAD_REQUEST,
                    name,
                    "the part appears twice",
                ));
            }
        }
        Ok(parts)
    };
    futures_util::FutureExt::now_or_never(parsed).unwrap_or_else(|| {
        Err(ApiError::internal(
            "a multipart body held in memory waited for more input",
        ))
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn body(boundary: &str, parts: &[(&str, &[u8])]) -> bytes::Bytes {
        let mut out = Vec::new();
        for (name, content) in parts {
            out.extend_from_slice(
                format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n")
                    .as_bytes(),
            );
            out.extend_from_slice(content);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        out.into()
    }

    #[test]
    fn multipart_parts_are_read_and_repeats_refused() {
        let Parts { metadata, file, .. } = parse_multipart(
            body("b", &[("metadata", b"{}"), ("file", b"x\r\ny")]),
            "b".into(),
        )
        .unwrap();
        assert_eq!(metadata.as_deref(), Some(&b"{}"[..]));
        assert_eq!(file.as_deref(), Some(&b"x\r\ny"[..]));
        let twice = parse_multipart(body("b", &[("file", b"1"), ("file", b"2")]), "b".into());
        assert_eq!(twice.unwrap_err().field.as_deref(), Some("file"));
        let other = parse_multipart(body("b", &[("extra", b"1")]), "b".into());
        assert_eq!(other.unwrap_err().status, StatusCode::BAD_REQUEST);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any body under any boundary: parts or a 400, never a panic or a wait.
        #[test]
        fn any_multipart_body_is_parsed_or_refused(bytes in proptest::collection::vec(any::<u8>(), 0..2048), boundary in "[a-zA-Z0-9'()+_,./:=? -]{1,70}") {
            if let Err(error) = parse_multipart(bytes.into(), boundary) {
                prop_assert!(error.status.is_client_error(), "{}", error.message);
            }
        }

        /// What was put in comes out, whatever its bytes.
        #[test]
        fn parts_round_trip(file in proptest::collection::vec(any::<u8>(), 0..512)) {
            let boundary = "wasmco-boundary-7f3a";
            prop_assume!(!file.windows(boundary.len()).any(|w| w == boundary.as_bytes()));
            let parts = parse_multipart(body(boundary, &[("file", &file)]), boundary.into()).unwrap();
            prop_assert_eq!(parts.file, Some(file));
        }
    }
}

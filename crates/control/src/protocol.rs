//! The control protocol: one JSON object per line each way.
//!
//! A client writes a [`Request`] as one line of JSON and reads one
//! [`Response`] line; a connection may carry any number of such exchanges
//! (`pipelab top` keeps one open). Every request carries the protocol
//! version [`VERSION`]; the daemon refuses other versions with an error
//! naming both. A request line is at most [`MAX_REQUEST`] bytes.
//!
//! ```text
//! {"v":1,"op":"exec","script":"pipe 3 config bw 640Kbit/s delay 30ms"}
//! {"v":1,"ok":true,"output":"pipe 3 configured\n"}
//! ```

use serde::{Deserialize, Serialize};

/// The protocol version this crate speaks.
pub const VERSION: u32 = 1;

/// The longest request line accepted, in bytes (a `restore` of a large
/// configuration fits easily: 1000 pipes take about 40 KB).
pub const MAX_REQUEST: usize = 4 << 20;

/// One request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// Protocol version, [`VERSION`].
    pub v: u32,
    /// Root only: act in this user's block (a name or a numeric uid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// What to do.
    #[serde(flatten)]
    pub op: Op,
}

/// What a request asks for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Op {
    /// Commands of the language, one per line, applied all or nothing.
    /// A single query (`show`, `list`, `pipe show`, `table N list`)
    /// answers with its listing.
    Exec {
        /// The commands.
        script: String,
    },
    /// Replaces the caller's whole configuration with this script (all or
    /// nothing).
    Restore {
        /// The configuration, as `save` prints it.
        script: String,
    },
    /// The caller's whole configuration as a script.
    Save,
    /// Counters: the daemon's and the data plane's.
    Stats,
    /// `netconfig client|server|service ...`, `netconfig delete ...`,
    /// `netconfig list`.
    Netconfig {
        /// The words after `netconfig`.
        args: String,
        /// Print what would be created, change nothing.
        #[serde(default)]
        dry_run: bool,
    },
    /// Root only: `user NAME [pipes N] [rules N] [memory SIZE]`, or
    /// `list`.
    Limit {
        /// The words after `limit`.
        args: String,
    },
}

/// One response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// Protocol version, [`VERSION`].
    pub v: u32,
    /// Whether the request succeeded (if not, nothing was changed).
    pub ok: bool,
    /// Text to print (listings, confirmations).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output: String,
    /// Why the request failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Structured data (`stats`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl Response {
    /// A success with text to print.
    pub fn ok(output: impl Into<String>) -> Response {
        Response {
            v: VERSION,
            ok: true,
            output: output.into(),
            error: None,
            data: None,
        }
    }

    /// A failure.
    pub fn err(error: impl Into<String>) -> Response {
        Response {
            v: VERSION,
            ok: false,
            output: String::new(),
            error: Some(error.into()),
            data: None,
        }
    }
}

/// Why a request line is not a request of this protocol.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// The line is longer than [`MAX_REQUEST`].
    #[error("request of {len} bytes is longer than the limit of {MAX_REQUEST} bytes")]
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// The line is not UTF-8.
    #[error("request is not UTF-8 (at byte {at})")]
    NotUtf8 {
        /// The offset of its first invalid byte.
        at: usize,
    },
    /// The line is not JSON.
    #[error("request is not JSON: {0}")]
    NotJson(serde_json::Error),
    /// The request speaks another version of the protocol.
    #[error("protocol version {found} is not supported: this pipelabd speaks version {VERSION}")]
    Version {
        /// The version it gave.
        found: u64,
    },
    /// The request has no `v`.
    #[error("request has no protocol version (\"v\")")]
    NoVersion,
    /// A field the request's op does not take.
    #[error("bad request: unknown field `{field}` for op `{op}`")]
    UnknownField {
        /// The field.
        field: String,
        /// The op (empty if none was given).
        op: String,
    },
    /// Not a request: an unknown op, a missing or mistyped field.
    #[error("bad request: {0}")]
    Bad(serde_json::Error),
}

/// Parses one request line (without its newline). Never panics: any
/// input that is not a well-formed request of this version is an error
/// saying what is wrong.
pub fn parse_request(line: &[u8]) -> Result<Request, ProtocolError> {
    if line.len() > MAX_REQUEST {
        return Err(ProtocolError::TooLong { len: line.len() });
    }
    let text = std::str::from_utf8(line).map_err(|e| ProtocolError::NotUtf8 {
        at: e.valid_up_to(),
    })?;
    // Look at the version first, so that a client of another version gets
    // a version error rather than a confusing field error.
    let value: serde_json::Value = serde_json::from_str(text).map_err(ProtocolError::NotJson)?;
    match value.get("v").and_then(serde_json::Value::as_u64) {
        Some(v) if v == u64::from(VERSION) => {}
        Some(found) => return Err(ProtocolError::Version { found }),
        None => return Err(ProtocolError::NoVersion),
    }
    // Unknown fields are refused, not ignored (a misspelt `dry_run` must
    // not apply for real).
    if let Some(obj) = value.as_object() {
        let op = obj
            .get("op")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("");
        let fields: &[&str] = match op {
            "exec" | "restore" => &["script"],
            "netconfig" => &["args", "dry_run"],
            "limit" => &["args"],
            _ => &[],
        };
        for k in obj.keys() {
            if !matches!(k.as_str(), "v" | "user" | "op") && !fields.contains(&k.as_str()) {
                return Err(ProtocolError::UnknownField {
                    field: k.clone(),
                    op: op.to_string(),
                });
            }
        }
    }
    serde_json::from_value(value).map_err(ProtocolError::Bad)
}

/// A request as one line of JSON, with its newline.
pub fn encode<T: Serialize>(msg: &T) -> String {
    // Serializing these types cannot fail (string keys, no maps of
    // non-string keys); fall back to an error line just in case.
    let mut s = serde_json::to_string(msg)
        .unwrap_or_else(|e| format!("{{\"v\":{VERSION},\"ok\":false,\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        let reqs = [
            Request {
                v: VERSION,
                user: None,
                op: Op::Exec {
                    script: "pipe 3 config bw 640Kbit/s".into(),
                },
            },
            Request {
                v: VERSION,
                user: Some("alice".into()),
                op: Op::Save,
            },
            Request {
                v: VERSION,
                user: None,
                op: Op::Netconfig {
                    args: "list".into(),
                    dry_run: true,
                },
            },
        ];
        for r in reqs {
            let line = encode(&r);
            assert_eq!(parse_request(line.trim_end().as_bytes()).unwrap(), r);
        }
    }

    #[test]
    fn bad_requests_are_errors() {
        let cases: &[(&[u8], &str)] = &[
            (b"", "not JSON"),
            (b"\xff\xfe", "not UTF-8"),
            (b"[1,2]", "no protocol version"),
            (b"{\"v\":2,\"op\":\"save\"}", "version 2 is not supported"),
            (b"{\"v\":1,\"op\":\"launch\"}", "bad request"),
            (b"{\"v\":1,\"op\":\"exec\"}", "missing field `script`"),
            (b"{\"v\":1,\"op\":\"exec\",\"script\":5}", "bad request"),
            (b"{\"v\":1,\"op\":\"save\",\"x\":1}", "bad request"),
        ];
        for (input, want) in cases {
            let e = parse_request(input).unwrap_err().to_string();
            assert!(e.contains(want), "{input:?}: {e}");
        }
    }

    proptest::proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let _ = parse_request(&bytes);
        }

        #[test]
        fn random_json_like_text_never_panics(s in "\\{\"v\":[0-9]{1,3},\"op\":\"(exec|save|stats|netconfig|limit|restore)\"(,\"[a-z_]{1,8}\":(\"[ -~]{0,20}\"|[0-9]{1,25}|true|null|\\[\\]))*\\}") {
            let _ = parse_request(s.as_bytes());
        }
    }
}

//! The channel framing of `v4.channel.k8s.io` and `v5.channel.k8s.io` (Kubernetes'
//! remotecommand and port-forward WebSocket protocols): every binary message is one byte of
//! channel, then the payload. Pure functions over bytes (fuzzed: `fuzz/fuzz_targets/channel_frame.rs`).
//!
//! Exec and attach: 0 stdin (to the server), 1 stdout, 2 stderr, 3 the final `Status`, 4
//! terminal resize (to the server, JSON `{"Width":w,"Height":h}`); v5 adds 255, "close
//! channel N" with N as a one-byte payload (`ff 00` ends stdin). Port-forward, one port per
//! connection: 0 data, 1 errors (text), each starting with the port as two bytes,
//! little-endian.

use crate::api::Status;

/// A channel protocol this crate speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChannelProtocol {
    /// `v4.channel.k8s.io`: no stdin half-close.
    V4,
    /// `v5.channel.k8s.io`: v4 plus the close signal (channel 255).
    V5,
}

impl ChannelProtocol {
    /// The `Sec-WebSocket-Protocol` name.
    pub fn name(self) -> &'static str {
        match self {
            ChannelProtocol::V4 => "v4.channel.k8s.io",
            ChannelProtocol::V5 => "v5.channel.k8s.io",
        }
    }

    /// The protocol of a subprotocol name.
    pub fn from_name(name: &str) -> Option<ChannelProtocol> {
        match name {
            "v4.channel.k8s.io" => Some(ChannelProtocol::V4),
            "v5.channel.k8s.io" => Some(ChannelProtocol::V5),
            _ => None,
        }
    }
}

/// The stdin channel.
pub const STDIN: u8 = 0;
/// The stdout channel.
pub const STDOUT: u8 = 1;
/// The stderr channel.
pub const STDERR: u8 = 2;
/// The status (error) channel.
pub const STATUS: u8 = 3;
/// The resize channel.
pub const RESIZE: u8 = 4;
/// v5's close signal.
pub const CLOSE: u8 = 255;

/// One message of an exec or attach session, as the server sends them.
#[derive(Debug, PartialEq, Eq)]
pub enum ServerFrame<'a> {
    /// Bytes on stdout (empty: the server's "connection established" frame).
    Stdout(&'a [u8]),
    /// Bytes on stderr.
    Stderr(&'a [u8]),
    /// The final Status (JSON, not yet parsed; empty: the established frame).
    Status(&'a [u8]),
    /// v5: the server closed a channel.
    Close(u8),
}

/// Why a message could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameError(pub String);

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FrameError {}

/// Decodes one binary message from the server of an exec or attach session.
pub fn decode_server_frame(
    protocol: ChannelProtocol,
    message: &[u8],
) -> Result<ServerFrame<'_>, FrameError> {
    let Some((&channel, payload)) = message.split_first() else {
        return Err(FrameError("an empty message (no channel byte)".into()));
    };
    match channel {
        STDOUT => Ok(ServerFrame::Stdout(payload)),
        STDERR => Ok(ServerFrame::Stderr(payload)),
        STATUS => Ok(ServerFrame::Status(payload)),
        CLOSE if protocol == ChannelProtocol::V5 => match payload {
            [c] => Ok(ServerFrame::Close(*c)),
            _ => Err(FrameError(format!(
                "a close signal with {} bytes of payload, not 1",
                payload.len()
            ))),
        },
        other => Err(FrameError(format!(
            "a message on channel {other}, which the server does not send on"
        ))),
    }
}

/// A message for the server: `channel` then `payload`.
pub fn encode(channel: u8, payload: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(payload.len() + 1);
    m.push(channel);
    m.extend_from_slice(payload);
    m
}

/// The resize message for a terminal of `width` columns and `height` rows.
pub fn resize_message(width: u16, height: u16) -> Vec<u8> {
    encode(
        RESIZE,
        format!("{{\"Width\":{width},\"Height\":{height}}}").as_bytes(),
    )
}

/// How a command ended, from the session's final `Status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// Exit code 0 (`status: Success`).
    Success,
    /// A non-zero exit code (the `ExitCode` cause of a `NonZeroExitCode` failure).
    Code(i32),
    /// The command could not run or the session failed (an unknown command, the kubelet
    /// unreachable, ...): the Status, with its reason and message.
    Failure(Box<Status>),
}

impl ExitStatus {
    /// The exit code: 0 for success, the command's for a non-zero exit, `None` when the
    /// command did not run to an exit.
    pub fn code(&self) -> Option<i32> {
        match self {
            ExitStatus::Success => Some(0),
            ExitStatus::Code(c) => Some(*c),
            ExitStatus::Failure(_) => None,
        }
    }

    /// True for exit code 0.
    pub fn success(&self) -> bool {
        matches!(self, ExitStatus::Success)
    }

    /// Reads a channel-3 payload. The code comes from `details.causes[reason=ExitCode]`,
    /// never from the message (whose wording differs between v4, v5 and runtimes).
    pub fn from_status_json(json: &[u8]) -> Result<ExitStatus, FrameError> {
        let st: Status = serde_json::from_slice(json).map_err(|e| {
            FrameError(format!(
                "the status message ({} bytes) is not a JSON Status: {}",
                json.len(),
                crate::error::json_error_summary(&e)
            ))
        })?;
        if st.status == "Success" {
            return Ok(ExitStatus::Success);
        }
        if st.status != "Failure" {
            return Err(FrameError(format!(
                "the status message says status {:?}, neither Success nor Failure",
                st.status.chars().take(32).collect::<String>()
            )));
        }
        if st.reason == "NonZeroExitCode" {
            let code = st.details.as_ref().and_then(|d| {
                d.causes
                    .iter()
                    .find(|c| c.reason == "ExitCode")
                    .and_then(|c| c.message.trim().parse::<i32>().ok())
            });
            if let Some(c) = code {
                return Ok(if c == 0 {
                    ExitStatus::Success
                } else {
                    ExitStatus::Code(c)
                });
            }
        }
        Ok(ExitStatus::Failure(Box::new(st)))
    }
}

/// Port-forward: what a channel's first two bytes say, the port, little-endian.
pub fn port_prefix(bytes: &[u8]) -> Result<u16, FrameError> {
    match bytes {
        [a, b, ..] => Ok(u16::from_le_bytes([*a, *b])),
        _ => Err(FrameError(format!(
            "a port-forward channel started with {} bytes, not the 2-byte port",
            bytes.len()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_statuses() {
        let v5 = br#"{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: command terminated with exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}"#;
        assert_eq!(ExitStatus::from_status_json(v5), Ok(ExitStatus::Code(3)));
        assert_eq!(
            ExitStatus::from_status_json(br#"{"status":"Success"}"#),
            Ok(ExitStatus::Success)
        );
        let failed = br#"{"metadata":{},"status":"Failure","message":"Internal error occurred: x","reason":"InternalError","code":500}"#;
        match ExitStatus::from_status_json(failed) {
            Ok(ExitStatus::Failure(st)) => assert_eq!(st.reason, "InternalError"),
            other => panic!("{other:?}"),
        }
        assert!(ExitStatus::from_status_json(b"not json").is_err());
    }

    #[test]
    fn frames() {
        let v5 = ChannelProtocol::V5;
        assert_eq!(
            decode_server_frame(v5, b"\x01hi"),
            Ok(ServerFrame::Stdout(b"hi"))
        );
        assert_eq!(
            decode_server_frame(v5, b"\xff\x00"),
            Ok(ServerFrame::Close(0))
        );
        assert!(decode_server_frame(ChannelProtocol::V4, b"\xff\x00").is_err());
        assert!(decode_server_frame(v5, b"\xff").is_err());
        assert!(decode_server_frame(v5, b"\x07x").is_err());
        assert!(decode_server_frame(v5, b"").is_err());
        assert_eq!(port_prefix(b"\x90\x1f"), Ok(8080));
        assert!(port_prefix(b"\x90").is_err());
    }
}

//! Any bytes as a message of an exec/attach session (both channel protocols) and as a
//! port-forward channel start: decoding gives a frame or an error, never a panic; a decoded
//! frame re-encodes to the same bytes; any status payload parses to an exit status or an
//! error.
#![no_main]

use kube_informer::pod::channels::{
    decode_server_frame, encode, port_prefix, ChannelProtocol, ServerFrame,
};
use kube_informer::pod::ExitStatus;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for protocol in [ChannelProtocol::V4, ChannelProtocol::V5] {
        let Ok(frame) = decode_server_frame(protocol, data) else {
            continue;
        };
        let again = match frame {
            ServerFrame::Stdout(p) => encode(1, p),
            ServerFrame::Stderr(p) => encode(2, p),
            ServerFrame::Status(p) => {
                if let Ok(ExitStatus::Code(c)) = ExitStatus::from_status_json(p) {
                    assert_ne!(c, 0, "exit code 0 is Success");
                }
                encode(3, p)
            }
            ServerFrame::Close(c) => {
                assert_eq!(protocol, ChannelProtocol::V5);
                encode(255, &[c])
            }
        };
        assert_eq!(again, data);
    }
    if let Ok(port) = port_prefix(data) {
        assert_eq!(port.to_le_bytes(), data[..2]);
    }
});

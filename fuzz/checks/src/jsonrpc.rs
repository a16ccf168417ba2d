//! The JSON-RPC envelope decoder (`portico`'s private engine): any frame decodes to messages or
//! to the error the engine answers with, and each message, encoded as the engine writes it,
//! decodes to the same message again. The server's fast read of request params agrees with
//! serde's wherever it reads them.

use portico::fuzzing::{Decoded, decode_frame, encode, encode_batch, peek_agrees};

/// The check.
pub fn check(data: &[u8]) {
    let (batch, items) = decode_frame(data);
    let mut encoded = Vec::with_capacity(items.len());
    for d in &items {
        // The server's fast read of params agrees with serde's.
        if let Decoded::Request { params: Some(p), .. } | Decoded::Notification { params: Some(p), .. } = d {
            peek_agrees(p).unwrap_or_else(|e| panic!("{e}: {p}"));
        }
        let e = encode(d).expect("a decoded message encodes");
        let (again_batch, again) = decode_frame(&e);
        assert!(!again_batch, "one message encodes as one message");
        assert_eq!(again.len(), 1);
        let again = &again[0];
        match d {
            // Encoded as its error response: a response with that id and error.
            Decoded::Invalid { id: Some(id), error } => {
                assert_eq!(again, &Decoded::Response { id: id.clone(), outcome: Err(error.clone()) });
            }
            // Without an id the response is not a message the engine would take; it must
            // still decode to an error rather than a message.
            Decoded::Invalid { id: None, .. } => assert!(matches!(again, Decoded::Invalid { .. })),
            _ => assert_eq!(again, d, "decode(encode(message)) differs"),
        }
        // Encoding is a fixpoint from the second round on.
        assert_eq!(encode(again).expect("encodes"), encode(again).expect("encodes"));
        encoded.push(e);
    }
    if batch {
        let joined = encode_batch(&encoded);
        let (again_batch, again) = decode_frame(&joined);
        assert!(again_batch);
        assert_eq!(again.len(), items.len());
    }
}

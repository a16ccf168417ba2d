//! An HTTP answer, whichever client received it: reqwest's, or hyper's on the direct path
//! ([`super::direct`]).

use std::pin::Pin;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http::{HeaderMap, StatusCode};
use http_body_util::{BodyDataStream, BodyExt};
use hyper::body::Incoming;

/// The body's chunks, each an error when reading broke off.
pub(super) type Chunks = Pin<Box<dyn Stream<Item = Result<Bytes, String>> + Send>>;

/// An HTTP answer: its status, headers and body.
#[derive(Debug)]
pub(super) enum Reply {
    /// Received by reqwest.
    Pooled(reqwest::Response),
    /// Received by hyper's client on the direct path.
    Direct(http::Response<Incoming>),
}

impl From<reqwest::Response> for Reply {
    fn from(r: reqwest::Response) -> Self {
        Reply::Pooled(r)
    }
}

impl Reply {
    pub(super) fn status(&self) -> StatusCode {
        match self {
            Reply::Pooled(r) => r.status(),
            Reply::Direct(r) => r.status(),
        }
    }

    pub(super) fn headers(&self) -> &HeaderMap {
        match self {
            Reply::Pooled(r) => r.headers(),
            Reply::Direct(r) => r.headers(),
        }
    }

    /// The body's length when the answer declares it.
    pub(super) fn content_length(&self) -> Option<u64> {
        match self {
            Reply::Pooled(r) => r.content_length(),
            Reply::Direct(r) => hyper::body::Body::size_hint(r.body()).exact(),
        }
    }

    /// The body's next chunk; `None` at its end.
    pub(super) async fn chunk(&mut self) -> Result<Option<Bytes>, String> {
        match self {
            Reply::Pooled(r) => r.chunk().await.map_err(|e| e.to_string()),
            Reply::Direct(r) => loop {
                match r.body_mut().frame().await {
                    None => return Ok(None),
                    Some(Err(e)) => return Err(e.to_string()),
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            return Ok(Some(data));
                        }
                    }
                }
            },
        }
    }

    /// The body as a stream of chunks.
    pub(super) fn into_chunks(self) -> Chunks {
        match self {
            Reply::Pooled(r) => Box::pin(r.bytes_stream().map(|c| c.map_err(|e| e.to_string()))),
            Reply::Direct(r) => Box::pin(BodyDataStream::new(r.into_body()).map(|c| c.map_err(|e| e.to_string()))),
        }
    }
}

//! Portico's Rust error: opaque, with predicates, and a kind that says whose fault it was.

use std::fmt;

use portico_schema::ErrorObject;

type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An error from a Portico call.
///
/// Wire errors (the `error` member of a JSON-RPC response) are data: when the peer answered
/// with one, [`Error::peer_error`] returns it.
pub struct Error {
    inner: Box<Inner>,
}

struct Inner {
    kind: ErrorKind,
    message: String,
    peer_error: Option<ErrorObject>,
    source: Option<Source>,
}

/// What went wrong, and whose fault it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The peer answered the request with a JSON-RPC error ([`Error::peer_error`]).
    PeerError,
    /// The peer sent something that breaks the protocol (bad JSON, wrong shape).
    PeerMisbehaved,
    /// The peer does not speak a revision or capability this side needs.
    PeerIncompatible,
    /// The connection is closed (the peer went away, or it was closed locally).
    Closed,
    /// No answer in time; the request was cancelled.
    Timeout,
    /// The request was cancelled locally.
    Cancelled,
    /// The transport failed (I/O).
    Transport,
    /// A local mistake: bad arguments, unserializable values, misuse of the API.
    Local,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { inner: Box::new(Inner { kind, message: message.into(), peer_error: None, source: None }) }
    }

    pub(crate) fn with_source(mut self, source: impl Into<Source>) -> Self {
        self.inner.source = Some(source.into());
        self
    }

    pub(crate) fn peer(error: ErrorObject) -> Self {
        let mut e = Error::new(ErrorKind::PeerError, "peer returned an error");
        e.inner.peer_error = Some(error);
        e
    }

    pub(crate) fn closed(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Closed, message)
    }

    /// An error raised on this side, not by the peer ([`ErrorKind::Local`]): what an
    /// [`InputHandler`](crate::client::InputHandler) or other callback returns when it cannot
    /// go on. The message reaches whoever made the call: keep secrets out of it.
    pub fn local(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Local, message)
    }

    pub(crate) fn misbehaved(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::PeerMisbehaved, message)
    }

    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind
    }

    /// The JSON-RPC error the peer answered with, if that is what happened.
    pub fn peer_error(&self) -> Option<&ErrorObject> {
        self.inner.peer_error.as_ref()
    }

    /// True when the request timed out.
    pub fn is_timeout(&self) -> bool {
        self.inner.kind == ErrorKind::Timeout
    }

    /// True when the connection is closed.
    pub fn is_closed(&self) -> bool {
        self.inner.kind == ErrorKind::Closed
    }

    /// True when the request was cancelled locally.
    pub fn is_cancelled(&self) -> bool {
        self.inner.kind == ErrorKind::Cancelled
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.inner.kind).field("message", &self.inner.message);
        if let Some(p) = &self.inner.peer_error {
            d.field("peer_error", p);
        }
        if let Some(s) = &self.inner.source {
            d.field("source", s);
        }
        d.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner.peer_error {
            Some(e) => write!(f, "{}: {} (code {})", self.inner.message, e.message, e.code),
            None => f.write_str(&self.inner.message),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.source.as_ref().map(|s| &**s as &(dyn std::error::Error + 'static))
    }
}

/// `Result<T, portico::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

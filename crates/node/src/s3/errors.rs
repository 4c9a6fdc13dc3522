//! The node's and the origin's errors as S3 error codes, which clients
//! act on: `NoSuchKey` and `NoSuchBucket` are answers, `InternalError`
//! and `ServiceUnavailable` are retried.

use crate::handle::NodeError;
use crate::origin::OriginError;
use s3s::{S3Error, S3ErrorCode};

/// A node error as S3's.
pub(super) fn from_node(e: NodeError) -> S3Error {
    match e {
        NodeError::Origin(o) => from_origin(o),
        NodeError::Shutdown => {
            S3Error::with_message(S3ErrorCode::ServiceUnavailable, "the node is shutting down")
        }
        NodeError::Range { .. } => S3Error::with_message(S3ErrorCode::InvalidRange, e.to_string()),
        e => internal(e),
    }
}

/// An origin error as S3's.
pub(super) fn from_origin(e: OriginError) -> S3Error {
    let code = match &e {
        o if o.is_not_found() => S3ErrorCode::NoSuchKey,
        OriginError::PermissionDenied { .. } => S3ErrorCode::AccessDenied,
        OriginError::BadPath { too_long: true, .. } => S3ErrorCode::KeyTooLongError,
        OriginError::BadPath { .. } => S3ErrorCode::InvalidArgument,
        OriginError::ReadOnly { .. } => S3ErrorCode::AccessDenied,
        OriginError::IsADirectory { .. } | OriginError::NotADirectory { .. } => {
            // `a/b` written where `a` is a file, or `a` where `a/` holds
            // keys: S3 allows both, a file system neither.
            S3ErrorCode::InvalidArgument
        }
        OriginError::Changed { .. } => S3ErrorCode::ServiceUnavailable,
        _ => return internal(e),
    };
    S3Error::with_message(code, e.to_string())
}

/// An error the endpoint gave up on: logged (the daemon's failure, not
/// the client's), and a 500 the client retries.
pub(super) fn internal(what: impl std::fmt::Display) -> S3Error {
    tracing::warn!(error = %what, "S3 request failed");
    S3Error::with_message(S3ErrorCode::InternalError, what.to_string())
}

//! Frames of the cluster's lock messages ([`LockMsg`]): a node's calls to
//! a file's manager and the manager's answers. No frame names its sender
//! (the link does); paths carry their length limit, checked before
//! anything is allocated, and every enumeration's unknown values are
//! refused, so a frame decodes to one message that encodes to the same
//! bytes.

use bytes::{BufMut, BytesMut};
use coopcache_core::c2cfs::exclusive::MAX_PATH;
use coopcache_core::c2cfs::locks::{
    LockAnswer, LockConflict, LockError, LockKind, LockMsg, LockOutcome, LockOwner, LockRange,
    LockRequest, LockSpace,
};

use super::commit::put_long;
use super::{FrameError, Reader};

pub(super) const K_LOCK: u8 = 70;
pub(super) const K_RECLAIM_LOCK: u8 = 71;
pub(super) const K_UNLOCK: u8 = 72;
pub(super) const K_RELEASE: u8 = 73;
pub(super) const K_TEST: u8 = 74;
pub(super) const K_CANCEL: u8 = 75;
pub(super) const K_RENEW: u8 = 76;
pub(super) const K_LOCK_ANSWER: u8 = 77;
pub(super) const K_GRANTED: u8 = 78;

/// The name of a lock frame kind, for errors.
pub(super) fn kind_name(kind: u8) -> Option<&'static str> {
    Some(match kind {
        K_LOCK => "lock",
        K_RECLAIM_LOCK => "reclaim-lock",
        K_UNLOCK => "unlock",
        K_RELEASE => "release",
        K_TEST => "test-lock",
        K_CANCEL => "cancel-lock",
        K_RENEW => "renew",
        K_LOCK_ANSWER => "lock-answer",
        K_GRANTED => "granted",
        _ => return None,
    })
}

/// Writes `msg`: its kind and fields.
pub(super) fn put(buf: &mut BytesMut, msg: &LockMsg) {
    match msg {
        LockMsg::Lock(req) => {
            buf.put_u8(K_LOCK);
            put_request(buf, req);
        }
        LockMsg::Reclaim(req) => {
            buf.put_u8(K_RECLAIM_LOCK);
            put_request(buf, req);
        }
        LockMsg::Unlock {
            nonce,
            path,
            space,
            owner,
            range,
        } => {
            buf.put_u8(K_UNLOCK);
            put_target(buf, *nonce, path, *space, *owner);
            put_range(buf, *range);
        }
        LockMsg::Release {
            nonce,
            path,
            space,
            owner,
        } => {
            buf.put_u8(K_RELEASE);
            put_target(buf, *nonce, path, *space, *owner);
        }
        LockMsg::Test {
            nonce,
            path,
            space,
            owner,
            kind,
            range,
        } => {
            buf.put_u8(K_TEST);
            put_target(buf, *nonce, path, *space, *owner);
            buf.put_u8(kind_code(*kind));
            put_range(buf, *range);
        }
        LockMsg::Cancel { nonce } => {
            buf.put_u8(K_CANCEL);
            buf.put_u64(*nonce);
        }
        LockMsg::Renew => buf.put_u8(K_RENEW),
        LockMsg::Answer { nonce, answer } => {
            buf.put_u8(K_LOCK_ANSWER);
            buf.put_u64(*nonce);
            match answer {
                LockAnswer::Done(Ok(LockOutcome::Granted)) => buf.put_u8(0),
                LockAnswer::Done(Ok(LockOutcome::Conflict(c))) => {
                    buf.put_u8(1);
                    put_conflict(buf, c);
                }
                LockAnswer::Done(Ok(LockOutcome::Waiting)) => buf.put_u8(2),
                LockAnswer::Done(Err(e)) => {
                    buf.put_u8(3);
                    buf.put_u8(error_code(*e));
                }
                LockAnswer::Tested(None) => buf.put_u8(4),
                LockAnswer::Tested(Some(c)) => {
                    buf.put_u8(5);
                    put_conflict(buf, c);
                }
                LockAnswer::NotManager => buf.put_u8(6),
            }
        }
        LockMsg::Granted { nonce, result } => {
            buf.put_u8(K_GRANTED);
            buf.put_u64(*nonce);
            match result {
                Ok(()) => buf.put_u8(0),
                Err(e) => {
                    buf.put_u8(1);
                    buf.put_u8(error_code(*e));
                }
            }
        }
    }
}

fn put_target(buf: &mut BytesMut, nonce: u64, path: &str, space: LockSpace, owner: u64) {
    buf.put_u64(nonce);
    put_long(buf, path);
    buf.put_u8(match space {
        LockSpace::Posix => 0,
        LockSpace::Flock => 1,
    });
    buf.put_u64(owner);
}

fn put_request(buf: &mut BytesMut, req: &LockRequest) {
    put_target(buf, req.nonce, &req.path, req.space, req.owner);
    buf.put_u8(kind_code(req.kind));
    put_range(buf, req.range);
    buf.put_u8(u8::from(req.wait));
    buf.put_u32(req.pid);
}

fn put_range(buf: &mut BytesMut, range: LockRange) {
    buf.put_u64(range.start());
    buf.put_u64(range.end());
}

fn put_conflict(buf: &mut BytesMut, c: &LockConflict) {
    buf.put_u32(c.owner.node);
    buf.put_u64(c.owner.owner);
    buf.put_u8(kind_code(c.kind));
    put_range(buf, c.range);
    buf.put_u32(c.pid);
}

fn kind_code(kind: LockKind) -> u8 {
    match kind {
        LockKind::Shared => 0,
        LockKind::Exclusive => 1,
    }
}

fn error_code(e: LockError) -> u8 {
    match e {
        LockError::TooManyLocks => 0,
        LockError::TooManyWaiters => 1,
        LockError::Deadlock => 2,
        LockError::Cancelled => 3,
        LockError::DuplicateNonce => 4,
        LockError::PathTooLong => 5,
        LockError::Unanswered => 6,
    }
}

impl Reader {
    /// A lock message of frame kind `kind`.
    pub(super) fn lock(&mut self, kind: u8) -> Result<LockMsg, FrameError> {
        Ok(match kind {
            K_LOCK => LockMsg::Lock(self.lock_request()?),
            K_RECLAIM_LOCK => LockMsg::Reclaim(self.lock_request()?),
            K_UNLOCK => {
                let (nonce, path, space, owner) = self.lock_target()?;
                LockMsg::Unlock {
                    nonce,
                    path,
                    space,
                    owner,
                    range: self.lock_range()?,
                }
            }
            K_RELEASE => {
                let (nonce, path, space, owner) = self.lock_target()?;
                LockMsg::Release {
                    nonce,
                    path,
                    space,
                    owner,
                }
            }
            K_TEST => {
                let (nonce, path, space, owner) = self.lock_target()?;
                LockMsg::Test {
                    nonce,
                    path,
                    space,
                    owner,
                    kind: self.lock_kind()?,
                    range: self.lock_range()?,
                }
            }
            K_CANCEL => LockMsg::Cancel { nonce: self.u64()? },
            K_RENEW => LockMsg::Renew,
            K_LOCK_ANSWER => {
                let nonce = self.u64()?;
                let answer = match self.u8()? {
                    0 => LockAnswer::Done(Ok(LockOutcome::Granted)),
                    1 => LockAnswer::Done(Ok(LockOutcome::Conflict(self.lock_conflict()?))),
                    2 => LockAnswer::Done(Ok(LockOutcome::Waiting)),
                    3 => LockAnswer::Done(Err(self.lock_error()?)),
                    4 => LockAnswer::Tested(None),
                    5 => LockAnswer::Tested(Some(self.lock_conflict()?)),
                    6 => LockAnswer::NotManager,
                    n => return Err(self.bad(format!("lock answer {n}"))),
                };
                LockMsg::Answer { nonce, answer }
            }
            K_GRANTED => {
                let nonce = self.u64()?;
                let result = match self.u8()? {
                    0 => Ok(()),
                    1 => Err(self.lock_error()?),
                    n => return Err(self.bad(format!("grant result {n}"))),
                };
                LockMsg::Granted { nonce, result }
            }
            _ => return Err(FrameError::UnknownKind(kind)),
        })
    }

    fn lock_target(&mut self) -> Result<(u64, std::sync::Arc<str>, LockSpace, u64), FrameError> {
        let nonce = self.u64()?;
        let path = self.long_str(MAX_PATH, "path")?;
        let space = match self.u8()? {
            0 => LockSpace::Posix,
            1 => LockSpace::Flock,
            n => return Err(self.bad(format!("lock space {n}"))),
        };
        Ok((nonce, path, space, self.u64()?))
    }

    fn lock_request(&mut self) -> Result<LockRequest, FrameError> {
        let (nonce, path, space, owner) = self.lock_target()?;
        Ok(LockRequest {
            nonce,
            path,
            space,
            owner,
            kind: self.lock_kind()?,
            range: self.lock_range()?,
            wait: self.flag("wait")?,
            pid: self.u32()?,
        })
    }

    fn lock_kind(&mut self) -> Result<LockKind, FrameError> {
        match self.u8()? {
            0 => Ok(LockKind::Shared),
            1 => Ok(LockKind::Exclusive),
            n => Err(self.bad(format!("lock kind {n}"))),
        }
    }

    fn lock_range(&mut self) -> Result<LockRange, FrameError> {
        let (start, end) = (self.u64()?, self.u64()?);
        LockRange::new(start, end).ok_or_else(|| {
            self.bad(format!(
                "a lock range {start}..={end} that ends before it starts"
            ))
        })
    }

    fn lock_conflict(&mut self) -> Result<LockConflict, FrameError> {
        Ok(LockConflict {
            owner: LockOwner {
                node: self.u32()?,
                owner: self.u64()?,
            },
            kind: self.lock_kind()?,
            range: self.lock_range()?,
            pid: self.u32()?,
        })
    }

    fn lock_error(&mut self) -> Result<LockError, FrameError> {
        Ok(match self.u8()? {
            0 => LockError::TooManyLocks,
            1 => LockError::TooManyWaiters,
            2 => LockError::Deadlock,
            3 => LockError::Cancelled,
            4 => LockError::DuplicateNonce,
            5 => LockError::PathTooLong,
            6 => LockError::Unanswered,
            n => return Err(self.bad(format!("lock error {n}"))),
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One of every lock message, and of every answer's form.
    pub(crate) fn every_lock_msg() -> Vec<LockMsg> {
        let path: std::sync::Arc<str> = "dir/ä file".into();
        let range = LockRange::new(10, u64::MAX).expect("a range");
        let req = LockRequest {
            nonce: 1,
            path: path.clone(),
            space: LockSpace::Flock,
            owner: 0xdead_beef_0000_0001,
            kind: LockKind::Exclusive,
            range,
            wait: true,
            pid: 4242,
        };
        let conflict = LockConflict {
            owner: LockOwner { node: 7, owner: 99 },
            kind: LockKind::Shared,
            range,
            pid: 12,
        };
        let answer = |nonce, answer| LockMsg::Answer { nonce, answer };
        let mut msgs = vec![
            LockMsg::Lock(req.clone()),
            LockMsg::Reclaim(LockRequest {
                space: LockSpace::Posix,
                kind: LockKind::Shared,
                wait: false,
                ..req
            }),
            LockMsg::Unlock {
                nonce: 2,
                path: path.clone(),
                space: LockSpace::Posix,
                owner: 3,
                range: LockRange::WHOLE,
            },
            LockMsg::Release {
                nonce: 3,
                path: path.clone(),
                space: LockSpace::Flock,
                owner: 4,
            },
            LockMsg::Test {
                nonce: 4,
                path,
                space: LockSpace::Posix,
                owner: 5,
                kind: LockKind::Exclusive,
                range,
            },
            LockMsg::Cancel { nonce: 5 },
            LockMsg::Renew,
            answer(6, LockAnswer::Done(Ok(LockOutcome::Granted))),
            answer(7, LockAnswer::Done(Ok(LockOutcome::Conflict(conflict)))),
            answer(8, LockAnswer::Done(Ok(LockOutcome::Waiting))),
            answer(10, LockAnswer::Tested(None)),
            answer(11, LockAnswer::Tested(Some(conflict))),
            answer(12, LockAnswer::NotManager),
            LockMsg::Granted {
                nonce: 13,
                result: Ok(()),
            },
        ];
        for e in [
            LockError::TooManyLocks,
            LockError::TooManyWaiters,
            LockError::Deadlock,
            LockError::Cancelled,
            LockError::DuplicateNonce,
            LockError::PathTooLong,
            LockError::Unanswered,
        ] {
            msgs.push(answer(9, LockAnswer::Done(Err(e))));
            msgs.push(LockMsg::Granted {
                nonce: 14,
                result: Err(e),
            });
        }
        msgs
    }
}

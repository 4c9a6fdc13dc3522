//! Frames of warm-up placement ([`WarmMsg`]): a node asking a file's
//! manager to read the file through its cache, and the manager's answer.
//! No frame names its sender (the link does); the path carries its length
//! limit, checked before anything is allocated, and an unknown answer
//! code is refused.

use bytes::{BufMut, BytesMut};
use coopcache_core::c2cfs::exclusive::MAX_PATH;
use coopcache_core::warm::{WarmAnswer, WarmMsg};

use super::commit::put_long;
use super::{FrameError, Reader};

pub(super) const K_WARM: u8 = 80;
pub(super) const K_WARMED: u8 = 81;

/// The name of a warm-up frame kind, for errors.
pub(super) fn kind_name(kind: u8) -> Option<&'static str> {
    Some(match kind {
        K_WARM => "warm",
        K_WARMED => "warmed",
        _ => return None,
    })
}

/// Writes `msg`: its kind and fields.
pub(super) fn put(buf: &mut BytesMut, msg: &WarmMsg) {
    match msg {
        WarmMsg::Warm { nonce, path } => {
            buf.put_u8(K_WARM);
            buf.put_u64(*nonce);
            put_long(buf, path);
        }
        WarmMsg::Warmed { nonce, answer } => {
            buf.put_u8(K_WARMED);
            buf.put_u64(*nonce);
            match answer {
                WarmAnswer::Read { bytes } => {
                    buf.put_u8(0);
                    buf.put_u64(*bytes);
                }
                WarmAnswer::NotRead => buf.put_u8(1),
                WarmAnswer::Busy => buf.put_u8(2),
                WarmAnswer::NotManager => buf.put_u8(3),
            }
        }
    }
}

impl Reader {
    /// A warm-up message of frame kind `kind`.
    pub(super) fn warm(&mut self, kind: u8) -> Result<WarmMsg, FrameError> {
        let nonce = self.u64()?;
        Ok(match kind {
            K_WARM => WarmMsg::Warm {
                nonce,
                path: self.long_str(MAX_PATH, "path")?,
            },
            _ => {
                let answer = match self.u8()? {
                    0 => WarmAnswer::Read { bytes: self.u64()? },
                    1 => WarmAnswer::NotRead,
                    2 => WarmAnswer::Busy,
                    3 => WarmAnswer::NotManager,
                    other => return Err(self.bad(format!("a warm-up answer of code {other}"))),
                };
                WarmMsg::Warmed { nonce, answer }
            }
        })
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// One of each warm-up message, every answer.
    pub(crate) fn every_warm_msg() -> Vec<WarmMsg> {
        let warmed = |answer| WarmMsg::Warmed { nonce: 7, answer };
        vec![
            WarmMsg::Warm {
                nonce: 1,
                path: "set/part-0001".into(),
            },
            warmed(WarmAnswer::Read { bytes: 1 << 40 }),
            warmed(WarmAnswer::NotRead),
            warmed(WarmAnswer::Busy),
            warmed(WarmAnswer::NotManager),
        ]
    }
}

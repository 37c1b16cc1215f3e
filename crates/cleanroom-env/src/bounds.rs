//! The bounds of host-side work on an environment's files.
//!
//! Walking, hashing and listing what an agent left behind is work the
//! harness does on a tree that untrusted code shaped: millions of entries,
//! hard links to long symbolic links, chains of directories deeper than
//! PATH_MAX, sparse files of terabytes. Every such pass charges a [`Budget`]
//! for each entry it visits and each byte of name it keeps, and checks the
//! clock and the cancel token as it goes; the first bound it meets ends the
//! pass with a reason that says which, so no pass can hang the harness,
//! exhaust its memory or outlive a Ctrl-C.

use std::fmt;
use std::time::{Duration, Instant};

use crate::cancel::CancelToken;

/// Most entries a pass visits.
pub const MAX_ENTRIES: usize = 200_000;
/// Most directory levels below the starting directory that a pass enters.
pub const MAX_DEPTH: usize = 128;
/// Most bytes of names and paths a pass keeps (or holds while listing one
/// directory).
pub const MAX_NAME_BYTES: usize = 32 << 20;
/// Longest a pass takes.
pub const MAX_TIME: Duration = Duration::from_secs(300);

/// The limits of one pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkLimits {
    pub entries: usize,
    pub depth: usize,
    pub name_bytes: usize,
    pub time: Duration,
}

impl Default for WalkLimits {
    fn default() -> WalkLimits {
        WalkLimits { entries: MAX_ENTRIES, depth: MAX_DEPTH, name_bytes: MAX_NAME_BYTES, time: MAX_TIME }
    }
}

/// Why a pass stopped before its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// The cancel token fired (Ctrl-C).
    Cancelled,
    /// A bound was met, or the tree could not be read further: the reason,
    /// as a fragment ("more than 200000 entries").
    Incomplete(String),
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stop::Cancelled => f.write_str("cancelled"),
            Stop::Incomplete(why) => f.write_str(why),
        }
    }
}

/// A pass ended because the cancel token fired (Ctrl-C).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("cancelled")]
pub struct Cancelled;

/// What is left of one pass's limits.
pub(crate) struct Budget<'a> {
    limits: WalkLimits,
    entries: usize,
    name_bytes: usize,
    deadline: Instant,
    cancel: Option<&'a CancelToken>,
}

impl<'a> Budget<'a> {
    pub fn new(limits: WalkLimits, cancel: Option<&'a CancelToken>) -> Budget<'a> {
        Budget { limits, entries: 0, name_bytes: 0, deadline: Instant::now() + limits.time, cancel }
    }

    pub fn max_depth(&self) -> usize {
        self.limits.depth
    }

    /// Charges one entry visited.
    pub fn visit(&mut self) -> Result<(), Stop> {
        self.entries += 1;
        if self.entries > self.limits.entries {
            return Err(Stop::Incomplete(format!("more than {} entries", self.limits.entries)));
        }
        self.check()
    }

    /// Charges `bytes` of names kept until the pass ends.
    pub fn keep(&mut self, bytes: usize) -> Result<(), Stop> {
        self.name_bytes += bytes;
        if self.name_bytes > self.limits.name_bytes {
            return Err(Stop::Incomplete(format!("more than {} bytes of names", self.limits.name_bytes)));
        }
        Ok(())
    }

    /// How many more entries one directory listing may hold, and how many
    /// bytes of names.
    pub fn listing_room(&self) -> (usize, usize) {
        let entries = self.limits.entries.saturating_sub(self.entries).saturating_add(1);
        (entries, self.limits.name_bytes.saturating_sub(self.name_bytes).saturating_add(1))
    }

    /// The clock and the cancel token; cheap enough for every 64 KiB read.
    pub fn check(&self) -> Result<(), Stop> {
        if self.cancel.is_some_and(CancelToken::is_cancelled) {
            return Err(Stop::Cancelled);
        }
        if Instant::now() >= self.deadline {
            return Err(Stop::Incomplete(format!("took longer than {} s", self.limits.time.as_secs())));
        }
        Ok(())
    }

    pub fn too_deep(&self) -> Stop {
        Stop::Incomplete(format!("more than {} directory levels", self.limits.depth))
    }

    /// One directory holds more than [`Budget::listing_room`].
    pub fn listing_too_large(&self) -> Stop {
        Stop::Incomplete(format!(
            "more than {} entries or {} bytes of names",
            self.limits.entries, self.limits.name_bytes
        ))
    }
}

impl From<Stop> for std::io::Error {
    fn from(stop: Stop) -> std::io::Error {
        match stop {
            Stop::Cancelled => std::io::Error::new(std::io::ErrorKind::Interrupted, "cancelled"),
            Stop::Incomplete(why) => std::io::Error::other(why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bound_stops_the_pass_with_its_reason() {
        let limits = WalkLimits { entries: 2, depth: 1, name_bytes: 10, time: Duration::from_secs(60) };
        let mut budget = Budget::new(limits, None);
        assert_eq!((budget.visit(), budget.visit()), (Ok(()), Ok(())));
        assert_eq!(budget.visit(), Err(Stop::Incomplete("more than 2 entries".into())));
        assert_eq!(budget.keep(10), Ok(()));
        assert_eq!(budget.keep(1).unwrap_err().to_string(), "more than 10 bytes of names");
        assert_eq!(budget.too_deep().to_string(), "more than 1 directory levels");

        let late = Budget::new(WalkLimits { time: Duration::ZERO, ..limits }, None);
        assert_eq!(late.check(), Err(Stop::Incomplete("took longer than 0 s".into())));

        let cancel = CancelToken::new().unwrap();
        let budget = Budget::new(limits, Some(&cancel));
        assert_eq!(budget.check(), Ok(()));
        cancel.cancel();
        assert_eq!(budget.check(), Err(Stop::Cancelled));
    }
}

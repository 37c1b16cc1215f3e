//! Which files the commands of a phase opened or executed, seen from
//! outside the environment: evidence that a verify step really ran the
//! artifact's own files, which nothing inside can forge. A backend offers
//! it where it can watch the environment's file system from the host (the
//! sandbox: fanotify on its overlay); elsewhere there is none.

use std::collections::HashMap;

/// A file's identity on its file system, as `stat` gives it: the same
/// through every mount and path of it, and different for a file put in
/// its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

/// How a file was used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Use {
    pub opened: bool,
    pub executed: bool,
}

/// What a watch saw.
#[derive(Debug, Clone, Default)]
pub struct Accessed {
    pub files: HashMap<FileId, Use>,
    /// Why some accesses may be missing (the kernel's queue overflowed, or
    /// the bound on files was met); none when the record is whole.
    pub incomplete: Option<String>,
}

/// A watch started by [`crate::Environment::watch_access`], recording
/// until it is finished.
pub trait AccessWatch: Send {
    /// Stops recording and returns what was seen since the start.
    fn finish(self: Box<Self>) -> Accessed;
}

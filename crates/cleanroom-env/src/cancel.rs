//! A cancel token that a waiting thread can poll together with a process:
//! firing it makes a pipe readable, so waits wake at once without sleeping.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

#[derive(Debug, Clone)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    fired: AtomicBool,
    read_end: OwnedFd,
    write_end: OwnedFd,
    /// Tokens that fire when this one does (one trial's agent, say).
    children: Mutex<Vec<Weak<Inner>>>,
}

impl CancelToken {
    pub fn new() -> std::io::Result<Self> {
        let mut fds = [0; 2];
        // SAFETY: fds is a valid array of two ints for pipe2 to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: pipe2 succeeded, so both fds are open and owned by nobody else.
        let (read_end, write_end) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        Ok(CancelToken {
            inner: Arc::new(Inner {
                fired: AtomicBool::new(false),
                read_end,
                write_end,
                children: Mutex::new(Vec::new()),
            }),
        })
    }

    /// A token that fires when this one fires, and can also be fired on its
    /// own without touching this one.
    pub fn child(&self) -> std::io::Result<CancelToken> {
        let child = CancelToken::new()?;
        let mut children = self.inner.children.lock().unwrap_or_else(|p| p.into_inner());
        children.retain(|c| c.strong_count() > 0);
        children.push(Arc::downgrade(&child.inner));
        drop(children);
        if self.is_cancelled() {
            child.cancel();
        }
        Ok(child)
    }

    /// Fires the token. Safe to call from a signal-handling thread, repeatedly.
    pub fn cancel(&self) {
        if !self.inner.fired.swap(true, Ordering::SeqCst) {
            // SAFETY: writing one byte from a valid buffer to an owned fd.
            unsafe { libc::write(self.inner.write_end.as_raw_fd(), b"x".as_ptr().cast(), 1) };
            let children =
                std::mem::take(&mut *self.inner.children.lock().unwrap_or_else(|p| p.into_inner()));
            for inner in children.iter().filter_map(Weak::upgrade) {
                CancelToken { inner }.cancel();
            }
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.inner.fired.load(Ordering::SeqCst)
    }

    /// Becomes readable (and stays so) once the token fires.
    pub fn poll_fd(&self) -> RawFd {
        self.inner.read_end.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_fires_with_its_parent_but_not_the_other_way() {
        let parent = CancelToken::new().unwrap();
        let child = parent.child().unwrap();
        child.cancel();
        assert!(!parent.is_cancelled());
        let second = parent.child().unwrap();
        parent.cancel();
        assert!(second.is_cancelled());
        assert!(parent.child().unwrap().is_cancelled(), "a child of a fired token starts fired");
    }
}

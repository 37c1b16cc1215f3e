//! Bounded capture of a process's output: the head and the tail are kept,
//! the middle is counted and dropped, so a flood cannot exhaust memory.

use std::collections::VecDeque;

#[derive(Debug, Clone, Default)]
pub struct Captured {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    limit: usize,
    /// Bytes dropped between head and tail.
    cut: u64,
}

impl Captured {
    /// Keeps at most `limit` bytes: `limit / 2` from the start, the rest from the end.
    pub fn new(limit: usize) -> Self {
        Captured { head: Vec::new(), tail: VecDeque::new(), limit, cut: 0 }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        let head_cap = self.limit / 2;
        if self.head.len() < head_cap {
            let take = (head_cap - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        let tail_cap = self.limit - head_cap;
        if bytes.len() >= tail_cap {
            self.cut += (self.tail.len() + bytes.len() - tail_cap) as u64;
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - tail_cap..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(tail_cap);
        self.tail.drain(..overflow);
        self.cut += overflow as u64;
        self.tail.extend(bytes);
    }

    /// Bytes dropped from the middle.
    pub fn cut_bytes(&self) -> u64 {
        self.cut
    }

    pub fn total_bytes(&self) -> u64 {
        self.head.len() as u64 + self.tail.len() as u64 + self.cut
    }

    /// The kept bytes, with a marker line where the middle was cut.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.head.clone();
        if self.cut > 0 {
            out.extend_from_slice(format!("\n[cleanroom: {} bytes cut here]\n", self.cut).as_bytes());
        }
        out.extend(self.tail.iter());
        out
    }

    pub fn to_string_lossy(&self) -> String {
        String::from_utf8_lossy(&self.to_bytes()).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_everything_under_the_limit() {
        let mut c = Captured::new(10);
        c.push(b"abc");
        c.push(b"def");
        assert_eq!(c.to_bytes(), b"abcdef");
        assert_eq!(c.cut_bytes(), 0);
    }

    #[test]
    fn keeps_head_and_tail_of_a_flood() {
        let mut c = Captured::new(8);
        for chunk in [b"0123".as_slice(), b"4567", b"89ab", b"cdef"] {
            c.push(chunk);
        }
        assert_eq!(c.cut_bytes(), 8);
        assert_eq!(c.total_bytes(), 16);
        let s = c.to_string_lossy();
        assert!(s.starts_with("0123\n[cleanroom: 8 bytes cut here]\n"), "{s}");
        assert!(s.ends_with("cdef"), "{s}");
    }

    #[test]
    fn one_huge_push_keeps_its_own_tail() {
        let mut c = Captured::new(4);
        c.push(b"abcdefghij");
        assert_eq!(c.to_string_lossy(), "ab\n[cleanroom: 6 bytes cut here]\nij");
    }
}

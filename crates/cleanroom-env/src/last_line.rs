//! The last line a running command printed, for progress reports while it
//! runs (the terminal's "agent phase, 4m10s: Building wheel for numpy").
//! Fed with the command's output as it arrives; bounded whatever comes.

use std::sync::{Arc, Mutex};

/// Bytes of a line kept; a longer one is cut.
const LINE_BYTES: usize = 400;

/// Shared between the backend that feeds it and whoever reads it.
#[derive(Debug, Clone, Default)]
pub struct LastLine(Arc<Mutex<State>>);

#[derive(Debug, Default)]
struct State {
    /// The line being printed, up to `LINE_BYTES`.
    partial: Vec<u8>,
    /// The last complete line that was not blank.
    last: Option<String>,
}

impl LastLine {
    pub fn new() -> LastLine {
        LastLine::default()
    }

    /// Output as it arrives: lines end at `\n` or `\r` (progress bars
    /// redraw with `\r`), blank ones are passed over.
    pub fn feed(&self, bytes: &[u8]) {
        let mut state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for &b in bytes {
            if b == b'\n' || b == b'\r' {
                let line = String::from_utf8_lossy(&state.partial).trim().to_string();
                if !line.is_empty() {
                    state.last = Some(line);
                }
                state.partial.clear();
            } else if state.partial.len() < LINE_BYTES {
                state.partial.push(b);
            }
        }
    }

    /// The last line printed: the one under way if it has text, else the
    /// last complete one.
    pub fn get(&self) -> Option<String> {
        let state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let partial = String::from_utf8_lossy(&state.partial).trim().to_string();
        if partial.is_empty() {
            state.last.clone()
        } else {
            Some(partial)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_line_with_text_across_chunks() {
        let tap = LastLine::new();
        assert_eq!(tap.get(), None);
        tap.feed(b"first\nsec");
        assert_eq!(tap.get().as_deref(), Some("sec"));
        tap.feed(b"ond\n\n   \n");
        assert_eq!(tap.get().as_deref(), Some("second"));
        tap.feed(b" 10%\r 55%\r");
        assert_eq!(tap.get().as_deref(), Some("55%"));
    }

    #[test]
    fn a_flood_without_newlines_stays_bounded() {
        let tap = LastLine::new();
        tap.feed(&vec![b'x'; 1 << 20]);
        assert_eq!(tap.get().unwrap().len(), LINE_BYTES);
    }
}

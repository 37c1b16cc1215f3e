//! An exec's output as the engine sends it without a terminal: frames of
//! an 8-byte header (the stream: 1 stdout, 2 stderr; three zero bytes; the
//! length, big-endian) and that many bytes.

use std::io::{self, Read};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// The most bytes of one frame: the engine sends what one read of the
/// process's pipe gave (at most 32 KiB); anything larger is not a frame.
const FRAME_LIMIT: usize = 16 << 20;

/// The next frame, or None at the end of the streams.
pub fn next(reader: &mut dyn Read) -> io::Result<Option<(Stream, Vec<u8>)>> {
    let mut header = [0u8; 8];
    let mut filled = 0;
    while filled < header.len() {
        match reader.read(&mut header[filled..])? {
            0 if filled == 0 => return Ok(None),
            0 => {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "an exec's frame header cut short"))
            }
            n => filled += n,
        }
    }
    let stream = match header[0] {
        1 => Stream::Stdout,
        2 => Stream::Stderr,
        other => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("an exec's frame of stream {other}"),
            ))
        }
    };
    let length = u32::from_be_bytes([header[4], header[5], header[6], header[7]]) as usize;
    if length > FRAME_LIMIT {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("an exec's frame of {length} bytes")));
    }
    let mut payload = vec![0u8; length];
    reader.read_exact(&mut payload)?;
    Ok(Some((stream, payload)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_split_by_their_headers_and_a_cut_header_is_an_error() {
        let mut bytes = vec![1, 0, 0, 0, 0, 0, 0, 3];
        bytes.extend_from_slice(b"hi\n");
        bytes.extend_from_slice(&[2, 0, 0, 0, 0, 0, 0, 4]);
        bytes.extend_from_slice(b"err\n");
        let mut reader = &bytes[..];
        assert_eq!(next(&mut reader).unwrap(), Some((Stream::Stdout, b"hi\n".to_vec())));
        assert_eq!(next(&mut reader).unwrap(), Some((Stream::Stderr, b"err\n".to_vec())));
        assert_eq!(next(&mut reader).unwrap(), None);
        let mut cut = &[1u8, 0, 0][..];
        assert!(next(&mut cut).is_err());
        let mut huge = &[1u8, 0, 0, 0, 0x7f, 0, 0, 0][..];
        assert!(next(&mut huge).is_err());
    }
}

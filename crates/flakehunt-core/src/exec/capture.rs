//! Captured output of one stream of an attempt: a capped head for the logs, the true tail for
//! the record, and the byte count. Main type: [`Capture`].

use std::collections::VecDeque;

/// One captured stream. The head keeps the first `cap` bytes (what `logs/` gets); the tail keeps
/// the last `tail_len` bytes of the whole stream, even past the cap, because the end of stderr is
/// where a panic or an assertion message usually is.
#[derive(Debug)]
pub struct Capture {
    head: Vec<u8>,
    cap: usize,
    tail: VecDeque<u8>,
    tail_len: usize,
    total: u64,
}

impl Capture {
    /// A capture that keeps at most `cap` bytes of head and `tail_len` bytes of tail.
    pub fn new(cap: usize, tail_len: usize) -> Self {
        Self { head: Vec::new(), cap, tail: VecDeque::with_capacity(tail_len.min(4096)), tail_len, total: 0 }
    }

    /// Appends a chunk read from the stream.
    pub fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let room = self.cap.saturating_sub(self.head.len());
        self.head.extend_from_slice(&chunk[..room.min(chunk.len())]);
        let keep = &chunk[chunk.len().saturating_sub(self.tail_len)..];
        let overflow = (self.tail.len() + keep.len()).saturating_sub(self.tail_len);
        self.tail.drain(..overflow);
        self.tail.extend(keep);
    }

    /// Every byte the stream produced, kept or not.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bytes produced beyond the cap, counted and dropped.
    pub fn dropped(&self) -> u64 {
        self.total - self.head.len() as u64
    }

    /// The first `cap` bytes.
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// The last bytes of the stream as text; invalid UTF-8 becomes U+FFFD, a character cut by
    /// the tail's start is dropped rather than shown broken.
    pub fn tail_text(&self) -> String {
        let (a, b) = self.tail.as_slices();
        let mut bytes = Vec::with_capacity(a.len() + b.len());
        bytes.extend_from_slice(a);
        bytes.extend_from_slice(b);
        if self.total > self.tail.len() as u64 {
            // Skip UTF-8 continuation bytes at the start: they belong to a character we cut.
            let skip = bytes.iter().take(3).take_while(|&&b| b & 0xC0 == 0x80).count();
            bytes.drain(..skip);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_head_up_to_cap_and_true_tail() {
        let mut c = Capture::new(4, 3);
        c.push(b"abc");
        c.push(b"defgh");
        assert_eq!(c.head(), b"abcd");
        assert_eq!(c.tail_text(), "fgh");
        assert_eq!(c.total(), 8);
        assert_eq!(c.dropped(), 4);
    }

    #[test]
    fn tail_of_short_stream_is_whole_stream() {
        let mut c = Capture::new(100, 10);
        c.push(b"hi\n");
        assert_eq!(c.tail_text(), "hi\n");
        assert_eq!(c.dropped(), 0);
    }

    #[test]
    fn non_utf8_and_cut_characters_do_not_break_tail() {
        let mut c = Capture::new(100, 4);
        c.push("xé€".as_bytes()); // 1 + 2 + 3 bytes
        assert_eq!(c.tail_text(), "€");
        let mut c = Capture::new(100, 16);
        c.push(b"\xff\xfe ok");
        assert_eq!(c.tail_text(), "\u{fffd}\u{fffd} ok");
    }
}

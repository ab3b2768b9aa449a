//! Captured output of one stream of an attempt: a capped head for the logs, the true tail for
//! the record, the byte count, and a hash of the whole stream. Main type: [`Capture`].

use std::collections::VecDeque;
use std::sync::Arc;

use regex::bytes::Regex as BytesRegex;

/// Longest partial line held back for masking; a longer line is masked in pieces.
const MAX_LINE: usize = 1 << 20;

/// `--ignore` patterns, applied to one line at a time: each match becomes `<ignored>`.
#[derive(Debug, Clone)]
pub struct Mask {
    patterns: Vec<BytesRegex>,
}

impl Mask {
    /// Compiles the patterns.
    pub fn new(patterns: &[String]) -> Result<Self, regex::Error> {
        Ok(Self { patterns: patterns.iter().map(|p| BytesRegex::new(p)).collect::<Result<_, _>>()? })
    }

    /// The mask of valid `patterns`, or none when there are none.
    pub(crate) fn of(patterns: &[String]) -> Option<Arc<Mask>> {
        (!patterns.is_empty()).then(|| Mask::new(patterns).ok().map(Arc::new)).flatten()
    }

    /// The bytes with every match replaced.
    pub fn apply(&self, bytes: &[u8]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        for re in &self.patterns {
            out = re.replace_all(&out, &b"<ignored>"[..]).into_owned();
        }
        out
    }
}

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
    hash: Option<Hashing>,
}

/// The hash of the whole stream, kept while capturing so that it covers bytes past the cap.
#[derive(Debug)]
struct Hashing {
    hasher: blake3::Hasher,
    /// Masks volatile parts line by line before hashing (`--ignore`); the partial last line
    /// waits in `line` for its end.
    mask: Option<Arc<Mask>>,
    line: Vec<u8>,
}

impl Capture {
    /// A capture that keeps at most `cap` bytes of head and `tail_len` bytes of tail.
    pub fn new(cap: usize, tail_len: usize) -> Self {
        Self {
            head: Vec::new(),
            cap,
            // Grown on the first output: a quiet attempt allocates nothing.
            tail: VecDeque::new(),
            tail_len,
            total: 0,
            hash: None,
        }
    }

    /// A capture that also hashes the whole stream, masked line by line by `mask` if given.
    pub fn hashing(cap: usize, tail_len: usize, mask: Option<Arc<Mask>>) -> Self {
        let mut c = Self::new(cap, tail_len);
        c.hash = Some(Hashing { hasher: blake3::Hasher::new(), mask, line: Vec::new() });
        c
    }

    /// The hash of the whole (masked) stream: the first 16 hex digits of its BLAKE3, or `None`
    /// when this capture does not hash.
    pub fn hash(&self) -> Option<String> {
        let h = self.hash.as_ref()?;
        let mut hasher = h.hasher.clone();
        if let Some(mask) = &h.mask {
            hasher.update(&mask.apply(&h.line));
        }
        Some(hasher.finalize().to_hex()[..16].to_owned())
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
        if let Some(h) = &mut self.hash {
            h.push(chunk);
        }
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

    /// The first `cap` bytes, moved out.
    pub fn into_head(self) -> Vec<u8> {
        self.head
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

impl Hashing {
    fn push(&mut self, chunk: &[u8]) {
        let Some(mask) = &self.mask else {
            self.hasher.update(chunk);
            return;
        };
        self.line.extend_from_slice(chunk);
        let complete = match self.line.iter().rposition(|&b| b == b'\n') {
            Some(i) => i + 1,
            None if self.line.len() > MAX_LINE => self.line.len(),
            None => return,
        };
        let rest = self.line.split_off(complete);
        let done = std::mem::replace(&mut self.line, rest);
        self.hasher.update(&mask.apply(&done));
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
    fn hash_covers_bytes_past_the_cap_and_masks_across_chunks() {
        let mut a = Capture::hashing(2, 2, None);
        a.push(b"abcdef");
        let mut b = Capture::hashing(2, 2, None);
        b.push(b"abcdeX");
        assert_ne!(a.hash(), b.hash());
        assert_eq!(Capture::new(2, 2).hash(), None);
        let mask = Some(Arc::new(Mask::new(&[r"pid=\d+".to_owned()]).unwrap()));
        let mut a = Capture::hashing(4, 4, mask.clone());
        a.push(b"pid=12");
        a.push(b"3 ok\nend");
        let mut b = Capture::hashing(4, 4, mask);
        b.push(b"pid=9 ok\nend");
        assert_eq!(a.hash(), b.hash());
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

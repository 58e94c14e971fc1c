//! The container: a magic number with the format version, then blocks of LZ4-compressed
//! JSON lines, each with its length before and its xxHash64 after (FORMAT.md).

use xxhash_rust::xxh64::xxh64;

/// The first 8 bytes of every recording.
pub(crate) const MAGIC: &[u8; 8] = b"CTOPREC\0";
/// The format's major version: readers refuse another.
pub(crate) const MAJOR: u16 = 1;
/// The format's minor version: newer minors only add line types and fields.
pub(crate) const MINOR: u16 = 0;
/// Magic and version.
pub(crate) const PREAMBLE_LEN: usize = 12;

/// The file's first 12 bytes.
pub(crate) fn preamble() -> [u8; PREAMBLE_LEN] {
    let mut out = [0; PREAMBLE_LEN];
    out[..8].copy_from_slice(MAGIC);
    out[8..10].copy_from_slice(&MAJOR.to_le_bytes());
    out[10..12].copy_from_slice(&MINOR.to_le_bytes());
    out
}

/// `text` (JSON lines) as one block: `u32-LE n | n bytes of LZ4 | u64-LE xxh64`.
pub(crate) fn encode(text: &[u8]) -> Vec<u8> {
    let body = lz4_flex::compress_prepend_size(text);
    let n = u32::try_from(body.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(body.len() + 12);
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&body);
    out.extend_from_slice(&xxh64(&body, 0).to_le_bytes());
    out
}

/// What the start of a file says it is.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// A recording of this (major, minor) format.
    Version(u16, u16),
    /// Not a recording.
    NotARecording,
}

/// Read the magic and version.
pub(crate) fn start(bytes: &[u8]) -> Start {
    match (bytes.get(..8), bytes.get(8..10), bytes.get(10..12)) {
        (Some(m), Some(major), Some(minor)) if m == MAGIC => {
            Start::Version(u16::from_le_bytes([major[0], major[1]]), u16::from_le_bytes([minor[0], minor[1]]))
        }
        _ => Start::NotARecording,
    }
}

/// One block as read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Block {
    /// Its text.
    Text(Vec<u8>),
    /// Whole, but its checksum does not match or it does not decompress: skipped.
    Corrupt {
        /// Where it starts in the file.
        offset: usize,
        /// Why.
        why: &'static str,
    },
    /// The file ends inside it (a write cut short): the last thing in the file.
    Torn {
        /// Where it starts in the file.
        offset: usize,
    },
}

/// The blocks after the preamble, in order. Iteration ends after a [`Block::Torn`].
pub(crate) struct Blocks<'a> {
    bytes: &'a [u8],
    at: usize,
    done: bool,
}

impl<'a> Blocks<'a> {
    /// The blocks of a whole file (`bytes` starts with the preamble).
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, at: PREAMBLE_LEN, done: false }
    }
}

impl Iterator for Blocks<'_> {
    type Item = Block;

    fn next(&mut self) -> Option<Block> {
        if self.done || self.at >= self.bytes.len() {
            return None;
        }
        let offset = self.at;
        let torn = |s: &mut Self| {
            s.done = true;
            Some(Block::Torn { offset })
        };
        let Some(len) = self.bytes.get(offset..offset + 4) else { return torn(self) };
        let n = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let body_end = offset.saturating_add(4).saturating_add(n);
        let (Some(body), Some(sum)) =
            (self.bytes.get(offset + 4..body_end), self.bytes.get(body_end..body_end.saturating_add(8)))
        else {
            return torn(self);
        };
        self.at = body_end + 8;
        let sum = u64::from_le_bytes([sum[0], sum[1], sum[2], sum[3], sum[4], sum[5], sum[6], sum[7]]);
        if xxh64(body, 0) != sum {
            return Some(Block::Corrupt { offset, why: "its checksum does not match" });
        }
        Some(match lz4_flex::decompress_size_prepended(body) {
            Ok(text) => Block::Text(text),
            Err(_) => Block::Corrupt { offset, why: "it does not decompress" },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(blocks: &[&[u8]]) -> Vec<u8> {
        let mut out = preamble().to_vec();
        for b in blocks {
            out.extend(encode(b));
        }
        out
    }

    #[test]
    fn blocks_round_trip() {
        let bytes = file(&[b"{\"t\":\"a\"}\n", b"", &[b'x'; 100_000]]);
        assert_eq!(start(&bytes), Start::Version(MAJOR, MINOR));
        let blocks: Vec<Block> = Blocks::new(&bytes).collect();
        assert_eq!(
            blocks,
            vec![
                Block::Text(b"{\"t\":\"a\"}\n".to_vec()),
                Block::Text(vec![]),
                Block::Text(vec![b'x'; 100_000])
            ]
        );
        assert_eq!(start(b"CTOPREC"), Start::NotARecording);
        assert_eq!(start(b"NOTAREC\0\x01\0\0\0"), Start::NotARecording);
    }

    #[test]
    fn a_torn_tail_ends_the_blocks() {
        let whole = file(&[b"one\n", b"two\n"]);
        for cut in 1..encode(b"two\n").len() {
            let bytes = &whole[..whole.len() - cut];
            let blocks: Vec<Block> = Blocks::new(bytes).collect();
            assert_eq!(blocks[0], Block::Text(b"one\n".to_vec()));
            assert!(matches!(blocks[1], Block::Torn { .. }), "cut {cut}: {blocks:?}");
            assert_eq!(blocks.len(), 2);
        }
    }

    #[test]
    fn a_corrupt_block_is_skipped_and_the_next_read() {
        let mut bytes = file(&[b"one\n", b"two\n", b"three\n"]);
        let second = PREAMBLE_LEN + encode(b"one\n").len();
        bytes[second + 6] ^= 0xff;
        let blocks: Vec<Block> = Blocks::new(&bytes).collect();
        assert_eq!(blocks[0], Block::Text(b"one\n".to_vec()));
        assert_eq!(blocks[1], Block::Corrupt { offset: second, why: "its checksum does not match" });
        assert_eq!(blocks[2], Block::Text(b"three\n".to_vec()));
    }
}

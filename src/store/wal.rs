//! The `-wal` file left beside the database, checked before SQLite opens it. SQLite reads a
//! WAL up to its first frame that does not check out and silently ignores the rest, and it
//! ignores (then overwrites) a WAL whose header does not check out: runs committed there
//! would vanish without a word. This module tells that damage from what a killed writer
//! leaves (a cut-off last frame, frames of a transaction that never committed), from the
//! bytes alone (format: sqlite.org/fileformat2.html#walformat). It reads; it never writes.

use std::io::Read;
use std::path::{Path, PathBuf};

const HEADER: usize = 32;
const FRAME_HEADER: usize = 24;
const MAGIC: u32 = 0x377f_0682;
const VERSION: u32 = 3_007_000;

/// The `-wal` file of database `db`.
pub fn path_of(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

/// Why the WAL beside `db` cannot be trusted, or `None` when it is missing, empty or holds
/// nothing SQLite would drop but a killed writer's unfinished transaction.
/// `page_size` is the database's (a WAL whose header is damaged has none of its own).
pub fn damage(wal: &Path, page_size: u32) -> std::io::Result<Option<String>> {
    // `files::open`: a FIFO or device in its place is refused, not waited on.
    let file = match crate::files::open(wal) {
        Ok(f) => f,
        Err(e) if e.not_found() => return Ok(None),
        Err(e) => return Err(std::io::Error::other(e.reason())),
    };
    let len = file.metadata()?.len();
    scan(std::io::BufReader::new(file), len, page_size)
}

/// [`damage`] over the WAL's bytes (`len` of them).
pub fn scan(mut r: impl Read, len: u64, page_size: u32) -> std::io::Result<Option<String>> {
    let mut head = [0u8; HEADER];
    if len < HEADER as u64 {
        // Too short to have held a commit: nothing SQLite would drop.
        return Ok(None);
    }
    r.read_exact(&mut head)?;
    let Some(wal) = Header::parse(&head) else {
        let frame = (FRAME_HEADER as u64) + u64::from(page_size);
        if len - HEADER as u64 >= frame {
            return Ok(Some(format!(
                "its header is damaged, so SQLite would ignore the {} bytes of writes after it",
                len - HEADER as u64
            )));
        }
        return Ok(None);
    };
    let mut frame = vec![0u8; FRAME_HEADER + wal.page_size as usize];
    let (mut sum, mut index, mut broken) = (wal.sum, 0u64, None);
    // After the first frame that does not check out, a frame of this WAL that checks out
    // against the one before it and ends a transaction is a commit SQLite would drop. A
    // killed writer's leftovers never hold one: they are a transaction that never committed.
    while read_full(&mut r, &mut frame)? {
        index += 1;
        let ours = frame[8..16] == wal.salts;
        let stored = (be(&frame[16..20]), be(&frame[20..24]));
        let checks = ours && be(&frame[0..4]) != 0 && wal.sum_of(sum, &frame) == stored;
        match broken {
            None if checks => {}
            None => broken = Some(index),
            Some(first) if checks && be(&frame[4..8]) != 0 => {
                return Ok(Some(format!(
                    "frame {first} of its {} frames is damaged, and SQLite would silently \
                     drop it and every write after it, a transaction committed at frame \
                     {index} included",
                    frame_count(len, wal.page_size)
                )));
            }
            Some(_) => {}
        }
        sum = stored;
    }
    Ok(None)
}

fn frame_count(len: u64, page_size: u32) -> u64 {
    (len - HEADER as u64) / (FRAME_HEADER as u64 + u64::from(page_size))
}

/// Fills `buf`; `false` at the end of the file (a last frame cut short counts as the end).
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<bool> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => return Ok(false),
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

fn be(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// A WAL header that checks out.
struct Header {
    /// Checksums are sums of big-endian words (else little-endian): the magic's low bit.
    big_endian: bool,
    page_size: u32,
    salts: [u8; 8],
    /// The header's checksum, which the first frame's continues.
    sum: (u32, u32),
}

impl Header {
    fn parse(h: &[u8; HEADER]) -> Option<Header> {
        let magic = be(&h[0..4]);
        let page_size = be(&h[8..12]);
        let valid_size = (512..=65536).contains(&page_size) && page_size.is_power_of_two();
        if magic & !1 != MAGIC || be(&h[4..8]) != VERSION || !valid_size {
            return None;
        }
        let big_endian = magic & 1 == 1;
        let sum = checksum(big_endian, (0, 0), &h[..24]);
        if sum != (be(&h[24..28]), be(&h[28..32])) {
            return None;
        }
        let mut salts = [0u8; 8];
        salts.copy_from_slice(&h[16..24]);
        Some(Header {
            big_endian,
            page_size,
            salts,
            sum,
        })
    }

    /// A frame's checksum, continuing `prev`: over its first 8 bytes, then its page.
    fn sum_of(&self, prev: (u32, u32), frame: &[u8]) -> (u32, u32) {
        let sum = checksum(self.big_endian, prev, &frame[..8]);
        checksum(self.big_endian, sum, &frame[FRAME_HEADER..])
    }
}

/// SQLite's WAL checksum over `data` (a multiple of 8 bytes), starting from `s`.
fn checksum(big_endian: bool, (mut s0, mut s1): (u32, u32), data: &[u8]) -> (u32, u32) {
    let word = |b: &[u8]| {
        let b = [b[0], b[1], b[2], b[3]];
        if big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    };
    for pair in data.chunks_exact(8) {
        s0 = s0.wrapping_add(word(&pair[..4]).wrapping_add(s1));
        s1 = s1.wrapping_add(word(&pair[4..]).wrapping_add(s0));
    }
    (s0, s1)
}

#[cfg(test)]
#[path = "wal_tests.rs"]
mod tests;

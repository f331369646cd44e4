//! The WAL check on WALs built frame by frame (what a killed writer leaves, what damage
//! looks like) and on real ones SQLite wrote.

use super::*;

const PAGE: u32 = 512;

/// A WAL being built: its header, then frames chained by checksum as SQLite writes them.
struct Wal {
    bytes: Vec<u8>,
    salts: [u8; 8],
    sums: Vec<(u32, u32)>,
    big_endian: bool,
}

impl Wal {
    fn new(salt: u32, big_endian: bool) -> Wal {
        let mut h = vec![];
        h.extend((MAGIC | u32::from(big_endian)).to_be_bytes());
        h.extend(VERSION.to_be_bytes());
        h.extend(PAGE.to_be_bytes());
        h.extend(0u32.to_be_bytes());
        h.extend(salt.to_be_bytes());
        h.extend(0xdead_beef_u32.to_be_bytes());
        let sum = checksum(big_endian, (0, 0), &h);
        h.extend(sum.0.to_be_bytes());
        h.extend(sum.1.to_be_bytes());
        let mut salts = [0u8; 8];
        salts.copy_from_slice(&h[16..24]);
        Wal {
            bytes: h,
            salts,
            sums: vec![sum],
            big_endian,
        }
    }

    /// Writes frame `at` (1-based; one past the last appends), chained from frame `at - 1`
    /// as it is now; `commit` marks the end of a transaction.
    fn frame(&mut self, at: usize, fill: u8, commit: bool) -> &mut Self {
        let mut f = vec![];
        f.extend(1u32.to_be_bytes());
        f.extend(u32::from(commit).to_be_bytes());
        f.extend(self.salts);
        let page = vec![fill; PAGE as usize];
        let sum = checksum(self.big_endian, self.sums[at - 1], &f[..8]);
        let sum = checksum(self.big_endian, sum, &page);
        f.extend(sum.0.to_be_bytes());
        f.extend(sum.1.to_be_bytes());
        f.extend(page);
        let start = HEADER + (at - 1) * f.len();
        let end = start + f.len();
        if self.bytes.len() < end {
            self.bytes.resize(end, 0);
        }
        self.bytes[start..end].copy_from_slice(&f);
        self.sums.truncate(at);
        self.sums.push(sum);
        self
    }

    fn append(&mut self, fill: u8, commit: bool) -> &mut Self {
        let at = self.sums.len();
        self.frame(at, fill, commit)
    }

    /// Offset of frame `at`'s page.
    fn page(&self, at: usize) -> usize {
        HEADER + (at - 1) * (FRAME_HEADER + PAGE as usize) + FRAME_HEADER
    }

    fn check(&self) -> Option<String> {
        let len = self.bytes.len() as u64;
        scan(&self.bytes[..], len, PAGE).unwrap()
    }
}

#[test]
fn committed_frames_in_either_byte_order_are_intact() {
    for big_endian in [false, true] {
        let mut w = Wal::new(7, big_endian);
        w.append(1, false).append(2, true).append(3, true);
        assert_eq!(w.check(), None);
        // and the sums are checked: a changed byte is found.
        let p = w.page(1);
        w.bytes[p] ^= 1;
        assert!(w.check().is_some(), "big_endian {big_endian}");
    }
}

#[test]
fn a_missing_empty_or_too_short_wal_is_nothing_to_report() {
    assert_eq!(scan(&[][..], 0, PAGE).unwrap(), None);
    assert_eq!(scan(&[0xA5; 31][..], 31, PAGE).unwrap(), None);
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(damage(&dir.path().join("x-wal"), PAGE).unwrap(), None);
}

#[test]
fn what_a_killed_writer_leaves_is_not_damage() {
    // An uncommitted transaction, its last frame cut short.
    let mut w = Wal::new(7, false);
    w.append(1, true).append(2, false).append(3, false);
    let cut = w.bytes.len() - 100;
    w.bytes.truncate(cut);
    assert_eq!(w.check(), None, "a cut-off last frame");
    // A frame header written, its page not yet (stale bytes under it).
    let mut w = Wal::new(7, false);
    w.append(1, true).append(2, false);
    let p = w.page(2);
    w.bytes[p..p + 8].fill(0xEE);
    assert_eq!(w.check(), None, "a torn last frame");
    // Killed mid-transaction; the next writer committed a shorter one over its start: the
    // rest of the old transaction still chains, but never committed.
    let mut w = Wal::new(7, false);
    w.append(1, true)
        .append(2, false)
        .append(3, false)
        .append(4, false);
    w.frame(2, 9, true);
    assert_eq!(w.check(), None, "an uncommitted transaction's leftovers");
}

#[test]
fn frames_of_an_older_generation_after_the_current_ones_are_not_damage() {
    let mut old = Wal::new(6, false);
    old.append(1, true).append(2, true).append(3, true);
    let mut w = Wal::new(7, false);
    w.append(4, true);
    let len = w.bytes.len();
    w.bytes.extend_from_slice(&old.bytes[len..]);
    assert_eq!(w.check(), None);
}

#[test]
fn a_damaged_frame_before_a_commit_is_reported() {
    let mut w = Wal::new(7, false);
    w.append(1, true)
        .append(2, false)
        .append(3, true)
        .append(4, true);
    let p = w.page(2);
    w.bytes[p + 100] ^= 0x40;
    let why = w.check().expect("reported");
    assert!(why.contains("frame 2 of its 4 frames is damaged"), "{why}");
    assert!(why.contains("committed at frame 3 included"), "{why}");
}

#[test]
fn a_frame_whose_salt_is_damaged_is_reported() {
    let mut w = Wal::new(7, false);
    w.append(1, true).append(2, true).append(3, true);
    let p = w.page(1);
    w.bytes[p - 16] ^= 1; // the first salt of frame 1
    assert!(w.check().is_some());
}

#[test]
fn a_damaged_header_over_frames_is_reported_a_garbage_one_too() {
    let mut w = Wal::new(7, false);
    w.append(1, true);
    w.bytes[20] ^= 1;
    let why = w.check().expect("reported");
    assert!(why.contains("header is damaged"), "{why}");
    let garbage = vec![0xA5; 4096];
    assert!(scan(&garbage[..], 4096, PAGE).unwrap().is_some());
}

/// A WAL SQLite itself wrote: two transactions past the database file, kept by closing
/// without a checkpoint, as a killed process leaves it.
fn real_wal(dir: &Path) -> (PathBuf, u32) {
    use rusqlite::config::DbConfig;
    let db = dir.join("x.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
        .unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.execute_batch("CREATE TABLE t (x TEXT); PRAGMA wal_autocheckpoint = 0;")
        .unwrap();
    for i in 0..3 {
        let x = format!("{i}").repeat(3000);
        conn.execute("INSERT INTO t VALUES (?1)", [x]).unwrap();
    }
    let size: u32 = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap();
    drop(conn);
    (path_of(&db), size)
}

#[test]
fn a_wal_sqlite_wrote_is_intact_until_a_byte_of_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, size) = real_wal(dir.path());
    assert!(std::fs::metadata(&wal).unwrap().len() > 0);
    assert_eq!(damage(&wal, size).unwrap(), None);
    let mut bytes = std::fs::read(&wal).unwrap();
    bytes[HEADER + FRAME_HEADER + 10] ^= 1;
    std::fs::write(&wal, bytes).unwrap();
    let why = damage(&wal, size).unwrap().expect("reported");
    assert!(why.contains("frame 1 of its"), "{why}");
}

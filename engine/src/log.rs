//! The write-ahead log: every write is made durable here before it is applied.
//!
//! A memtable lives in memory, so a crash would lose it. Before a write touches
//! a memtable, the engine appends it to a *log segment*, a file of framed
//! records. Opening a store replays the segments a family still needs, which
//! rebuilds the memtables exactly as they were. Once every family has flushed
//! the writes of a segment to table files, the segment is deleted.
//!
//! Every record is framed the same way, here and in the manifest:
//!
//! ```text
//! | masked crc32 (u32 LE) | length (u32 LE) | payload (length bytes) |
//! ```
//!
//! The checksum covers the length bytes and the payload, so a damaged length is
//! caught too. A crash can leave the last record half written (a *torn tail*):
//! that write was never acknowledged, so the reader drops it quietly. Damage
//! before the last record is different: acknowledged writes would be lost, so
//! the reader reports corruption unless the caller asked to salvage.
//!
//! A segment is written once, from start to end, and never reopened for
//! appending: recovery starts a new segment, so a torn tail is never buried
//! under newer records.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use cellar_fs as fs;

use crate::error::{Error, Result};

/// Size of a record header: the masked checksum and the length, 4 bytes each.
const HEADER_LEN: usize = 8;

/// The largest payload a record may carry (256 MiB).
///
/// The writer refuses longer payloads and the reader treats a longer length
/// field as corruption, so a damaged length can never make the reader allocate
/// or skip gigabytes. A write batch or a manifest snapshot is far smaller.
pub(crate) const MAX_RECORD: usize = 256 << 20;

/// Added to the rotated checksum by [`mask_crc`] (LevelDB's constant).
const MASK_DELTA: u32 = 0xa282_ead8;

/// The write buffer keeps at most this much capacity between appends.
///
/// Reusing one buffer saves an allocation per write; capping what it keeps
/// stops one huge batch from pinning hundreds of megabytes for the life of the
/// segment.
const KEEP_BUFFER: usize = 1 << 20;

/// Masks a CRC before it is stored, as LevelDB does.
///
/// The CRC of a byte string that itself contains CRCs (a log record copied
/// into another file, say) is poorly distributed; rotating and adding a
/// constant makes a stored checksum look like ordinary data to the next CRC.
fn mask_crc(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// The checksum stored in a record header: CRC-32 of the length bytes and the payload.
fn record_crc(length_bytes: [u8; 4], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&length_bytes);
    hasher.update(payload);
    mask_crc(hasher.finalize())
}

/// Appends one framed record (header then payload) to `out`.
///
/// Fails with [`Error::TooLarge`] if the payload is longer than [`MAX_RECORD`];
/// `out` is then left unchanged.
pub(crate) fn encode_record(out: &mut Vec<u8>, payload: &[u8]) -> Result<()> {
    let length = match u32::try_from(payload.len()) {
        Ok(length) if payload.len() <= MAX_RECORD => length,
        _ => {
            return Err(Error::TooLarge {
                what: "log record",
                len: payload.len(),
                limit: MAX_RECORD,
            })
        }
    };
    let length_bytes = length.to_le_bytes();
    out.reserve(HEADER_LEN + payload.len());
    out.extend_from_slice(&record_crc(length_bytes, payload).to_le_bytes());
    out.extend_from_slice(&length_bytes);
    out.extend_from_slice(payload);
    Ok(())
}

/// Fsyncs a directory, which makes the creation, removal or renaming of the
/// files in it durable. (Fsyncing a file persists its bytes, not its name.)
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    fs::sync_dir(dir).map_err(|source| Error::io(dir, source))
}

/// Appends records to one log segment.
///
/// Each append is a single `write_all` of fully framed records and nothing is
/// kept in user space between calls, so once `append` returns the bytes are in
/// the kernel: a crash of the *process* loses nothing. Only [`LogWriter::sync`]
/// makes them survive a crash of the *machine*. A writer made
/// [`LogWriter::buffered`] keeps records in the process until a buffer fills,
/// trading the last buffer on a process crash for a system call per buffer
/// instead of per write.
///
/// Any I/O error is returned as is. The file may then end in a partial record,
/// so the engine must stop writing to this segment (it stops accepting writes
/// until the store is reopened).
#[derive(Debug)]
pub(crate) struct LogWriter {
    /// The open segment file.
    /// Shared so that a writer can fsync it after releasing the write lock
    /// (group commit: one fsync covers every record appended before it).
    file: Arc<File>,
    /// Where the segment lives, for error messages and for the engine.
    path: PathBuf,
    /// The segment's file number (shared number space with tables and manifests).
    number: u64,
    /// Bytes written so far, headers included.
    len: u64,
    /// Reused for framing records, so an append does not allocate. In
    /// buffered mode it also holds the records not yet handed to the OS.
    buf: Vec<u8>,
    /// Records collect in `buf` until it holds this many bytes (0: every
    /// append goes to the OS before it returns).
    buffer_limit: usize,
}

impl LogWriter {
    /// Creates a new, empty segment at `path` with file number `number`.
    ///
    /// The file must not exist yet. The parent directory is fsynced, so the
    /// segment's existence is durable before any record depends on it.
    pub(crate) fn create(path: &Path, number: u64) -> Result<LogWriter> {
        let file = Arc::new(fs::create_new(path).map_err(|source| Error::io(path, source))?);
        sync_dir(path.parent().unwrap_or(Path::new(".")))?;
        Ok(LogWriter {
            file,
            path: path.to_path_buf(),
            number,
            len: 0,
            buf: Vec::new(),
            buffer_limit: 0,
        })
    }

    /// Keeps appended records in the process until `limit` bytes collect (or
    /// until [`LogWriter::sync`] or [`LogWriter::flush_to_os`]), then writes
    /// them with one call. Saves a system call per write; a crash of the
    /// process loses what is still buffered.
    pub(crate) fn buffered(mut self, limit: usize) -> LogWriter {
        self.buffer_limit = limit;
        self
    }

    /// The segment's file number.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// The segment's path.
    #[allow(
        dead_code,
        reason = "part of the writer's specified API; recovery names segments by number today"
    )]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes written to the segment so far, headers included.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Appends one record; returns the bytes written (header included).
    pub(crate) fn append(&mut self, payload: &[u8]) -> Result<u64> {
        self.append_many(&[payload])
    }

    /// Appends several records with one write: group commit.
    ///
    /// Writers that arrive while another is writing can hand their batches to
    /// it; one `write_all` (and one later fsync) then serves them all. Returns
    /// the bytes written, headers included. Nothing is written if any payload
    /// is too large.
    pub(crate) fn append_many(&mut self, payloads: &[&[u8]]) -> Result<u64> {
        if self.buffer_limit == 0 {
            self.buf.clear();
        }
        let start = self.buf.len();
        for payload in payloads {
            if let Err(e) = encode_record(&mut self.buf, payload) {
                self.buf.truncate(start);
                return Err(e);
            }
        }
        let written = (self.buf.len() - start) as u64;
        self.len += written;
        if self.buf.len() >= self.buffer_limit {
            self.flush_to_os()?;
        }
        Ok(written)
    }

    /// Hands the buffered records to the OS (one `write_all`).
    pub(crate) fn flush_to_os(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let result = (&*self.file).write_all(&self.buf);
        self.buf.clear();
        if self.buf.capacity() > KEEP_BUFFER {
            self.buf = Vec::new();
        }
        result.map_err(|source| Error::io(&self.path, source))
    }

    /// Forces the records appended so far to stable storage (`fdatasync`),
    /// handing any buffered ones to the OS first.
    /// A handle on the segment for [`sync_file`]: with it a writer can make
    /// its record durable after letting the next writer append.
    pub(crate) fn sync_handle(&self) -> (Arc<File>, PathBuf) {
        (Arc::clone(&self.file), self.path.clone())
    }

    pub(crate) fn sync(&mut self) -> Result<()> {
        self.flush_to_os()?;
        fs::sync_data(&self.file, &self.path).map_err(|source| Error::io(&self.path, source))
    }
}

/// `fdatasync` of a segment through a handle from [`LogWriter::sync_handle`].
pub(crate) fn sync_file(file: &File, path: &Path) -> Result<()> {
    fs::sync_data(file, path).map_err(|source| Error::io(path, source))
}

/// What the reader does with damage found before the last record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TailPolicy {
    /// Drop a torn last record; any other damage is an [`Error::Corruption`].
    /// The default: it never silently loses an acknowledged write.
    TolerateTornTail,
    /// Keep every record before the first damage and drop the rest, reporting
    /// what was dropped. For a user who prefers a store with lost writes to no
    /// store at all.
    #[allow(
        dead_code,
        reason = "the salvage option of DESIGN.md 4 is not wired into Store::open yet"
    )]
    Salvage,
}

/// The bytes at the end of a segment that the reader did not return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DroppedTail {
    /// Offset of the first record that failed to decode.
    pub(crate) offset: u64,
    /// How many bytes were dropped, from `offset` to the end of the file.
    pub(crate) bytes: u64,
    /// Why the record at `offset` did not decode.
    pub(crate) why: String,
}

/// Everything a reader got from a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogContents {
    /// Each good record's offset in the file and its payload, in file order.
    pub(crate) records: Vec<(u64, Bytes)>,
    /// Length of the good prefix: the end of the last good record.
    pub(crate) valid_len: u64,
    /// The bytes after `valid_len`, if any, and why they were dropped.
    pub(crate) dropped_tail: Option<DroppedTail>,
}

/// Reads a whole segment (or manifest) and decodes its records.
///
/// A segment is bounded by the memtable size, so reading it into memory at
/// once is fine; the returned payloads share that one buffer.
///
/// When a record at offset X fails to decode, the reader decides whether the
/// damage is a *torn tail* (the end of an interrupted write, dropped under
/// either policy) or corruption:
/// - a torn tail: the file ends inside the record (fewer than 8 header bytes,
///   or a length that runs past the end), the record ends exactly at the end of
///   the file but its checksum does not match (only part of the last write
///   reached the disk), or every byte from X to the end is zero (space a file
///   system allocated but never filled before a power loss);
/// - corruption: anything else, including a length above [`MAX_RECORD`] (the
///   writer never writes one, and an interrupted write leaves missing or zero
///   bytes, not new ones). [`TailPolicy`] says what happens then.
pub(crate) fn read_log(path: &Path, policy: TailPolicy) -> Result<LogContents> {
    let data = std::fs::read(path).map_err(|source| Error::io(path, source))?;
    decode_log(path, Bytes::from(data), policy)
}

/// How the bytes at one offset decode.
enum Frame {
    /// A good record.
    Complete {
        /// Payload bytes after the header.
        length: usize,
    },
    /// The end of an interrupted write.
    Torn {
        /// Which kind of interrupted write it looks like.
        why: String,
    },
    /// Damage that an interrupted write cannot explain.
    Corrupt {
        /// What is wrong.
        what: String,
    },
}

/// Decodes the frame at the start of `rest` (the bytes from one offset to the end of the file).
fn decode_frame(rest: &[u8]) -> Frame {
    let failure = match check_frame(rest) {
        Ok(length) => return Frame::Complete { length },
        Err(failure) => failure,
    };
    // A zero header never decodes (an empty record has a checksum of
    // 0x60bb2d61), so zero-filled space always lands here.
    if rest.iter().all(|&byte| byte == 0) {
        return Frame::Torn {
            why: format!("{} zero bytes at the end of the file", rest.len()),
        };
    }
    failure
}

/// The checks of [`decode_frame`] apart from the zero-fill rule: the payload
/// length of a good record, or the failure.
fn check_frame(rest: &[u8]) -> std::result::Result<usize, Frame> {
    let Some((header, body)) = rest.split_first_chunk::<HEADER_LEN>() else {
        return Err(Frame::Torn {
            why: format!("header cut short: {} of {HEADER_LEN} bytes", rest.len()),
        });
    };
    let [c0, c1, c2, c3, l0, l1, l2, l3] = *header;
    let stored_crc = u32::from_le_bytes([c0, c1, c2, c3]);
    let length_bytes = [l0, l1, l2, l3];
    let length = u32::from_le_bytes(length_bytes) as usize;
    if length > MAX_RECORD {
        return Err(Frame::Corrupt {
            what: format!("record length {length} is over the limit of {MAX_RECORD}"),
        });
    }
    let Some(payload) = body.get(..length) else {
        return Err(Frame::Torn {
            why: format!(
                "record of {length} bytes cut short: {} bytes left in the file",
                body.len()
            ),
        });
    };
    if record_crc(length_bytes, payload) != stored_crc {
        return Err(if payload.len() == body.len() {
            Frame::Torn {
                why: "checksum mismatch in the last record of the file".to_string(),
            }
        } else {
            Frame::Corrupt {
                what: "checksum mismatch".to_string(),
            }
        });
    }
    Ok(length)
}

/// Decodes the records in `data`, the bytes of the file at `path` (used in errors).
fn decode_log(path: &Path, data: Bytes, policy: TailPolicy) -> Result<LogContents> {
    let mut records = Vec::new();
    let mut offset = 0usize;
    let mut dropped_tail = None;
    while let Some(rest) = data.get(offset..).filter(|rest| !rest.is_empty()) {
        let why = match decode_frame(rest) {
            Frame::Complete { length } => {
                let start = offset + HEADER_LEN;
                records.push((offset as u64, data.slice(start..start + length)));
                offset = start + length;
                continue;
            }
            Frame::Torn { why } => why,
            Frame::Corrupt { what } => match policy {
                TailPolicy::TolerateTornTail => return Err(Error::corruption(path, offset as u64, what)),
                TailPolicy::Salvage => what,
            },
        };
        dropped_tail = Some(DroppedTail {
            offset: offset as u64,
            bytes: rest.len() as u64,
            why,
        });
        break;
    }
    Ok(LogContents {
        records,
        valid_len: offset as u64,
        dropped_tail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A small deterministic generator, so a failing test fails the same way every time.
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// Payload number `i`, of `len` bytes, recognisable by its content.
    fn payload(i: usize, len: usize) -> Vec<u8> {
        (0..len).map(|j| (i * 31 + j) as u8).collect()
    }

    /// Writes `payloads` to a new segment `dir/000001.log` and returns its path.
    fn write_segment(dir: &Path, payloads: &[Vec<u8>]) -> PathBuf {
        let path = dir.join("000001.log");
        let mut writer = LogWriter::create(&path, 1).expect("create");
        for p in payloads {
            writer.append(p).expect("append");
        }
        writer.sync().expect("sync");
        path
    }

    /// The payloads of `contents`, as vectors.
    fn payloads_of(contents: &LogContents) -> Vec<Vec<u8>> {
        contents.records.iter().map(|(_, p)| p.to_vec()).collect()
    }

    /// Five records of 10, 20, 30, 40, 50 bytes; they start at 0, 18, 46, 84, 132.
    fn five_payloads() -> Vec<Vec<u8>> {
        (0..5).map(|i| payload(i, 10 * (i + 1))).collect()
    }

    fn flip_byte(path: &Path, offset: usize) {
        let mut bytes = std::fs::read(path).expect("read");
        bytes[offset] ^= 0x40;
        std::fs::write(path, bytes).expect("write");
    }

    #[test]
    fn record_frame_is_masked_crc_then_length_then_payload() {
        let mut out = Vec::new();
        encode_record(&mut out, b"abc").expect("encode");
        assert_eq!(out, [0x9a, 0xb8, 0xe9, 0x5c, 3, 0, 0, 0, b'a', b'b', b'c']);
        out.clear();
        encode_record(&mut out, b"").expect("encode");
        assert_eq!(out, [0x61, 0x2d, 0xbb, 0x60, 0, 0, 0, 0]);
    }

    #[test]
    fn mask_rotates_right_by_15_and_adds_leveldb_delta() {
        assert_eq!(mask_crc(0x66e1_5d33), 0x5ce9_b89a);
        assert_eq!(mask_crc(0), 0xa282_ead8);
        assert_eq!(mask_crc(0x0000_8000), 0xa282_ead9);
    }

    #[test]
    fn payload_over_max_record_is_refused() {
        let mut out = vec![7];
        let big = vec![0u8; MAX_RECORD + 1];
        let err = encode_record(&mut out, &big).expect_err("too large");
        assert!(matches!(
            err,
            Error::TooLarge { what: "log record", len, limit: MAX_RECORD } if len == MAX_RECORD + 1
        ));
        assert_eq!(out, [7]);
    }

    #[test]
    fn thousand_records_of_random_sizes_round_trip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut rng = XorShift(0x5eed);
        let payloads: Vec<Vec<u8>> = (0..1000).map(|i| payload(i, (rng.next() % 3000) as usize)).collect();
        let path = dir.path().join("000007.log");
        let mut writer = LogWriter::create(&path, 7).expect("create");
        let mut expected_offsets = Vec::new();
        let mut end = 0u64;
        for p in &payloads {
            expected_offsets.push(end);
            let written = writer.append(p).expect("append");
            assert_eq!(written, 8 + p.len() as u64);
            end += written;
        }
        writer.sync().expect("sync");
        assert_eq!(writer.number(), 7);
        assert_eq!(writer.path(), path);
        assert_eq!(writer.len(), end);

        for policy in [TailPolicy::TolerateTornTail, TailPolicy::Salvage] {
            let contents = read_log(&path, policy).expect("read");
            assert_eq!(contents.records.len(), 1000);
            assert_eq!(payloads_of(&contents), payloads);
            let offsets: Vec<u64> = contents.records.iter().map(|(o, _)| *o).collect();
            assert_eq!(offsets, expected_offsets);
            assert_eq!(contents.valid_len, end);
            assert_eq!(contents.dropped_tail, None);
        }
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), end);
    }

    #[test]
    fn append_many_writes_every_record_in_one_call() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("000002.log");
        let mut writer = LogWriter::create(&path, 2).expect("create");
        let written = writer.append_many(&[b"one", b"", b"three"]).expect("append_many");
        assert_eq!(written, 8 + 3 + 8 + 8 + 5);
        assert_eq!(writer.len(), 32);
        let contents = read_log(&path, TailPolicy::TolerateTornTail).expect("read");
        let records: Vec<(u64, &[u8])> = contents.records.iter().map(|(o, p)| (*o, p.as_ref())).collect();
        assert_eq!(records, [(0, &b"one"[..]), (11, &b""[..]), (19, &b"three"[..])]);
    }

    #[test]
    fn buffered_writer_hands_records_to_the_os_when_the_buffer_fills_or_on_sync() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("000004.log");
        let mut writer = LogWriter::create(&path, 4).expect("create").buffered(30);
        let on_disk = |path: &Path| std::fs::metadata(path).expect("metadata").len();
        writer.append(b"0123456789").expect("append"); // 18 bytes framed: kept
        assert_eq!((writer.len(), on_disk(&path)), (18, 0));
        writer.append(b"0123456789").expect("append"); // 36 >= 30: written
        assert_eq!(on_disk(&path), 36);
        writer.append(b"x").expect("append");
        assert_eq!(on_disk(&path), 36);
        writer.sync().expect("sync");
        assert_eq!(on_disk(&path), 45);
        let contents = read_log(&path, TailPolicy::TolerateTornTail).expect("read");
        assert_eq!(contents.records.len(), 3);
    }

    #[test]
    fn create_refuses_an_existing_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("000003.log");
        std::fs::write(&path, b"old").expect("write");
        let err = LogWriter::create(&path, 3).expect_err("exists");
        assert!(matches!(err, Error::Io { path: ref p, .. } if *p == path));
        assert_eq!(std::fs::read(&path).expect("read"), b"old");
    }

    #[test]
    fn empty_segment_has_no_records_and_no_dropped_tail() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write_segment(dir.path(), &[]);
        let contents = read_log(&path, TailPolicy::TolerateTornTail).expect("read");
        assert_eq!(contents.records, []);
        assert_eq!(contents.valid_len, 0);
        assert_eq!(contents.dropped_tail, None);
    }

    #[test]
    fn truncation_anywhere_in_the_last_record_gives_the_prefix() {
        let dir = tempfile::tempdir().expect("tempdir");
        let payloads = five_payloads();
        let path = write_segment(dir.path(), &payloads);
        let full = std::fs::read(&path).expect("read");
        assert_eq!(full.len(), 190);
        let last = 132;
        for cut in last..full.len() {
            std::fs::write(&path, &full[..cut]).expect("write");
            for policy in [TailPolicy::TolerateTornTail, TailPolicy::Salvage] {
                let contents = read_log(&path, policy).expect("a torn tail is never an error");
                assert_eq!(payloads_of(&contents), payloads[..4], "cut at {cut}");
                assert_eq!(contents.valid_len, 132);
                let dropped = contents.dropped_tail.map(|d| (d.offset, d.bytes));
                let expected = (cut > last).then_some((132, (cut - last) as u64));
                assert_eq!(dropped, expected, "cut at {cut}");
            }
        }
    }

    #[test]
    fn checksum_mismatch_in_the_last_record_is_a_torn_tail() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write_segment(dir.path(), &five_payloads());
        flip_byte(&path, 132 + 8 + 3);
        let contents = read_log(&path, TailPolicy::TolerateTornTail).expect("torn tail");
        assert_eq!(contents.records.len(), 4);
        assert_eq!(contents.valid_len, 132);
        assert_eq!(
            contents.dropped_tail,
            Some(DroppedTail {
                offset: 132,
                bytes: 58,
                why: "checksum mismatch in the last record of the file".to_string(),
            })
        );
    }

    #[test]
    fn flipped_byte_in_a_middle_record_is_corruption_at_its_offset() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write_segment(dir.path(), &five_payloads());
        flip_byte(&path, 46 + 8 + 5);
        let err = read_log(&path, TailPolicy::TolerateTornTail).expect_err("corruption");
        match err {
            Error::Corruption { file, offset, what } => {
                assert_eq!(file, path);
                assert_eq!(offset, 46);
                assert_eq!(what, "checksum mismatch");
            }
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn salvage_keeps_the_records_before_a_corrupt_middle_record() {
        let dir = tempfile::tempdir().expect("tempdir");
        let payloads = five_payloads();
        let path = write_segment(dir.path(), &payloads);
        flip_byte(&path, 46 + 8 + 5);
        let contents = read_log(&path, TailPolicy::Salvage).expect("salvage");
        assert_eq!(payloads_of(&contents), payloads[..2]);
        assert_eq!(contents.valid_len, 46);
        assert_eq!(
            contents.dropped_tail,
            Some(DroppedTail {
                offset: 46,
                bytes: 144,
                why: "checksum mismatch".to_string(),
            })
        );
    }

    #[test]
    fn zero_filled_space_after_the_records_is_a_torn_tail() {
        let dir = tempfile::tempdir().expect("tempdir");
        let payloads = five_payloads();
        let path = write_segment(dir.path(), &payloads);
        for zeros in [1usize, 7, 8, 4096] {
            let mut bytes = std::fs::read(&path).expect("read");
            bytes.truncate(190);
            bytes.resize(190 + zeros, 0);
            std::fs::write(&path, &bytes).expect("write");
            let contents = read_log(&path, TailPolicy::TolerateTornTail).expect("torn tail");
            assert_eq!(payloads_of(&contents), payloads);
            assert_eq!(contents.valid_len, 190);
            let dropped = contents.dropped_tail.expect("dropped");
            assert_eq!((dropped.offset, dropped.bytes), (190, zeros as u64));
        }
    }

    #[test]
    fn zeroed_bytes_followed_by_records_are_corruption() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write_segment(dir.path(), &five_payloads());
        let mut bytes = std::fs::read(&path).expect("read");
        bytes[18..46].fill(0);
        std::fs::write(&path, &bytes).expect("write");
        let err = read_log(&path, TailPolicy::TolerateTornTail).expect_err("corruption");
        assert!(matches!(err, Error::Corruption { offset: 18, .. }), "{err:?}");
    }

    #[test]
    fn huge_length_field_in_the_middle_is_corruption() {
        let dir = tempfile::tempdir().expect("tempdir");
        let payloads = five_payloads();
        let path = write_segment(dir.path(), &payloads);
        let mut bytes = std::fs::read(&path).expect("read");
        bytes[84 + 4..84 + 8].copy_from_slice(&0xFFFF_FFFFu32.to_le_bytes());
        std::fs::write(&path, &bytes).expect("write");
        let err = read_log(&path, TailPolicy::TolerateTornTail).expect_err("corruption");
        match err {
            Error::Corruption { file, offset, what } => {
                assert_eq!(file, path);
                assert_eq!(offset, 84);
                assert_eq!(what, "record length 4294967295 is over the limit of 268435456");
            }
            other => panic!("expected corruption, got {other:?}"),
        }
        let salvaged = read_log(&path, TailPolicy::Salvage).expect("salvage");
        assert_eq!(payloads_of(&salvaged), payloads[..3]);
        assert_eq!(salvaged.valid_len, 84);
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            let len = data.len() as u64;
            let data = Bytes::from(data);
            for policy in [TailPolicy::TolerateTornTail, TailPolicy::Salvage] {
                if let Ok(contents) = decode_log(Path::new("fuzz.log"), data.clone(), policy) {
                    let dropped = contents.dropped_tail.as_ref().map_or(0, |d| d.bytes);
                    prop_assert_eq!(contents.valid_len + dropped, len);
                    let framed: u64 = contents.records.iter().map(|(_, p)| 8 + p.len() as u64).sum();
                    prop_assert_eq!(framed, contents.valid_len);
                }
            }
        }

        #[test]
        fn encoded_records_decode_with_their_offsets(
            payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..16)
        ) {
            let mut data = Vec::new();
            let mut offsets = Vec::new();
            for p in &payloads {
                offsets.push(data.len() as u64);
                encode_record(&mut data, p).expect("encode");
            }
            let contents = decode_log(Path::new("p.log"), Bytes::from(data), TailPolicy::TolerateTornTail)
                .expect("decode");
            let decoded: Vec<(u64, Vec<u8>)> =
                contents.records.iter().map(|(o, p)| (*o, p.to_vec())).collect();
            let expected: Vec<(u64, Vec<u8>)> = offsets.into_iter().zip(payloads).collect();
            prop_assert_eq!(decoded, expected);
            prop_assert_eq!(contents.dropped_tail, None);
        }
    }
}

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
//! anywhere else loses acknowledged writes, so it is reported. The two are told
//! apart by evidence, never by where a damaged length points: a bad record is a
//! torn tail only if no checksum-valid frame follows it and the file may end
//! in one (the newest segment, or a manifest). See [`read_log`].
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
    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes written to the segment so far, headers included.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Appends one record with one `write_all` (or, buffered, keeps it until
    /// the buffer fills); returns the bytes written, header included. Nothing
    /// is written if the payload is too large.
    pub(crate) fn append(&mut self, payload: &[u8]) -> Result<u64> {
        if self.buffer_limit == 0 {
            self.buf.clear();
        }
        let start = self.buf.len();
        encode_record(&mut self.buf, payload)?;
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

    /// A handle on the segment for [`sync_file`]: with it a writer can make
    /// its record durable after letting the next writer append.
    pub(crate) fn sync_handle(&self) -> (Arc<File>, PathBuf) {
        (Arc::clone(&self.file), self.path.clone())
    }

    /// Forces the records appended so far to stable storage (`fdatasync`),
    /// handing any buffered ones to the OS first.
    pub(crate) fn sync(&mut self) -> Result<()> {
        self.flush_to_os()?;
        fs::sync_data(&self.file, &self.path).map_err(|source| Error::io(&self.path, source))
    }
}

/// `fdatasync` of a segment through a handle from [`LogWriter::sync_handle`].
pub(crate) fn sync_file(file: &File, path: &Path) -> Result<()> {
    fs::sync_data(file, path).map_err(|source| Error::io(path, source))
}

/// What a reader does when a record does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadMode {
    /// Damage is [`Error::Corruption`], except a torn tail when `may_end_torn`
    /// (the file is the newest segment, or a manifest, so its last write may
    /// have been cut short). The default: nothing acknowledged is ever
    /// dropped without an error.
    Strict {
        /// Whether the file may end in an interrupted write.
        may_end_torn: bool,
    },
    /// Keep every record before the first damage and drop the rest, reporting
    /// it: for a user who prefers a store that lost writes to no store.
    Salvage,
    /// Skip each damaged range and go on at the next checksum-valid frame:
    /// everything that can be read, for a repair or a dump. Nothing is an
    /// error; `may_end_torn` only says which damage is marked a torn tail
    /// (as [`ReadMode::Strict`] would have dropped it quietly).
    Resync {
        /// Whether the file may end in an interrupted write.
        may_end_torn: bool,
    },
}

impl ReadMode {
    /// Whether the file may end in an interrupted write.
    fn may_end_torn(self) -> bool {
        match self {
            ReadMode::Strict { may_end_torn } | ReadMode::Resync { may_end_torn } => may_end_torn,
            ReadMode::Salvage => false,
        }
    }
}

/// Bytes of a file the reader did not return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Damage {
    /// Offset of the first byte that did not decode.
    pub(crate) offset: u64,
    /// How many bytes were skipped from `offset`.
    pub(crate) bytes: u64,
    /// Why the record at `offset` did not decode.
    pub(crate) why: String,
    /// Whether the evidence says it is a torn tail (the end of an interrupted
    /// write) rather than damage to acknowledged records.
    pub(crate) torn: bool,
}

/// Everything a reader got from a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogContents {
    /// Each good record's offset in the file and its payload, in file order.
    pub(crate) records: Vec<(u64, Bytes)>,
    /// Length of the good prefix: the end of the last good record before the
    /// first damage.
    pub(crate) valid_len: u64,
    /// The ranges skipped, in file order: none, a torn tail, or (salvaged or
    /// resynced) the damage.
    pub(crate) damage: Vec<Damage>,
}

impl LogContents {
    /// The torn tail dropped, if the file ended in one.
    pub(crate) fn torn_tail(&self) -> Option<&Damage> {
        self.damage.iter().find(|d| d.torn)
    }
}

/// Reads a whole segment (or manifest) and decodes its records.
///
/// A segment is bounded by the memtable size, so reading it into memory at
/// once is fine; the returned payloads share that one buffer.
///
/// When the frame at offset X does not decode (header cut short, length past
/// the end of the file or above [`MAX_RECORD`], checksum mismatch), the reader
/// looks for evidence of what happened:
/// - if a checksum-valid frame starts anywhere after X, records were written
///   after the damaged one, so it is damage in the middle of the file:
///   corruption, whatever the length field says;
/// - otherwise the damage runs to the end of the file. It is a *torn tail*
///   (an interrupted last write, never acknowledged) if the file may end in
///   one and the damage is something an interrupted write can leave (missing
///   bytes, zeros, a checksum that does not match). A length above
///   [`MAX_RECORD`] is always corruption: the writer never writes one, and an
///   interrupted write leaves missing or zero bytes, not new ones.
///
/// [`ReadMode`] says what happens then. Looking for a valid frame costs a CRC
/// of the bytes a candidate length claims, at each offset after X where that
/// length fits in the file; on the torn tail of a crash that is a few
/// kilobytes, and a file in good order never pays it.
pub(crate) fn read_log(path: &Path, mode: ReadMode) -> Result<LogContents> {
    let data = std::fs::read(path).map_err(|source| Error::io(path, source))?;
    decode_log(path, Bytes::from(data), mode)
}

/// Why the frame at the start of some bytes does not decode.
struct BadFrame {
    /// What is wrong.
    what: String,
    /// Whether an interrupted write could have left it (false: a length
    /// above [`MAX_RECORD`]).
    could_be_torn: bool,
}

/// The payload length of the good frame at the start of `rest` (the bytes
/// from one offset to the end of the file), or why there is none.
fn check_frame(rest: &[u8]) -> std::result::Result<usize, BadFrame> {
    let torn = |what: String| BadFrame {
        what,
        could_be_torn: true,
    };
    let Some((header, body)) = rest.split_first_chunk::<HEADER_LEN>() else {
        return Err(torn(format!("header cut short: {} of {HEADER_LEN} bytes", rest.len())));
    };
    let [c0, c1, c2, c3, l0, l1, l2, l3] = *header;
    let stored_crc = u32::from_le_bytes([c0, c1, c2, c3]);
    let length_bytes = [l0, l1, l2, l3];
    let length = u32::from_le_bytes(length_bytes) as usize;
    if length > MAX_RECORD {
        return Err(BadFrame {
            what: format!("record length {length} is over the limit of {MAX_RECORD}"),
            could_be_torn: false,
        });
    }
    let Some(payload) = body.get(..length) else {
        return Err(torn(format!(
            "record of {length} bytes cut short: {} bytes left in the file",
            body.len()
        )));
    };
    if record_crc(length_bytes, payload) != stored_crc {
        return Err(torn("checksum mismatch".to_string()));
    }
    Ok(length)
}

/// The offset of the first checksum-valid frame that starts after `after`.
fn next_valid_frame(data: &[u8], after: usize) -> Option<usize> {
    (after + 1..data.len().saturating_sub(HEADER_LEN - 1)).find(|&at| {
        let rest = data.get(at..).unwrap_or_default();
        // Most offsets fail on the length alone, before any CRC is computed.
        let fits = rest
            .get(4..8)
            .and_then(|l| l.try_into().ok())
            .map(u32::from_le_bytes)
            .is_some_and(|length| length as usize <= rest.len() - HEADER_LEN);
        fits && check_frame(rest).is_ok()
    })
}

/// Decodes the records in `data`, the bytes of the file at `path` (used in errors).
pub(crate) fn decode_log(path: &Path, data: Bytes, mode: ReadMode) -> Result<LogContents> {
    let mut records = Vec::new();
    let mut damage: Vec<Damage> = Vec::new();
    let mut offset = 0usize;
    while let Some(rest) = data.get(offset..).filter(|rest| !rest.is_empty()) {
        let bad = match check_frame(rest) {
            Ok(length) => {
                let start = offset + HEADER_LEN;
                records.push((offset as u64, data.slice(start..start + length)));
                offset = start + length;
                continue;
            }
            Err(bad) => bad,
        };
        let next = next_valid_frame(&data, offset);
        // A resync skips to the next good frame; otherwise reading stops here
        // and everything to the end of the file is dropped.
        let end = match (mode, next) {
            (ReadMode::Resync { .. }, Some(at)) => at,
            _ => data.len(),
        };
        let zeros = rest.iter().all(|&byte| byte == 0);
        let why = if zeros {
            format!("{} zero bytes at the end of the file", rest.len())
        } else {
            bad.what
        };
        let torn = next.is_none() && bad.could_be_torn && mode.may_end_torn();
        if let ReadMode::Strict { .. } = mode {
            if !torn {
                let why = match next {
                    Some(at) => format!("{why} (a valid record follows at offset {at})"),
                    None if bad.could_be_torn => format!("{why} (in a file that cannot end in a torn write)"),
                    None => why,
                };
                return Err(Error::corruption(path, offset as u64, why));
            }
        }
        damage.push(Damage {
            offset: offset as u64,
            bytes: (end - offset) as u64,
            why,
            torn,
        });
        match (mode, next) {
            (ReadMode::Resync { .. }, Some(at)) => offset = at,
            _ => break,
        }
    }
    let valid_len = damage.first().map_or(offset as u64, |d| d.offset);
    Ok(LogContents {
        records,
        valid_len,
        damage,
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

    /// The newest segment or a manifest: may end in a torn write.
    const NEWEST: ReadMode = ReadMode::Strict { may_end_torn: true };
    /// A segment with a newer one after it: synced when the next one began.
    const OLDER: ReadMode = ReadMode::Strict { may_end_torn: false };

    /// The `what` of a corruption error, or a panic.
    fn corruption_at(err: Error, path: &Path) -> (u64, String) {
        match err {
            Error::Corruption { file, offset, what } => {
                assert_eq!(file, path);
                (offset, what)
            }
            other => panic!("expected corruption, got {other:?}"),
        }
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

        for mode in [
            NEWEST,
            OLDER,
            ReadMode::Salvage,
            ReadMode::Resync { may_end_torn: false },
        ] {
            let contents = read_log(&path, mode).expect("read");
            assert_eq!(contents.records.len(), 1000);
            assert_eq!(payloads_of(&contents), payloads);
            let offsets: Vec<u64> = contents.records.iter().map(|(o, _)| *o).collect();
            assert_eq!(offsets, expected_offsets);
            assert_eq!(contents.valid_len, end);
            assert_eq!(contents.damage, []);
        }
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), end);
    }

    #[test]
    fn each_append_is_one_frame_at_the_end_of_the_last() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write_segment(dir.path(), &[b"one".to_vec(), b"".to_vec(), b"three".to_vec()]);
        let contents = read_log(&path, NEWEST).expect("read");
        let records: Vec<(u64, &[u8])> = contents.records.iter().map(|(o, p)| (*o, p.as_ref())).collect();
        assert_eq!(records, [(0, &b"one"[..]), (11, &b""[..]), (19, &b"three"[..])]);
        assert_eq!(contents.valid_len, 32);
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
        let contents = read_log(&path, NEWEST).expect("read");
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
    fn empty_segment_has_no_records_and_no_damage() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write_segment(dir.path(), &[]);
        let contents = read_log(&path, OLDER).expect("read");
        assert_eq!(contents.records, []);
        assert_eq!(contents.valid_len, 0);
        assert_eq!(contents.damage, []);
    }

    #[test]
    fn truncation_anywhere_in_the_last_record_of_the_newest_file_gives_the_prefix() {
        let dir = tempfile::tempdir().expect("tempdir");
        let payloads = five_payloads();
        let path = write_segment(dir.path(), &payloads);
        let full = std::fs::read(&path).expect("read");
        assert_eq!(full.len(), 190);
        let last = 132;
        for cut in last..full.len() {
            std::fs::write(&path, &full[..cut]).expect("write");
            let resync = |may_end_torn| ReadMode::Resync { may_end_torn };
            for mode in [NEWEST, ReadMode::Salvage, resync(false), resync(true)] {
                let contents = read_log(&path, mode).expect("a torn tail is never an error");
                assert_eq!(payloads_of(&contents), payloads[..4], "cut at {cut}");
                assert_eq!(contents.valid_len, 132);
                let dropped: Vec<(u64, u64, bool)> =
                    contents.damage.iter().map(|d| (d.offset, d.bytes, d.torn)).collect();
                let expected = if cut > last {
                    vec![(132, (cut - last) as u64, mode.may_end_torn())]
                } else {
                    vec![]
                };
                assert_eq!(dropped, expected, "cut at {cut}");
            }
        }
    }

    #[test]
    fn in_a_file_that_cannot_end_torn_a_cut_last_record_is_corruption() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write_segment(dir.path(), &five_payloads());
        let full = std::fs::read(&path).expect("read");
        for cut in 133..full.len() {
            std::fs::write(&path, &full[..cut]).expect("write");
            let (offset, what) = corruption_at(read_log(&path, OLDER).expect_err("corruption"), &path);
            assert_eq!(offset, 132, "cut at {cut}");
            assert!(what.ends_with("(in a file that cannot end in a torn write)"), "{what}");
        }
    }

    #[test]
    fn checksum_mismatch_in_the_last_record_is_a_torn_tail() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write_segment(dir.path(), &five_payloads());
        flip_byte(&path, 132 + 8 + 3);
        let contents = read_log(&path, NEWEST).expect("torn tail");
        assert_eq!(contents.records.len(), 4);
        assert_eq!(contents.valid_len, 132);
        assert_eq!(
            contents.damage,
            [Damage {
                offset: 132,
                bytes: 58,
                why: "checksum mismatch".to_string(),
                torn: true,
            }]
        );
        assert_eq!(contents.torn_tail().map(|d| d.offset), Some(132));
    }

    #[test]
    fn flipped_byte_in_a_middle_record_is_corruption_at_its_offset() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write_segment(dir.path(), &five_payloads());
        flip_byte(&path, 46 + 8 + 5);
        let (offset, what) = corruption_at(read_log(&path, NEWEST).expect_err("corruption"), &path);
        assert_eq!(offset, 46);
        assert_eq!(what, "checksum mismatch (a valid record follows at offset 84)");
    }

    /// The damage a length-only rule called a torn tail: the length of a
    /// middle record now runs past the end of the file. The records after it
    /// are still there, checksums intact, so it is corruption.
    #[test]
    fn a_middle_length_running_past_the_end_is_corruption_not_a_torn_tail() {
        let dir = tempfile::tempdir().expect("tempdir");
        let payloads = five_payloads();
        let path = write_segment(dir.path(), &payloads);
        let mut bytes = std::fs::read(&path).expect("read");
        bytes[18 + 4..18 + 8].copy_from_slice(&1000u32.to_le_bytes());
        std::fs::write(&path, &bytes).expect("write");
        let (offset, what) = corruption_at(read_log(&path, NEWEST).expect_err("corruption"), &path);
        assert_eq!(offset, 18);
        assert_eq!(
            what,
            "record of 1000 bytes cut short: 164 bytes left in the file (a valid record follows at offset 46)"
        );
        // A repair reads on past the damage.
        let resynced = read_log(&path, ReadMode::Resync { may_end_torn: false }).expect("resync");
        assert_eq!(payloads_of(&resynced), [&payloads[..1], &payloads[2..]].concat());
        assert_eq!(
            resynced.damage.iter().map(|d| (d.offset, d.bytes)).collect::<Vec<_>>(),
            [(18, 28)]
        );
        assert_eq!(resynced.valid_len, 18);
    }

    #[test]
    fn salvage_keeps_the_records_before_a_corrupt_middle_record() {
        let dir = tempfile::tempdir().expect("tempdir");
        let payloads = five_payloads();
        let path = write_segment(dir.path(), &payloads);
        flip_byte(&path, 46 + 8 + 5);
        let contents = read_log(&path, ReadMode::Salvage).expect("salvage");
        assert_eq!(payloads_of(&contents), payloads[..2]);
        assert_eq!(contents.valid_len, 46);
        assert_eq!(
            contents.damage,
            [Damage {
                offset: 46,
                bytes: 144,
                why: "checksum mismatch".to_string(),
                torn: false,
            }]
        );
    }

    #[test]
    fn zero_filled_space_after_the_records_is_a_torn_tail_only_in_the_newest_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let payloads = five_payloads();
        let path = write_segment(dir.path(), &payloads);
        for zeros in [1usize, 7, 8, 4096] {
            let mut bytes = std::fs::read(&path).expect("read");
            bytes.truncate(190);
            bytes.resize(190 + zeros, 0);
            std::fs::write(&path, &bytes).expect("write");
            let contents = read_log(&path, NEWEST).expect("torn tail");
            assert_eq!(payloads_of(&contents), payloads);
            assert_eq!(contents.valid_len, 190);
            let dropped = contents.torn_tail().expect("dropped");
            assert_eq!((dropped.offset, dropped.bytes), (190, zeros as u64));
            assert_eq!(dropped.why, format!("{zeros} zero bytes at the end of the file"));
            let (offset, _) = corruption_at(read_log(&path, OLDER).expect_err("corruption"), &path);
            assert_eq!(offset, 190);
        }
    }

    #[test]
    fn zeroed_bytes_followed_by_records_are_corruption() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write_segment(dir.path(), &five_payloads());
        let mut bytes = std::fs::read(&path).expect("read");
        bytes[18..46].fill(0);
        std::fs::write(&path, &bytes).expect("write");
        let (offset, _) = corruption_at(read_log(&path, NEWEST).expect_err("corruption"), &path);
        assert_eq!(offset, 18);
    }

    #[test]
    fn huge_length_field_is_corruption_even_at_the_end() {
        let dir = tempfile::tempdir().expect("tempdir");
        let payloads = five_payloads();
        let path = write_segment(dir.path(), &payloads);
        for record in [84, 132] {
            let mut bytes = std::fs::read(&path).expect("read");
            bytes[record + 4..record + 8].copy_from_slice(&0xFFFF_FFFFu32.to_le_bytes());
            let damaged = dir.path().join(format!("{record}.log"));
            std::fs::write(&damaged, &bytes).expect("write");
            let (offset, what) = corruption_at(read_log(&damaged, NEWEST).expect_err("corruption"), &damaged);
            assert_eq!(offset, record as u64);
            assert!(
                what.starts_with("record length 4294967295 is over the limit of 268435456"),
                "{what}"
            );
            let salvaged = read_log(&damaged, ReadMode::Salvage).expect("salvage");
            let kept = if record == 84 { 3 } else { 4 };
            assert_eq!(payloads_of(&salvaged), payloads[..kept]);
            assert_eq!(salvaged.valid_len, record as u64);
        }
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            let len = data.len() as u64;
            let data = Bytes::from(data);
            for mode in [NEWEST, OLDER, ReadMode::Salvage, ReadMode::Resync { may_end_torn: false }] {
                if let Ok(contents) = decode_log(Path::new("fuzz.log"), data.clone(), mode) {
                    let skipped: u64 = contents.damage.iter().map(|d| d.bytes).sum();
                    let framed: u64 = contents.records.iter().map(|(_, p)| 8 + p.len() as u64).sum();
                    prop_assert_eq!(framed + skipped, len);
                    if !matches!(mode, ReadMode::Resync { .. }) {
                        prop_assert_eq!(framed, contents.valid_len);
                    }
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
            let contents = decode_log(Path::new("p.log"), Bytes::from(data), OLDER).expect("decode");
            let decoded: Vec<(u64, Vec<u8>)> =
                contents.records.iter().map(|(o, p)| (*o, p.to_vec())).collect();
            let expected: Vec<(u64, Vec<u8>)> = offsets.into_iter().zip(payloads).collect();
            prop_assert_eq!(decoded, expected);
            prop_assert_eq!(contents.damage, vec![]);
        }
    }
}

//! Byte encodings of key parts, and how HBase prints a key.
//!
//! A sorted store compares row keys as unsigned bytes, one byte at a time
//! (HBase's `Bytes.compareTo`, cellar's own order). So the question for every
//! key part is: *does byte order match the order I want?*
//!
//! * Text digits do not: `"10" < "2"`, because `'1' < '2'`. Zero padding to a
//!   fixed width fixes it (`"02" < "10"`).
//! * Big-endian unsigned bytes do, for numbers that are never negative.
//! * A raw signed long, as HBase's `Bytes.toBytes(long)` writes it (big-endian
//!   two's complement), does not: `-1` is `FF FF FF FF FF FF FF FF`, which
//!   sorts after every positive number.
//! * Flipping the sign bit of that long does: it maps `i64::MIN..=i64::MAX`
//!   onto `0..=u64::MAX` in order.
//! * `Long.MAX_VALUE - ts` turns "newest first" into "smallest first", the
//!   only order a forward scan knows.

/// `Long.MAX_VALUE`, the base of a reverse timestamp.
pub const LONG_MAX: u64 = i64::MAX as u64;

/// Milliseconds in an hour, the width of an hour bucket.
pub const HOUR_MS: u64 = 3_600_000;

/// Milliseconds in a day, the width of a day bucket.
pub const DAY_MS: u64 = 24 * HOUR_MS;

/// The last millisecond of the year 9999 (UTC): the last time an hour, day
/// or month bucket can name with its four-digit year. A later year would
/// write a fifth digit, and `100000101` sorts before `99991231`.
pub const LAST_BUCKET_MS: u64 = 253_402_300_799_999;

/// A long as HBase's `Bytes.toBytes(long)` writes it: 8 bytes, big-endian,
/// two's complement. Negative numbers sort *after* positive ones.
///
/// ```
/// use cellar_keys::encoding::raw_long;
/// assert_eq!(raw_long(-1), [0xFF; 8]);
/// assert!(raw_long(-1) > raw_long(255)); // -1 sorts after 255
/// ```
pub fn raw_long(v: i64) -> [u8; 8] {
    v.to_be_bytes()
}

/// A long with its sign bit flipped, then big-endian: byte order equals
/// numeric order over the whole `i64` range.
///
/// ```
/// use cellar_keys::encoding::flipped_long;
/// assert!(flipped_long(-1) < flipped_long(0));
/// assert_eq!(flipped_long(i64::MIN), [0; 8]);
/// ```
pub fn flipped_long(v: i64) -> [u8; 8] {
    ((v as u64) ^ (1 << 63)).to_be_bytes()
}

/// Reads back a [`flipped_long`].
pub fn unflip_long(bytes: [u8; 8]) -> i64 {
    (u64::from_be_bytes(bytes) ^ (1 << 63)) as i64
}

/// An unsigned number as 8 big-endian bytes (`Bytes.toBytes(long)` of a
/// non-negative long): byte order equals numeric order.
pub fn unsigned_be(v: u64) -> [u8; 8] {
    v.to_be_bytes()
}

/// A non-negative number as decimal digits padded with zeros to `width`, or
/// `None` when it needs more digits than that (a wider number would sort
/// wrongly, so it is refused rather than written).
///
/// ```
/// use cellar_keys::encoding::padded_decimal;
/// assert_eq!(padded_decimal(42, 5).as_deref(), Some(&b"00042"[..]));
/// assert_eq!(padded_decimal(123456, 5), None);
/// ```
pub fn padded_decimal(v: u64, width: usize) -> Option<Vec<u8>> {
    let text = format!("{v:0width$}");
    (text.len() <= width).then(|| text.into_bytes())
}

/// A millisecond timestamp as 13 decimal digits (true from 2001 to 2286).
pub fn millis13(ts: u64) -> Option<Vec<u8>> {
    padded_decimal(ts, 13)
}

/// `Long.MAX_VALUE - ts`: falls as time rises, so the newest row sorts first.
/// Timestamps above `Long.MAX_VALUE` are clamped to it (they do not occur for
/// milliseconds since 1970).
pub fn reverse_ts(ts: u64) -> u64 {
    LONG_MAX - ts.min(LONG_MAX)
}

/// A reverse timestamp as 19 decimal digits (`Long.MAX_VALUE` has 19).
pub fn reverse_ts19(ts: u64) -> Vec<u8> {
    format!("{:019}", reverse_ts(ts)).into_bytes()
}

/// A reverse timestamp as 8 big-endian bytes.
pub fn reverse_ts8(ts: u64) -> [u8; 8] {
    reverse_ts(ts).to_be_bytes()
}

/// The hour a millisecond timestamp falls in, as `YYYYMMDDHH` (UTC): ten
/// digits that sort in time order and that a person can read.
///
/// ```
/// use cellar_keys::encoding::hour_bucket;
/// assert_eq!(hour_bucket(1_704_067_200_000), b"2024010100".to_vec()); // 2024-01-01 00:00
/// ```
pub fn hour_bucket(ts: u64) -> Vec<u8> {
    let hours = ts / HOUR_MS;
    let (y, m, d) = civil_from_days((hours / 24) as i64);
    format!("{y:04}{m:02}{d:02}{:02}", hours % 24).into_bytes()
}

/// The day a millisecond timestamp falls in, as `YYYYMMDD` (UTC).
///
/// ```
/// use cellar_keys::encoding::day_bucket;
/// assert_eq!(day_bucket(1_704_067_200_000 + 86_399_999), b"20240101".to_vec()); // the day's last millisecond
/// ```
pub fn day_bucket(ts: u64) -> Vec<u8> {
    let (y, m, d) = civil_from_days((ts / DAY_MS) as i64);
    format!("{y:04}{m:02}{d:02}").into_bytes()
}

/// The month a millisecond timestamp falls in, as `YYYYMM` (UTC).
///
/// ```
/// use cellar_keys::encoding::month_bucket;
/// assert_eq!(month_bucket(1_706_745_600_000), b"202402".to_vec()); // 2024-02-01 00:00
/// ```
pub fn month_bucket(ts: u64) -> Vec<u8> {
    let (y, m, _) = civil_from_days((ts / DAY_MS) as i64);
    format!("{y:04}{m:02}").into_bytes()
}

/// A (year, month, day) date to days since 1970-01-01; the inverse of
/// [`civil_from_days`] (Howard Hinnant's `days_from_civil`).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 to a (year, month, day) date; Howard Hinnant's
/// `civil_from_days`, exact for the proleptic Gregorian calendar.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// A key printed the way HBase's `Bytes.toStringBinary` prints it: printable
/// ASCII stays as it is, every other byte (and the backslash) becomes `\xNN`
/// with upper-case hex digits.
///
/// ```
/// use cellar_keys::encoding::to_string_binary;
/// assert_eq!(to_string_binary(&[b'a', 0, b'#', 0xFF]), "a\\x00#\\xFF");
/// ```
pub fn to_string_binary(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if (b' '..=b'~').contains(&b) && b != b'\\' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out
}

/// The stand-in hash of salts, hash prefixes and partition placement: 64-bit
/// FNV-1a with murmur3's 64-bit finaliser to spread the bits. It shows
/// placement and skew; it is *not* Cassandra's Murmur3 token.
pub fn hash64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The smallest byte string greater than every string starting with
/// `prefix`: the exclusive end of a prefix scan. `None` when the prefix is
/// all `0xFF` (or empty): then the scan runs to the end of the table.
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Number of decimal digits needed to print `n` (at least 1).
pub fn decimal_width(n: u64) -> usize {
    n.to_string().len()
}

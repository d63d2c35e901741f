//! Byte encodings against HBase's `Bytes` semantics: `toBytes(long)`, the
//! unsigned `compareTo` every sorted store uses, and `toStringBinary`.

use cellar_keys::encoding::*;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

#[test]
fn raw_long_sorts_negative_numbers_after_positive_ones() {
    // Bytes.toBytes(-1L) is eight 0xFF bytes: above every positive long.
    assert_eq!(raw_long(-1), [0xFF; 8]);
    assert_eq!(raw_long(255), [0, 0, 0, 0, 0, 0, 0, 0xFF]);
    assert!(raw_long(-1) > raw_long(255));
    assert!(raw_long(i64::MIN) > raw_long(i64::MAX));
    assert!(
        raw_long(-5) < raw_long(-1),
        "negatives keep their order among themselves"
    );
}

#[test]
fn flipped_sign_bit_gives_numeric_order_over_random_values_and_extremes() {
    let mut rng = StdRng::seed_from_u64(500);
    let mut values: Vec<i64> = (0..500).map(|_| rng.random::<i64>()).collect();
    values.extend([i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX]);
    let mut by_number = values.clone();
    by_number.sort_unstable();
    let mut by_bytes = values.clone();
    by_bytes.sort_by_key(|v| flipped_long(*v));
    assert_eq!(by_bytes, by_number);
    assert_eq!(flipped_long(i64::MIN), [0; 8]);
    assert_eq!(flipped_long(i64::MAX), [0xFF; 8]);
    for v in values {
        assert_eq!(unflip_long(flipped_long(v)), v);
    }
}

#[test]
fn zero_padding_keeps_decimal_order_where_plain_text_does_not() {
    assert!(b"10".as_slice() < b"2".as_slice(), "unpadded text: 10 sorts before 2");
    let mut numbers: Vec<u64> = vec![0, 2, 9, 10, 11, 99, 100, 1000, 4242, 99_999];
    let mut by_bytes = numbers.clone();
    by_bytes.sort_by_key(|n| padded_decimal(*n, 5));
    numbers.sort_unstable();
    assert_eq!(by_bytes, numbers);
    assert_eq!(padded_decimal(7, 3).as_deref(), Some(&b"007"[..]));
    assert_eq!(
        padded_decimal(1000, 3),
        None,
        "a wider number is refused, not mis-sorted"
    );
}

#[test]
fn unsigned_big_endian_keeps_numeric_order() {
    let mut v = vec![0u64, 1, 255, 256, 65_535, u64::MAX, 1 << 40];
    let mut by_bytes = v.clone();
    by_bytes.sort_by_key(|n| unsigned_be(*n));
    v.sort_unstable();
    assert_eq!(by_bytes, v);
}

#[test]
fn reverse_timestamps_sort_newest_first_in_both_forms() {
    let times = [
        1_704_067_200_000u64,
        1_704_067_200_001,
        1_704_070_800_000,
        1_735_689_600_000,
    ];
    for pair in times.windows(2) {
        let (older, newer) = (pair[0], pair[1]);
        assert!(reverse_ts8(newer) < reverse_ts8(older));
        assert!(reverse_ts19(newer) < reverse_ts19(older));
        assert!(millis13(older) < millis13(newer), "the plain form is oldest first");
    }
    assert_eq!(reverse_ts19(0), b"9223372036854775807".to_vec());
    assert_eq!(reverse_ts19(1_704_067_200_000).len(), 19);
    assert_eq!(reverse_ts8(0), (i64::MAX as u64).to_be_bytes());
}

#[test]
fn to_string_binary_prints_like_hbase() {
    // Printable ASCII stays, everything else (and the backslash) is \xNN.
    assert_eq!(to_string_binary(b"user#42"), "user#42");
    assert_eq!(
        to_string_binary(&raw_long(1)),
        "\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01"
    );
    assert_eq!(to_string_binary(&[0x7F, b' ', b'~', b'\\', 0x80]), "\\x7F ~\\x5C\\x80");
    assert_eq!(
        to_string_binary(&reverse_ts8(1_704_067_200_000)),
        "\\x7F\\xFF\\xFEs=\\xAE\\x0B\\xFF"
    );
}

#[test]
fn hour_buckets_are_readable_and_sorted() {
    assert_eq!(hour_bucket(1_704_067_200_000), b"2024010100".to_vec());
    assert_eq!(hour_bucket(1_704_067_200_000 + 25 * HOUR_MS), b"2024010201".to_vec());
    assert_eq!(hour_bucket(951_782_400_000), b"2000022900".to_vec(), "a leap day");
}

#[test]
fn day_and_month_buckets_are_readable_and_sorted() {
    assert_eq!(day_bucket(1_704_067_200_000 - 1), b"20231231".to_vec());
    assert_eq!(day_bucket(1_704_067_200_000), b"20240101".to_vec());
    assert_eq!(day_bucket(951_782_400_000), b"20000229".to_vec(), "a leap day");
    assert_eq!(month_bucket(951_782_400_000), b"200002".to_vec());
    assert_eq!(month_bucket(1_704_067_200_000 - 1), b"202312".to_vec());
}

#[test]
fn days_from_civil_inverts_civil_from_days() {
    for days in [-800_000, -1, 0, 1, 11_016, 19_723, 19_783, 2_932_896] {
        let (y, m, d) = civil_from_days(days);
        assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
    }
    assert_eq!(days_from_civil(2024, 3, 1), 19_783);
}

#[test]
fn prefix_successor_is_the_end_of_a_prefix_scan() {
    assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
    assert_eq!(prefix_successor(&[b'a', 0xFF]), Some(b"b".to_vec()));
    assert_eq!(prefix_successor(&[0xFF, 0xFF]), None);
}

/// The last buckets before `u64::MAX`: the next bucket's first millisecond
/// is past the end of time, so the walk ends there (it once wrapped around
/// to 1970 and piled up buckets until it gave up, and panicked in a debug
/// build).
#[test]
fn buckets_at_the_end_of_u64_time_end_there() {
    use cellar_keys::key::TimeForm;
    for form in [TimeForm::HourBucket, TimeForm::DayBucket, TimeForm::MonthBucket] {
        let buckets = form.buckets_between(u64::MAX - 5, u64::MAX, 10);
        assert_eq!(buckets, form.encode(u64::MAX - 5).ok().map(|b| vec![b]), "{form:?}");
    }
}

/// A time form writes as many bytes as `Part::fixed_width` promises for
/// every time up to its last, and refuses the times after it: the year
/// 10000 would be a fifth digit of a bucket (`100000101` sorts before
/// `99991231`), 10^13 ms a fourteenth digit of `ts(ms)`.
#[test]
fn time_forms_keep_their_width_to_their_last_time_and_refuse_what_follows() {
    use cellar_keys::key::{Part, TimeForm};
    use cellar_keys::Error;
    let forms = [
        TimeForm::Millis13,
        TimeForm::Bytes8,
        TimeForm::Reversed8,
        TimeForm::Reversed19,
        TimeForm::HourBucket,
        TimeForm::DayBucket,
        TimeForm::MonthBucket,
    ];
    for form in forms {
        let width = Part::Timestamp(form).fixed_width();
        let last = form.last_ms();
        for ts in [0, 1_704_067_200_000, last / 2, last - 1, last] {
            let bytes = form.encode(ts).map_err(|e| format!("{form:?} {ts}: {e}"));
            assert_eq!(bytes.map(|b| b.len()), Ok(width.unwrap_or(0)), "{form:?} {ts}");
        }
        if let Some(after) = last.checked_add(1) {
            assert!(
                matches!(form.encode(after), Err(Error::Encode { .. })),
                "{form:?} {after}"
            );
            assert!(matches!(form.encode(u64::MAX), Err(Error::Encode { .. })), "{form:?}");
        }
    }
    // Two times never share a key: past Long.MAX_VALUE a reverse timestamp
    // would be clamped to 0, the key of Long.MAX_VALUE itself.
    for form in [TimeForm::Bytes8, TimeForm::Reversed8, TimeForm::Reversed19] {
        let at_max = form.encode(LONG_MAX).ok();
        assert!(at_max.is_some(), "{form:?}");
        assert_ne!(form.encode(LONG_MAX + 1).ok(), at_max, "{form:?}");
    }
    assert_eq!(LAST_BUCKET_MS, days_from_civil(10_000, 1, 1) as u64 * DAY_MS - 1);
    assert_eq!(
        TimeForm::DayBucket.encode(LAST_BUCKET_MS).ok(),
        Some(b"99991231".to_vec())
    );
    assert_eq!(
        TimeForm::HourBucket.encode(LAST_BUCKET_MS).ok(),
        Some(b"9999123123".to_vec())
    );
}

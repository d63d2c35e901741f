//! What the guides say about a design: each finding the seed names (a
//! timestamp first, "10" before "2", -1 after 255, Long.MAX_VALUE - ts newest
//! first, salts) checked on the design that should raise it, and not raised
//! on the design that follows the advice.

use cellar_keys::guides::{check, FieldKinds, Finding, BIGTABLE, DYNAMODB, HBASE};
use cellar_keys::{syntax, Error};

const ORDERS: [&str; 2] = ["customer", "order_id"];

fn findings(key: &str, range_store: bool) -> Result<Vec<Finding>, Error> {
    Ok(check(&syntax::parse(key)?, &FieldKinds::numbers(&ORDERS), range_store))
}

fn about<'a>(found: &'a [Finding], part: &str) -> Vec<&'a Finding> {
    found.iter().filter(|f| f.part == part).collect()
}

#[test]
fn a_time_first_key_of_a_range_store_is_advised_against_in_every_form() -> Result<(), Error> {
    for (part, hot) in [
        ("ts(ms)", "the last region"),
        ("ts(ms,8)", "the last region"),
        ("revts(ms,19)", "the first region"),
        ("revts(ms,8)", "the first region"),
        ("hour(ts)", "a whole bucket"),
        ("day(ts)", "a whole bucket"),
    ] {
        let found = findings(&format!(r##"{part} "#" pad(order_id,10)"##), true)?;
        let lead = found
            .iter()
            .find(|f| f.says.contains("leads the key"))
            .ok_or(Error::InvalidSetting(format!("{part}: {found:?}")))?;
        assert!(lead.warning && lead.part == part && lead.says.contains(hot), "{lead:?}");
        assert_eq!(lead.sources, [BIGTABLE, HBASE]);
        // After a field the reads name, the same part is fine.
        let found = findings(&format!(r##"pad(customer,8) "#" {part} "#" pad(order_id,10)"##), true)?;
        assert!(found.iter().all(|f| !f.says.contains("leads the key")), "{found:?}");
    }
    Ok(())
}

#[test]
fn a_time_only_partition_key_is_advised_against_on_a_hashed_store() -> Result<(), Error> {
    let found = findings("day(ts) | pad(customer,8)", false)?;
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].says.contains("is the whole partition key") && found[0].warning);
    assert_eq!(found[0].sources, [DYNAMODB]);
    // With the entity in the partition key, the day bounds it: no advice.
    assert_eq!(findings("pad(customer,8) day(ts) | ts(ms)", false)?, []);
    // A millisecond hashes to a partition of its own: writes spread.
    assert_eq!(findings("ts(ms) | pad(customer,8)", false)?, []);
    Ok(())
}

#[test]
fn a_number_as_text_sorts_10_before_2_unless_padded_or_hashed() -> Result<(), Error> {
    // The claim the advice makes, on the bytes the part writes.
    assert!(b"10".as_slice() < b"2".as_slice());
    let found = findings(r##"pad(customer,8) "#" field(order_id)"##, true)?;
    let text = about(&found, "field(order_id)");
    assert_eq!(text.len(), 1, "{found:?}");
    assert!(text[0].warning && text[0].says.contains(r#""10" sorts before "2""#));
    assert_eq!(findings(r##"pad(customer,8) "#" pad(order_id,10)"##, true)?, []);
    assert_eq!(findings(r##"pad(customer,8) "#" u64(order_id)"##, true)?, []);
    // Text that is not a number sorts as text should.
    let metric = check(
        &syntax::parse(r##"pad(device,8) "#" field(metric)"##)?,
        &FieldKinds::numbers(&["device"]),
        true,
    );
    assert_eq!(metric, []);
    // In a hashed store's partition key the bytes are hashed, not ordered.
    assert_eq!(findings(r##"field(customer) | pad(order_id,10)"##, false)?, []);
    Ok(())
}

#[test]
fn a_raw_long_puts_minus_one_after_255_and_a_flipped_one_does_not() -> Result<(), Error> {
    let found = findings(r##"long(customer) "#" pad(order_id,10)"##, true)?;
    let long = about(&found, "long(customer)");
    assert_eq!(long.len(), 1, "{found:?}");
    assert!(
        long[0].says.contains(r"-1 is \xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF"),
        "{long:?}"
    );
    assert!(
        long[0].says.contains(r"255 is \x00\x00\x00\x00\x00\x00\x00\xFF"),
        "{long:?}"
    );
    assert_eq!(findings(r##"flip(customer) "#" pad(order_id,10)"##, true)?, []);
    Ok(())
}

#[test]
fn a_reverse_timestamp_is_explained_with_the_newer_time_sorting_first() -> Result<(), Error> {
    for form in ["revts(ms,19)", "revts(ms,8)"] {
        let found = findings(&format!(r##"pad(customer,8) "#" {form} "#" pad(order_id,10)"##), true)?;
        let note = about(&found, form);
        assert_eq!(note.len(), 1, "{found:?}");
        assert!(
            !note[0].warning && note[0].says.contains("Long.MAX_VALUE - ts"),
            "{note:?}"
        );
        assert!(note[0].says.contains("the newest row sorts first"));
    }
    let found = findings(r##"pad(customer,8) "#" revts(ms,19) "#" pad(order_id,10)"##, true)?;
    assert!(found[0]
        .says
        .contains("1704067200001 ms is 9223370332787575806, 1704067200000 ms is 9223370332787575807"));
    Ok(())
}

#[test]
fn salts_say_what_a_reader_must_do() -> Result<(), Error> {
    let found = findings(r##"rr(8) "#" pad(customer,8) "#" pad(order_id,10)"##, true)?;
    assert!(
        found.len() == 1 && found[0].warning && found[0].says.contains("a point read included"),
        "{found:?}"
    );
    let found = findings(r##"salt(customer,16) "#" pad(customer,8) "#" pad(order_id,10)"##, true)?;
    assert!(
        found.len() == 1 && !found[0].warning && found[0].says.contains("fan-out of 16 scans"),
        "{found:?}"
    );
    let found = findings(r##"hash(customer,4) "#" pad(customer,8) "#" pad(order_id,10)"##, true)?;
    assert!(
        found.len() == 1 && found[0].says.contains("a scan of the whole table"),
        "{found:?}"
    );
    Ok(())
}

#[test]
fn a_text_part_with_no_separator_after_it_is_advised_against() -> Result<(), Error> {
    let device = FieldKinds::numbers(&["device"]);
    for key in [
        "field(metric) field(device)",
        r##"field(metric) pad(device,4) field(device) "#""##,
    ] {
        let found = check(&syntax::parse(key)?, &device, true);
        let text = about(&found, "field(metric)");
        assert!(
            text.len() == 1 && text[0].says.contains("no separator"),
            "{key}: {found:?}"
        );
    }
    // A separator, or only fixed-width parts up to one (or to the end):
    // where the text ends is known.
    for key in [
        r##"field(metric) "#" field(device)"##,
        "field(metric) pad(device,4)",
        r##"field(metric) pad(device,4) "#" field(metric)"##,
    ] {
        let found = check(&syntax::parse(key)?, &device, true);
        assert!(
            found.iter().all(|f| !f.says.contains("no separator")),
            "{key}: {found:?}"
        );
    }
    Ok(())
}

//! The key syntax, the builder, and the bytes a design writes.

use cellar_keys::encoding::to_string_binary;
use cellar_keys::key::{FieldEncoding, KeyDesign, Part, TimeForm};
use cellar_keys::syntax::parse;
use cellar_keys::workload::{Record, Value};
use cellar_keys::Error;

fn order() -> Record {
    Record {
        ts_ms: 1_704_067_200_000,
        fields: vec![("customer", Value::Int(42)), ("order_id", Value::Int(7))],
    }
}

#[test]
fn the_issue_example_parses_and_prints_back() -> Result<(), Error> {
    let text = r##"salt(user,16) "#" pad(user,12) "#" revts(ms,19) "#" field(order_id)"##;
    let key = parse(text)?;
    assert_eq!(key.to_string(), text);
    assert_eq!(
        key.parts[0],
        Part::Salt {
            field: "user".into(),
            buckets: 16
        }
    );
    assert_eq!(key.parts[4], Part::Timestamp(TimeForm::Reversed19));
    Ok(())
}

#[test]
fn builder_and_syntax_make_the_same_design() -> Result<(), Error> {
    let built = KeyDesign::builder()
        .pad("customer", 12)
        .end_partition_key()
        .timestamp(TimeForm::Reversed8)
        .sep("#")
        .encoded("order_id", FieldEncoding::FlippedLong)
        .build();
    let parsed = parse(r##"pad(customer,12) | revts(ms,8) "#" flip(order_id)"##)?;
    assert_eq!(built, parsed);
    assert_eq!(
        parsed.to_string(),
        r##"pad(customer,12) | revts(ms,8) "#" flip(order_id)"##
    );
    Ok(())
}

#[test]
fn every_part_form_round_trips() -> Result<(), Error> {
    let text = r#"const("o") "\x00" field(a) u64(a) long(a) flip(a) ts(ms) ts(ms,8) revts(ms,8) hour(ts) day(ts) month(ts) rr(4) hash(a,3)"#;
    let key = parse(text)?;
    assert_eq!(parse(&key.to_string())?, key);
    assert_eq!(parse("salt(*,8)")?.parts, vec![Part::RoundRobin { buckets: 8 }]);
    Ok(())
}

#[test]
fn syntax_errors_say_where() {
    for (text, offset) in [
        ("pad(customer)", 0),
        ("field(a) oops(b)", 9),
        (r##"field(a) "#"##, 9),
        ("ts(s)", 0),
        // Two hex digits, no sign: `u8::from_str_radix` alone took "+f".
        (r#"field(a) "\x+f""#, 10),
        (r#"field(a) "\x-1""#, 10),
    ] {
        match parse(text) {
            Err(Error::Syntax { offset: at, .. }) => assert_eq!(at, offset, "{text}"),
            other => panic!("{text}: expected a syntax error, got {other:?}"),
        }
    }
}

#[test]
fn a_design_renders_the_bytes_each_part_promises() -> Result<(), Error> {
    let key = parse(r##"pad(customer,6) "#" revts(ms,19) "#" field(order_id)"##)?;
    let bytes = key.render(&order(), 0)?;
    assert_eq!(to_string_binary(&bytes), "000042#9223370332787575807#7");
    let binary = parse(r#"long(customer) ts(ms,8)"#)?.render(&order(), 0)?;
    assert_eq!(binary.len(), 16);
    assert_eq!(to_string_binary(&binary[..8]), "\\x00\\x00\\x00\\x00\\x00\\x00\\x00*");
    Ok(())
}

#[test]
fn round_robin_salt_follows_the_write_number_and_hash_salt_the_field() -> Result<(), Error> {
    let rr = parse("rr(4)")?;
    let salts: Vec<Vec<u8>> = (0..5).map(|i| rr.render(&order(), i)).collect::<Result<_, _>>()?;
    assert_eq!(
        salts,
        vec![
            b"0".to_vec(),
            b"1".to_vec(),
            b"2".to_vec(),
            b"3".to_vec(),
            b"0".to_vec()
        ]
    );
    let salt = parse("salt(customer,16)")?;
    assert_eq!(
        salt.render(&order(), 0)?,
        salt.render(&order(), 99)?,
        "the reader can compute it"
    );
    assert_eq!(salt.render(&order(), 0)?.len(), 2, "16 buckets print as two digits");
    Ok(())
}

#[test]
fn values_an_encoding_cannot_hold_are_refused() -> Result<(), Error> {
    let mut rec = order();
    rec.fields[0].1 = Value::Int(-3);
    assert!(matches!(
        parse("pad(customer,4)")?.render(&rec, 0),
        Err(Error::Encode { .. })
    ));
    assert!(matches!(
        parse("u64(customer)")?.render(&rec, 0),
        Err(Error::Encode { .. })
    ));
    assert!(parse("flip(customer)")?.render(&rec, 0).is_ok());
    rec.fields[0].1 = Value::Int(123_456);
    assert!(matches!(
        parse("pad(customer,4)")?.render(&rec, 0),
        Err(Error::Encode { .. })
    ));
    Ok(())
}

#[test]
fn unknown_fields_are_named_with_the_ones_that_exist() -> Result<(), Error> {
    let err = parse("field(user)")?.check("orders", &["customer", "order_id"]);
    assert!(matches!(err, Err(Error::UnknownField { .. })));
    Ok(())
}

/// A random part, every form the syntax has (literals with the bytes that
/// need escaping: quote, backslash, zero, high bytes).
fn any_part() -> impl proptest::strategy::Strategy<Value = Part> {
    use proptest::prelude::*;
    let field = prop_oneof![Just("a"), Just("b"), Just("order_id")].prop_map(str::to_string);
    let encoding = prop_oneof![
        Just(FieldEncoding::Text),
        (1usize..=64).prop_map(FieldEncoding::Padded),
        Just(FieldEncoding::U64),
        Just(FieldEncoding::RawLong),
        Just(FieldEncoding::FlippedLong),
    ];
    let form = prop_oneof![
        Just(TimeForm::Millis13),
        Just(TimeForm::Bytes8),
        Just(TimeForm::Reversed8),
        Just(TimeForm::Reversed19),
        Just(TimeForm::HourBucket),
        Just(TimeForm::DayBucket),
        Just(TimeForm::MonthBucket),
    ];
    let bytes = proptest::collection::vec(
        prop_oneof![
            Just(b'"'),
            Just(b'\\'),
            Just(0u8),
            Just(0xFFu8),
            Just(b'#'),
            any::<u8>()
        ],
        0..4,
    );
    prop_oneof![
        (field.clone(), encoding).prop_map(|(name, encoding)| Part::Field { name, encoding }),
        form.prop_map(Part::Timestamp),
        (field.clone(), 1u32..).prop_map(|(field, buckets)| Part::Salt { field, buckets }),
        (1u32..).prop_map(|buckets| Part::RoundRobin { buckets }),
        (field, 1u8..=16).prop_map(|(field, digits)| Part::HashPrefix { field, digits }),
        bytes.clone().prop_map(Part::Constant),
        bytes.prop_map(Part::Separator),
    ]
}

proptest::proptest! {
    /// What `Display` writes, `parse` reads back as the same design: the same
    /// parts, and the partition key ending after the same part. (The tables
    /// crate keeps each layout's key as this text in its catalog, so a design
    /// that printed differently would reopen as another layout.)
    #[test]
    fn every_design_prints_as_text_that_parses_back_to_it(
        parts in proptest::collection::vec(any_part(), 1..7),
        bar in proptest::option::of(1usize..8),
    ) {
        let values = parts.iter().filter(|p| !p.is_literal()).count();
        proptest::prop_assume!(values > 0);
        let key = KeyDesign { parts, partition_parts: bar.map(|b| b.min(values)) };
        let text = key.to_string();
        let back = parse(&text).map_err(|e| proptest::test_runner::TestCaseError::fail(format!("{text}: {e}")))?;
        proptest::prop_assert_eq!(&back.parts, &key.parts, "{}", text);
        proptest::prop_assert_eq!(back.partition_len(), key.partition_len(), "{}", text);
    }
}

#[test]
fn a_partition_key_that_ends_at_the_last_part_prints_its_bar() -> Result<(), Error> {
    let key = parse("pad(a,4) pad(b,4) |")?;
    assert_eq!(key.partition_len(), 2);
    assert_eq!(key.to_string(), "pad(a,4) pad(b,4) |");
    assert_eq!(parse(&key.to_string())?.partition_len(), 2);
    Ok(())
}

/// A character that cannot start or continue an argument is named, with
/// what an argument may be: `field(customér)` said only "expected ',' or
/// ')'", and `const(é)` "expected an argument".
#[test]
fn a_character_an_argument_cannot_hold_is_named() {
    for (text, offset, what) in [
        ("field(customér)", 12, "expected ',' or ')', found 'é'"),
        (
            "const(é)",
            6,
            "expected an argument (a name, a number or a \"quoted\" string), found 'é'",
        ),
        ("pad(a,4", 7, "expected ',' or ')', found the end of the key"),
        (
            "pad(",
            4,
            "expected an argument (a name, a number or a \"quoted\" string), found the end of the key",
        ),
    ] {
        match parse(text) {
            Err(Error::Syntax { offset: at, what: said }) => {
                assert_eq!((at, said.as_str()), (offset, what), "{text}");
            }
            other => panic!("{text}: expected a syntax error, got {other:?}"),
        }
    }
}

/// A partition key of no value part (the builder's `end_partition_key`
/// before any field, or the field set by hand) is refused as the syntax
/// refuses `"x" | field(customer)`, rather than read as one part: the
/// design would print as a key its maker did not write.
#[test]
fn a_partition_key_of_no_value_part_is_refused() {
    let built = KeyDesign::builder()
        .constant("x")
        .end_partition_key()
        .field("customer")
        .build();
    assert_eq!(built.partition_parts, Some(0));
    match built.check("orders", &["customer", "order_id"]) {
        Err(Error::InvalidSetting(what)) => {
            assert_eq!(what, "the partition key needs at least one value part")
        }
        other => panic!("expected an invalid setting, got {other:?}"),
    }
    assert!(matches!(parse("\"x\" | field(customer)"), Err(Error::Syntax { .. })));
}

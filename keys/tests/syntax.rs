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

//! `cellar keys` driven as a process: the verdict, the plans, the exports,
//! the report file, and one-line errors for bad input.

mod common;
use common::Result;

fn keys(args: &[&str]) -> Result<String> {
    let output = assert_cmd::Command::new(common::bin())
        .arg("keys")
        .args(args)
        .output()?;
    let stderr = String::from_utf8(output.stderr)?;
    if !output.status.success() {
        return Err(format!("cellar keys {args:?} failed: {stderr}").into());
    }
    Ok(String::from_utf8(output.stdout)?)
}

#[test]
fn a_timestamp_first_key_is_a_hot_spot() -> Result {
    let out = keys(&["--key", r##"ts(ms) "#" field(order_id)"##, "--writes", "3000"])?;
    assert!(
        out.contains("verdict: HOT SPOT (4.00x even, whole run): the busiest server (#0) took 100.0% of 3000 writes"),
        "{out}"
    );
    assert!(out.contains("3000 of 3000 writes went to the last region"), "{out}");
    Ok(())
}

#[test]
fn plan_shows_the_seed_read_as_one_range_scan_with_limit_20() -> Result {
    let out = keys(&[
        "--key",
        r##"pad(customer,12) "#" revts(ms,19) "#" field(order_id)"##,
        "--writes",
        "3000",
        "--plan",
    ])?;
    assert!(
        out.contains("read: the 20 latest orders for customer 42\n  plan: one range scan, limit 20"),
        "{out}"
    );
    assert!(out.contains("plan: FULL SCAN"), "{out}");
    assert!(!out.contains("DISAGREES"), "{out}");
    Ok(())
}

#[test]
fn exports_cassandra_and_hbase_statements() -> Result {
    let out = keys(&[
        "--key",
        r##"pad(customer,12) | revts(ms,19) "#" field(order_id)"##,
        "--store",
        "hashed",
        "--writes",
        "500",
        "--export",
        "cassandra",
    ])?;
    assert!(out.contains("PRIMARY KEY ((customer), ts, order_id)"), "{out}");
    assert!(
        out.contains("WITH CLUSTERING ORDER BY (ts DESC, order_id ASC);"),
        "{out}"
    );
    let out = keys(&[
        "--key",
        r##"salt(customer,16) "#" ts(ms)"##,
        "--writes",
        "500",
        "--export",
        "hbase",
    ])?;
    assert!(
        out.contains(r#"create 'orders', {NAME => 'f', VERSIONS => 1}, SPLITS => ["04", "08", "12"]"#),
        "{out}"
    );
    Ok(())
}

#[test]
fn report_writes_a_self_contained_html_picture() -> Result {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("keys.html");
    let path_text = path.to_str().ok_or("path")?;
    let out = keys(&[
        "--key",
        r##"salt(order_id,8) "#" ts(ms)"##,
        "--writes",
        "2000",
        "--report",
        path_text,
    ])?;
    assert!(out.contains("report written to"), "{out}");
    let html = std::fs::read_to_string(&path)?;
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<svg"));
    // Nothing loaded from the network: the page names no address at all
    // (inline SVG needs no namespace attribute inside HTML).
    assert_eq!(html.matches("http").count(), 0);
    assert!(!html.contains("<script"));
    Ok(())
}

#[test]
fn bad_input_is_one_line_and_exit_1() -> Result {
    for args in [
        vec!["--key", "pad(customer)"],
        vec!["--key", "field(user)"],
        vec!["--key", "field(customer)", "--workload", "nope"],
        vec!["--key", "field(customer)", "--store", "hashed", "--policy", "stepping"],
        vec!["--key", "field(customer)", "--span", "forever"],
        // Numbers past what the simulation draws: each was a panic or an
        // aborted allocation.
        vec!["--key", "field(customer)", "--servers", "18446744073709551615"],
        vec!["--key", "field(customer)", "--servers", "100000000"],
        vec!["--key", "field(customer)", "--presplit", "18446744073709551615"],
        vec![
            "--key",
            "field(customer)",
            "--store",
            "hashed",
            "--num-tokens",
            "18446744073709551615",
        ],
        vec!["--key", "field(customer)", "--span", "200000000000d"],
        // The partition key given twice: the flag silently overrode the bar.
        vec!["--key", "field(customer) | field(order_id)", "--partition-parts", "2"],
    ] {
        common::fails_without_dir(&[&["keys"][..], &args].concat())?;
    }
    Ok(())
}

#[test]
fn keys_that_collide_are_a_warning_and_count_as_lost_writes() -> Result {
    // No separator: customer 31 + order 2 and customer 3 + order 12 are both `312`.
    let out = keys(&["--key", "field(customer) field(order_id)"])?;
    assert!(
        out.contains(
            "warning: 8 of 10000 writes render a key an earlier write already has, and overwrite it: \
             write 2 (customer=31, order_id=2) and write 12 (customer=3, order_id=12) are both 312; "
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "collisions: 8 of 10000 writes LOST: each rendered a key an earlier write had, and overwrote it\n"
        ),
        "{out}"
    );
    // With a separator, none.
    let out = keys(&["--key", r##"field(customer) "#" field(order_id)"##])?;
    assert!(!out.contains("warning") && !out.contains("collisions"), "{out}");
    Ok(())
}

#[test]
fn the_verdict_word_agrees_with_the_ratio_it_prints() -> Result {
    // 1.25x over the whole run: uneven, though the median slice is 1.24x.
    let out = keys(&["--key", "field(customer) field(order_id)"])?;
    assert!(out.contains("verdict: uneven (1.25x even, whole run):"), "{out}");
    // 1.16x in the median slice, 1.04x over the whole run: even.
    let out = keys(&["--key", r##"hash(customer,2) "#" field(order_id)"##])?;
    assert!(
        out.contains("verdict: spread evenly (1.16x even, median time slice):"),
        "{out}"
    );
    Ok(())
}

/// Seed 002: the sample keys come "with checks from the Bigtable and HBase
/// guides underneath", and the byte-order section says why a raw long puts
/// -1 after 255, why "10" sorts before "2", and why Long.MAX_VALUE - ts puts
/// the newest row first.
#[test]
fn the_guides_checks_follow_the_sample_keys() -> Result {
    let out = keys(&[
        "--key",
        r##"ts(ms) "#" long(customer) "#" field(order_id)"##,
        "--writes",
        "500",
    ])?;
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("what the guides say"))
        .ok_or(format!("no guides section: {out}"))?;
    assert!(lines[..at].iter().any(|l| l.starts_with("sample keys:")), "{out}");
    let guides = lines[at..].join("\n");
    assert!(guides.contains("ts(ms) leads the key"), "{out}");
    assert!(guides.contains(r"-1 is \xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF"), "{out}");
    assert!(guides.contains(r#""10" sorts before "2""#), "{out}");
    // A key the guides find nothing wrong with says so.
    let out = keys(&[
        "--key",
        r##"pad(customer,12) "#" revts(ms,19) "#" pad(order_id,10)"##,
        "--writes",
        "500",
    ])?;
    assert!(out.contains("Long.MAX_VALUE - ts"), "{out}");
    assert!(!out.contains("sorts before \"2\""), "{out}");
    Ok(())
}

//! `cellar keys` driven as a process: the verdict, the plans, the exports,
//! the report file, and one-line errors for bad input.

use assert_cmd::cargo::cargo_bin_cmd;

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

fn keys(args: &[&str]) -> Result<String> {
    let output = cargo_bin_cmd!("cellar").arg("keys").args(args).output()?;
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
        out.contains("verdict: HOT SPOT: the busiest server (#0) took 100.0% of 3000 writes"),
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
    // Nothing loaded from the network: the only address is the SVG namespace.
    assert_eq!(html.matches("http").count(), 1);
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
    ] {
        let output = cargo_bin_cmd!("cellar").arg("keys").args(&args).output()?;
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8(output.stderr)?;
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"));
    }
    Ok(())
}

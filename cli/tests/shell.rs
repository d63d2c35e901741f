//! `cellar shell` driven with a script on stdin: the same commands and
//! switches as the command line, clap's messages whole, help per command.

mod common;
use common::{shell, switches_listed, Result};

#[test]
fn a_usage_error_is_printed_whole() -> Result {
    let tmp = tempfile::tempdir()?;
    let (code, stdout, stderr) = shell(tmp.path(), &["--family", "books"], "put books\n")?;
    assert_eq!(code, Some(1));
    assert_eq!(stdout, "");
    assert_eq!(
        stderr,
        "cellar: the following required arguments were not provided:\n\
         \x20 <ROW>\n\
         \x20 <COLUMN>\n\
         \x20 <VALUE>\n\
         \n\
         Usage: put <FAMILY> <ROW> <COLUMN> <VALUE>\n\
         \n\
         For more information, try '--help'.\n\
         cellar: 1 command(s) failed\n"
    );
    Ok(())
}

#[test]
fn put_help_and_help_put_show_the_options_of_put() -> Result {
    let tmp = tempfile::tempdir()?;
    let (code, stdout, stderr) = shell(tmp.path(), &["--family", "books"], "put --help\nhelp put\n")?;
    assert_eq!((code, stderr.as_str()), (Some(0), ""));
    let help = "Write one cell (timestamped now, or at --ts)\n\nUsage: put [OPTIONS] <FAMILY> <ROW> <COLUMN> <VALUE>\n";
    assert!(stdout.starts_with(help), "{stdout}");
    assert!(stdout.contains("--ts <TS>"), "{stdout}");
    assert!(
        stdout.contains("Timestamp: milliseconds since 1970 or an ISO 8601 date (default: now)"),
        "{stdout}"
    );
    // The same text twice: `help put` is `put --help`.
    let (first, second) = stdout.split_at(stdout.len() / 2);
    assert_eq!(first, second);
    Ok(())
}

#[test]
fn help_of_a_nested_command() -> Result {
    let tmp = tempfile::tempdir()?;
    let (code, stdout, _) = shell(tmp.path(), &["--family", "books"], "help explain slice\n")?;
    assert_eq!(code, Some(0));
    assert!(
        stdout.starts_with("A range of a row's columns\n\nUsage: explain slice"),
        "{stdout}"
    );
    Ok(())
}

#[test]
fn create_in_the_shell_takes_a_family_and_its_options() -> Result {
    let tmp = tempfile::tempdir()?;
    let script = "create --family loans --max-versions 3 --bloom-bits 12\nfamilies\n";
    let (code, stdout, stderr) = shell(tmp.path(), &["--family", "books"], script)?;
    assert_eq!((code, stderr.as_str()), (Some(0), ""));
    assert_eq!(
        stdout,
        format!(
            "store {} has families: books, loans\n\
             family  max versions  ttl  bloom bits  block size  tail copies  compression  compaction       settle at rest\n\
             books              1    -          10        4096  off          none         leveled, 4 runs  1s idle, 256 MiB, 3%\n\
             loans              3    -          12        4096  off          none         leveled, 4 runs  1s idle, 256 MiB, 3%\n\
             2 families\n",
            tmp.path().display()
        )
    );
    Ok(())
}

#[test]
fn a_switch_a_command_would_ignore_is_refused() -> Result {
    let tmp = tempfile::tempdir()?;
    let (code, stdout, stderr) = shell(tmp.path(), &["--family", "t"], "flush --json\nstats --json\n")?;
    assert_eq!(code, Some(1));
    assert!(stdout.contains("\"families\":[{"), "{stdout}");
    assert_eq!(
        stderr,
        "cellar: --json does not apply to `flush`\ncellar: 1 command(s) failed\n"
    );
    Ok(())
}

/// The global switches a help may list, as `--name`.
const GLOBAL_SWITCHES: &[&str] = &["--json", "--human", "--family", "--time"];

#[test]
fn help_lists_only_the_switches_the_command_accepts() -> Result {
    let tmp = tempfile::tempdir()?;
    let (code, stdout, stderr) = shell(tmp.path(), &["--family", "books"], "put --help\n")?;
    assert_eq!((code, stderr.as_str()), (Some(0), ""));
    // put refuses --json and --human: its help does not offer them.
    assert_eq!(
        switches_listed(&stdout, GLOBAL_SWITCHES),
        ["--family", "--time"],
        "{stdout}"
    );
    let (_, stdout, _) = shell(tmp.path(), &["--family", "books"], "help get\n")?;
    assert_eq!(
        switches_listed(&stdout, GLOBAL_SWITCHES),
        ["--json", "--human", "--family", "--time"],
        "{stdout}"
    );
    // Typed anyway, the switch is refused by name, not as an unknown argument.
    let (code, _, stderr) = shell(tmp.path(), &["--family", "books"], "put books b1 title Dune --json\n")?;
    assert_eq!(code, Some(1));
    assert_eq!(
        stderr,
        "cellar: --json does not apply to `put`\ncellar: 1 command(s) failed\n"
    );
    Ok(())
}

/// The commands of `cellar` that are not commands of its shell: each was
/// "unrecognized subcommand", with a tip naming a similar one (`repair`:
/// "a similar subcommand exists: 'explain'").
#[test]
fn a_command_of_cellar_that_the_shell_lacks_says_where_to_run_it() -> Result {
    let tmp = tempfile::tempdir()?;
    let script = "repair\nlesson layout\nkeys --key 'field(customer)'\nshell\nput books r c v\n";
    let (code, stdout, stderr) = shell(tmp.path(), &["--family", "books"], script)?;
    assert_eq!((code, stdout.as_str()), (Some(1), ""));
    let dir = tmp.path().display();
    assert_eq!(
        stderr,
        format!(
            "cellar: `repair` is not a shell command: it rebuilds a store that does not open; run \
             `cellar --dir {dir} repair` with this shell closed\n\
             cellar: `lesson` is not a shell command: run `cellar lesson` outside the shell\n\
             cellar: `keys` is not a shell command: run `cellar keys` outside the shell\n\
             cellar: `shell` is not a shell command: this is the shell\n\
             cellar: 4 command(s) failed\n"
        )
    );
    Ok(())
}

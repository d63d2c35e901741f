//! Help that lists only the switches a command accepts.
//!
//! `--json`, `--human`, `--dir`, `--family` and `--read-only` are global
//! switches: clap takes them after any subcommand, and lists them in the
//! help of every one. But a command refuses a switch it would ignore
//! (`--json does not apply to put`), and a help that offers what the
//! command then refuses misleads. clap gives a global switch to each
//! subcommand that has no argument of the same name, so a subcommand that
//! does not accept a switch gets a hidden copy of it here: its help leaves
//! the switch out, and the switch typed there still parses, to be refused
//! with the command's own message rather than clap's "unexpected argument".
//! Tab completion in the shell leaves out the hidden copies too.

use crate::store_cmds::Switch;

/// Each switch and the id of its global argument (the field's name).
const SWITCHES: [(Switch, &str); 5] = [
    (Switch::Json, "json"),
    (Switch::Human, "human"),
    (Switch::Dir, "dir"),
    (Switch::Family, "families"),
    (Switch::ReadOnly, "read_only"),
];

/// `command` with each global switch hidden in the subcommands that do not
/// accept it (`accepts(subcommand name, switch)`).
pub fn hide_unaccepted(mut command: clap::Command, accepts: impl Fn(&str, Switch) -> bool) -> clap::Command {
    let names: Vec<String> = command.get_subcommands().map(|s| s.get_name().to_string()).collect();
    for (switch, id) in SWITCHES {
        // The shell's line has no --dir and no --read-only.
        let Some(global) = command.get_arguments().find(|a| a.get_id() == id).cloned() else {
            continue;
        };
        for name in names.iter().filter(|name| !accepts(name, switch)) {
            let hidden = global.clone().hide(true);
            command = command.mut_subcommand(name, |sub| sub.arg(hidden));
        }
    }
    command
}

/// `command` with every argument that takes a value also taking a negative
/// number, in each subcommand: `put t r c -5` writes the value `-5`, as the
/// HBase shell's `put 't', 'r', 'c', '-5'` does, and `--limit -1` is refused
/// as a bad limit. clap otherwise reads `-5` as an unknown switch and
/// suggests `-- -5`, which a user of those tools does not expect. No switch
/// of `cellar` starts with a digit, so nothing else changes.
pub fn negative_numbers_as_values(command: clap::Command) -> clap::Command {
    command
        .mut_args(|arg| {
            if arg.get_action().takes_values() {
                arg.allow_negative_numbers(true)
            } else {
                arg
            }
        })
        .mut_subcommands(negative_numbers_as_values)
}

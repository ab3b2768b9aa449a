//! Options that some subcommands accept, through arguments they share, but do nothing with:
//! hidden from those subcommands' help, and refused with one line naming the option and what
//! to do instead. Main items: [`command`] (the command line with them hidden) and [`refusal`].

use clap::parser::ValueSource;
use clap::{ArgMatches, Command};

/// An option that does not apply to a subcommand, and why (`None`: the library refuses it
/// itself, with its own line, once it knows the rest of the hunt).
struct NotHere {
    /// The subcommand's path (`["hunt"]`, `["hypo", "add"]`).
    path: &'static [&'static str],
    /// The argument's id.
    arg: &'static str,
    /// The option as the user writes it.
    flag: &'static str,
    /// What the subcommand does instead, and what to give.
    why: Option<&'static str>,
}

const HUNT: &[&str] = &["hunt"];
const SUITE: &[&str] = &["suite"];

/// Every option a subcommand accepts and ignores.
const NOT_HERE: &[NotHere] = &[
    NotHere {
        path: HUNT,
        arg: "runs",
        flag: "--runs",
        why: Some("which plans its attempts as it goes: bound it with --budget DURATION, or give `flakehunt sweep --runs N`"),
    },
    NotHere {
        path: HUNT,
        arg: "jobs",
        flag: "--jobs",
        why: Some("which runs attempts side by side as far as its arms allow: give `flakehunt sweep --jobs J` for a fixed number"),
    },
    NotHere {
        path: HUNT,
        arg: "until_fails",
        flag: "--until-fails",
        why: Some("which stops once a failure is reproduced twice: give `flakehunt sweep --until-fails K` to stop at K failures"),
    },
    NotHere { path: SUITE, arg: "until_fails", flag: "--until-fails", why: None },
    NotHere { path: SUITE, arg: "fail_if", flag: "--fail-if", why: None },
    NotHere { path: SUITE, arg: "pass_if", flag: "--pass-if", why: None },
    NotHere { path: SUITE, arg: "expect_stdout", flag: "--expect-stdout", why: None },
    NotHere { path: SUITE, arg: "ignore", flag: "--ignore", why: None },
    NotHere { path: SUITE, arg: "oracle", flag: "--oracle", why: None },
    NotHere { path: SUITE, arg: "shell", flag: "--shell", why: None },
    NotHere { path: SUITE, arg: "command", flag: "a command after --", why: None },
    NotHere { path: &["report"], arg: "config", flag: "--config", why: Some(READS_NO_CONFIG) },
    NotHere { path: &["merge"], arg: "config", flag: "--config", why: Some(READS_NO_CONFIG) },
    NotHere { path: &["hypo", "add"], arg: "config", flag: "--config", why: Some(HYPO_CONFIG) },
    NotHere { path: &["hypo", "run"], arg: "config", flag: "--config", why: Some(HYPO_CONFIG) },
    NotHere { path: &["hypo", "list"], arg: "config", flag: "--config", why: Some(HYPO_CONFIG) },
    NotHere { path: &["dispatch", "github"], arg: "config", flag: "--config", why: Some(DISPATCH_CONFIG) },
    NotHere { path: &["dispatch", "k8s"], arg: "config", flag: "--config", why: Some(DISPATCH_CONFIG) },
    NotHere { path: &["completions"], arg: "config", flag: "--config", why: Some(GENERATED) },
    NotHere { path: &["man"], arg: "config", flag: "--config", why: Some(GENERATED) },
    NotHere { path: &["completions"], arg: "no_redact", flag: "--no-redact", why: Some(NO_SECRET) },
    NotHere { path: &["man"], arg: "no_redact", flag: "--no-redact", why: Some(NO_SECRET) },
    NotHere { path: &["profiles"], arg: "no_redact", flag: "--no-redact", why: Some(NO_SECRET) },
    NotHere { path: &["probe"], arg: "no_redact", flag: "--no-redact", why: Some(NO_SECRET) },
];

const READS_NO_CONFIG: &str = "which reads the record as its hunt wrote it and no configuration: drop it";
const HYPO_CONFIG: &str = "which reads no configuration: give it to the kill test's own command";
const DISPATCH_CONFIG: &str =
    "whose shards would run without it: give it to the dispatched hunt, after its kind (`sweep --config FILE ...`)";
const GENERATED: &str = "whose output comes from the command line's definition alone: drop it";
const NO_SECRET: &str = "which writes nothing that redaction would change: drop it";

/// The command line's definition, with the options that do not apply hidden from the help of
/// the subcommands that ignore them.
pub fn command(mut cmd: Command) -> Command {
    for rule in NOT_HERE {
        cmd = hide(cmd, rule.path, rule.arg);
    }
    cmd
}

/// Hides `arg` in the subcommand at `path`. A global option (`--config`, `--no-redact`) is
/// shadowed there by a hidden one of the same name, which clap then does not propagate.
fn hide(cmd: Command, path: &[&str], arg: &'static str) -> Command {
    match path {
        [] if cmd.get_arguments().any(|a| a.get_id() == arg) => cmd.mut_arg(arg, |a| a.hide(true)),
        [] => {
            let global = GLOBALS.iter().find(|g| g.0 == arg).unwrap_or_else(|| panic!("no option {arg}"));
            let shadow = clap::Arg::new(arg).long(global.1).hide(true);
            cmd.arg(if global.2 { shadow.value_name("FILE") } else { shadow.action(clap::ArgAction::SetTrue) })
        }
        [first, rest @ ..] => cmd.mut_subcommand(*first, |sub| hide(sub, rest, arg)),
    }
}

/// The global options: id, long name, and whether it takes a value.
const GLOBALS: &[(&str, &str, bool)] = &[("config", "config", true), ("no_redact", "no-redact", false)];

/// The line refusing an option given on the command line to a subcommand that ignores it.
pub fn refusal(matches: &ArgMatches) -> Option<String> {
    NOT_HERE.iter().find_map(|rule| {
        let why = rule.why?;
        // A global option counts wherever it was given on the way to the subcommand.
        let mut given = given(matches, rule.arg);
        let mut m = matches;
        for name in rule.path {
            m = match m.subcommand() {
                Some((n, sub)) if n == *name => sub,
                _ => return None,
            };
            given |= given_here(m, rule.arg);
        }
        given.then(|| format!("{} does not apply to `flakehunt {}`, {why}", rule.flag, rule.path.join(" ")))
    })
}

fn given(m: &ArgMatches, arg: &str) -> bool {
    GLOBALS.iter().any(|g| g.0 == arg) && given_here(m, arg)
}

fn given_here(m: &ArgMatches, arg: &str) -> bool {
    m.try_get_raw(arg).is_ok_and(|v| v.is_some()) && m.value_source(arg) == Some(ValueSource::CommandLine)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    fn refused(argv: &[&str]) -> Option<String> {
        refusal(&command(crate::cli::Cli::command()).try_get_matches_from(argv).unwrap())
    }

    #[test]
    fn every_rule_names_an_argument_of_its_subcommand() {
        let cmd = command(crate::cli::Cli::command());
        for rule in NOT_HERE {
            let sub = rule.path.iter().fold(&cmd, |c, n| c.find_subcommand(n).unwrap_or_else(|| panic!("no {n}")));
            let arg = sub.get_arguments().find(|a| a.get_id() == rule.arg);
            let arg = arg.unwrap_or_else(|| panic!("{:?} has no {}", rule.path, rule.arg));
            assert!(arg.is_hide_set(), "{} is listed in the help of {:?}", rule.flag, rule.path);
            if let Some(long) = arg.get_long() {
                assert_eq!(rule.flag, format!("--{long}"));
            }
        }
    }

    #[test]
    fn an_option_a_subcommand_ignores_is_refused_naming_it_and_what_to_give() {
        let line = refused(&["flakehunt", "hunt", "--runs", "5", "--", "true"]).unwrap();
        assert!(line.starts_with("--runs does not apply to `flakehunt hunt`, ") && line.contains("--budget"), "{line}");
        assert!(refused(&["flakehunt", "hunt", "-j", "2", "--", "true"]).unwrap().starts_with("--jobs does not apply"));
        assert!(refused(&["flakehunt", "hunt", "--until-fails=1", "--", "t"]).unwrap().starts_with("--until-fails"));
        let line = refused(&["flakehunt", "report", "--config", "f.toml", "rec"]).unwrap();
        assert!(line.starts_with("--config does not apply to `flakehunt report`"), "{line}");
        let line = refused(&["flakehunt", "--config", "f.toml", "hypo", "list"]).unwrap();
        assert!(line.starts_with("--config does not apply to `flakehunt hypo list`"), "{line}");
        assert!(refused(&["flakehunt", "man", "--no-redact"]).unwrap().starts_with("--no-redact does not apply"));
        // Where they apply, or left at their defaults, nothing is refused.
        assert_eq!(refused(&["flakehunt", "hunt", "--budget", "1m", "--", "true"]), None);
        assert_eq!(refused(&["flakehunt", "sweep", "--runs", "5", "-j", "2", "--until-fails", "1", "--", "t"]), None);
        assert_eq!(refused(&["flakehunt", "--config", "f.toml", "sweep", "--", "true"]), None);
        assert_eq!(refused(&["flakehunt", "--no-redact", "report", "rec"]), None);
        // The library refuses what a suite does not take, with its own line.
        assert_eq!(refused(&["flakehunt", "suite", "--until-fails", "2", "--pytest"]), None);
    }
}

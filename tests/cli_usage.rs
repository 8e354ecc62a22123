//! Usage errors and `--help`, with no cluster: the plugin run as a user runs it, `kubectl
//! dispatch ...` through the real kubectl with the fresh binary first on PATH, and a kubeconfig
//! whose one server is a loopback port nothing listens on. A usage error is decided before any
//! connection (exit 2, clap's two lines); a run that tried to connect would end with exit 1 and
//! `cannot reach the API server`, and fail these tests.

mod support;

use std::process::Command;

use support::{Run, UNREACHABLE_KUBECONFIG, with_kubeconfig};

/// `kubectl dispatch ARGS` with a kubeconfig whose server nothing answers at.
fn dispatch(args: &[&str]) -> Run {
    with_kubeconfig(UNREACHABLE_KUBECONFIG, args)
}

#[test]
fn usage_errors_exit_2_with_a_hint() {
    let run = dispatch(&["gate", "--bogus"]);
    run.expect_code(2);
    assert_eq!(
        run.stderr,
        "error: unexpected argument '--bogus' found\nSee 'kubectl dispatch gate --help' for usage.\n"
    );
    let run = dispatch(&["lease", "--lease", "no-slash"]);
    run.expect_code(2);
    assert!(run.stderr.starts_with("error: invalid value 'no-slash' for '--lease <NAMESPACE/NAME>'"), "{}", run.stderr);
    let run = dispatch(&["gate", "--request-timeout", "soon"]);
    run.expect_code(2);
    assert!(run.stderr.starts_with("error: invalid --request-timeout \"soon\""), "{}", run.stderr);
    let run = dispatch(&["gate", "-o", "bogus"]);
    run.expect_code(2);
}

/// Flags a verb does not use are usage errors (exit 2, clap's two lines), wherever they stand;
/// `--help` shows only what the verb uses.
#[test]
fn flags_a_verb_does_not_use_are_usage_errors() {
    // One error line, then the verb's own help, as kubectl points to `kubectl get --help`.
    let usage = |args: &[&str], first: &str| {
        let run = dispatch(args);
        run.expect_code(2);
        // clap's did-you-mean, when it has one, sits between the two.
        let lines: Vec<&str> = run.stderr.lines().filter(|l| !l.starts_with("tip: a similar")).collect();
        assert_eq!(lines.len(), 2, "{args:?}: {}", run.stderr);
        assert!(lines[0].starts_with(&format!("error: {first}")), "{args:?}: {}", run.stderr);
        let verb = args.iter().find(|a| ["gate", "lease", "workload", "doctor"].contains(a)).unwrap();
        assert_eq!(lines[1], format!("See 'kubectl dispatch {verb} --help' for usage."));
        assert!(run.stdout.is_empty(), "{}", run.stdout);
    };
    for flag in ["--cluster-queue", "--admission-check", "--controller-name"] {
        usage(&["lease", flag, "x"], &format!("unexpected argument '{flag}' found"));
    }
    usage(&["lease", "-A"], "unexpected argument '-A' found");
    usage(&["-A", "lease"], "lease reads one Lease: name it with NAME -n NAMESPACE");
    usage(&["lease", "x", "--lease", "a/b"], "the argument '[NAME]' cannot be used with");
    // --timeout bounds a live mode; alone it is said so. A negative one is refused (kubectl
    // wait reads it as a week), and --until names its values.
    usage(&["gate", "--timeout", "10s"], "--timeout needs --watch or --wait (without them gate reads once)");
    usage(&["lease", "--timeout", "10s"], "--timeout needs --watch (without it lease reads once)");
    for words in [&["gate", "--wait", "--timeout", "-1s"][..], &["lease", "--watch", "--timeout", "-1s"]] {
        usage(
            words,
            "invalid --timeout \"-1s\": a timeout is not negative (0 checks once; without --timeout it waits for ever)",
        );
    }
    usage(
        &["lease", "--watch", "--until", "bogus"],
        "invalid value 'bogus' for '--until <CONDITION>': possible values: fresh, stale, holder-change",
    );
    usage(&["gate", "--all-contexts", "--context", "admin"], "the argument '--all-contexts' cannot be used with");
    usage(&["--context", "admin", "gate", "--all-contexts"], "the argument '--all-contexts' cannot be used with");
    usage(&["lease", "-o", "prometheus"], "invalid value 'prometheus' for '--output <FORMAT>'");
    // Kueue's manager's Lease is followed only by the watch (the one-shot lease reads only dispatch's).
    usage(&["lease", "--kueue-lease", "kueue-system/x"], "the following required arguments were not provided:");
    usage(
        &["lease", "--watch", "--kueue-lease", "no-slash"],
        "invalid value 'no-slash' for '--kueue-lease <NAMESPACE/NAME>'",
    );

    // lease NAMESPACE/NAME, and a -n that contradicts it (kubectl get -f's words).
    usage(
        &["lease", "dispatch-system/x", "-n", "ml"],
        "the namespace from the provided object \"dispatch-system\" does not match the namespace \"ml\". You must pass '--namespace=dispatch-system' to perform this operation.",
    );
    usage(&["lease", "a/b/c"], "invalid Lease \"a/b/c\": name it NAME or NAMESPACE/NAME");
    // doctor's document names no object: no -o name, in its --help or on its command line.
    usage(
        &["doctor", "-o", "name"],
        "invalid value 'name' for '--output <FORMAT>': possible values: table, wide, json, yaml, jsonpath=",
    );
    let help = dispatch(&["doctor", "--help"]);
    assert!(!help.stdout.contains(" name,") && help.stdout.contains("jsonpath=TEMPLATE"), "{}", help.stdout);

    // --help shows what the verb uses.
    let help = dispatch(&["lease", "--help"]);
    help.expect_code(0);
    for foreign in ["--cluster-queue", "--admission-check", "--controller-name", "--all-namespaces"] {
        assert!(!help.stdout.contains(foreign), "lease --help shows {foreign}");
    }
    // Every verb's help has examples.
    for verb in ["gate", "lease", "workload", "doctor"] {
        let help = dispatch(&[verb, "--help"]);
        assert!(help.stdout.contains("\nExamples:\n  # "), "{verb} --help has no examples:\n{}", help.stdout);
    }
}

/// A mistyped verb or flag gets clap's did-you-mean, between the error and the verb's help.
#[test]
fn typos_get_did_you_mean() {
    let run = dispatch(&["gaet"]);
    run.expect_code(2);
    assert_eq!(
        run.stderr,
        "error: unrecognized subcommand 'gaet'\ntip: a similar subcommand exists: 'gate'\nSee 'kubectl dispatch --help' for usage.\n"
    );
    let run = dispatch(&["gate", "--all-namespace"]);
    run.expect_code(2);
    assert_eq!(
        run.stderr,
        "error: unexpected argument '--all-namespace' found\ntip: a similar argument exists: '--all-namespaces'\nSee 'kubectl dispatch gate --help' for usage.\n"
    );
}

/// `-o prometheus` is a one-shot exposition, with one `--all-contexts` or some `--context`s.
#[test]
fn prometheus_output_usage_errors() {
    // A one-shot exposition: no --watch or --wait.
    let run = dispatch(&["gate", "-o", "prometheus", "--wait"]);
    run.expect_code(2);
    assert!(run.stdout.is_empty() && run.stderr.starts_with("error: -o prometheus "), "{}", run.stderr);
    let clash = dispatch(&[
        "gate",
        "--controller-name",
        "dispatch-admission",
        "--lease",
        "dispatch-system/dispatch-admission",
        "--all-contexts",
        "--context",
        "admin",
    ]);
    clash.expect_code(2);
    assert!(clash.stderr.starts_with("error: the argument '--all-contexts' cannot be used with"), "{}", clash.stderr);
}

/// `workload NAME` names one Workload in one namespace; without NAME it lists them.
#[test]
fn workload_usage_errors() {
    // -A names no namespace: a usage error with a NAME, after the verb or before it.
    for words in [&["workload", "mine", "-A"][..], &["-A", "workload", "mine"], &["workloads", "-A", "mine"]] {
        let run = dispatch(words);
        run.expect_code(2);
        assert!(run.stderr.starts_with("error: a Workload is named in one namespace"), "{words:?}: {}", run.stderr);
        assert!(run.stderr.contains("'kubectl dispatch workloads -A'"), "{}", run.stderr);
    }
    // -l and --sort-by order a list: with a NAME there is none.
    let run = dispatch(&["workload", "mine", "--sort-by", ".name"]);
    run.expect_code(2);
    assert!(
        run.stderr.starts_with("error: the argument '[NAME]' cannot be used with '--sort-by <JSONPATH>'"),
        "{}",
        run.stderr
    );
    // Without NAME it lists them, as `kubectl get workloads`: valid usage, so it connects
    // (and here finds nothing listening).
    for words in [&["workload"][..], &["workloads", "-A"], &["-A", "workloads", "--sort-by", ".stage", "-l", "a=b"]] {
        let run = dispatch(words);
        run.expect_code(1);
        assert!(run.stderr.starts_with("error: cannot reach the API server"), "{words:?}: {}", run.stderr);
    }
}

/// Help as kubectl lays it out, side by side with the machine's kubectl: a verb's `--help` lists
/// its own flags and ends with kubectl's pointer line (the plugin's name in it), where `kubectl
/// get --help` ends with kubectl's; the connection flags are in neither. `kubectl dispatch
/// options` lists them as `kubectl options` lists kubectl's: the same heading, and each flag's
/// line (`    -s, --server='':`) the very line kubectl has for that flag. Every verb still takes
/// every one of them.
#[test]
fn help_points_at_options_as_kubectl_does() {
    let kubectl = |args: &[&str]| {
        let out = Command::new(support::kubectls::program()).args(args).output().unwrap();
        assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let pointer = |help: &str| help.trim_end().lines().last().unwrap_or_default().to_string();
    // A flag is listed where it starts a line (kubectl: `--as='':`, the plugin: `--as <USER>`);
    // an example may use one (`doctor --as alice`).
    let connection =
        ["--kubeconfig", "--context", "--token", "--as=", "--as ", "--request-timeout", "--user", "-v, --v"];
    let lists = |help: &str, flag: &str| help.lines().any(|l| l.trim_start().starts_with(flag));
    let theirs = kubectl(&["get", "--help"]);
    assert_eq!(
        pointer(&theirs),
        "Use \"kubectl options\" for a list of global command-line options (applies to all commands)."
    );
    assert!(connection.iter().all(|f| !lists(&theirs, f)), "kubectl get --help lists a global flag:\n{theirs}");
    assert!(lists(&theirs, "--sort-by="), "kubectl get --help lists its own flags:\n{theirs}");
    for verb in ["gate", "lease", "workload", "doctor", "completion"] {
        let ours = dispatch(&[verb, "--help"]);
        ours.expect_code(0);
        assert_eq!(
            pointer(&ours.stdout),
            pointer(&theirs).replace("\"kubectl options\"", "\"kubectl dispatch options\"")
        );
        for flag in connection {
            assert!(!lists(&ours.stdout, flag), "{verb} --help lists {flag}:\n{}", ours.stdout);
        }
        assert!(lists(&ours.stdout, "-h, --help"), "{}", ours.stdout);
    }
    let root = dispatch(&["--help"]);
    let their_root = kubectl(&["--help"]);
    let tail = |help: &str| help.trim_end().lines().rev().take(2).map(str::to_string).collect::<Vec<_>>();
    let want: Vec<String> = tail(&their_root).iter().map(|l| l.replace("kubectl ", "kubectl dispatch ")).collect();
    assert_eq!(tail(&root.stdout), want, "{}", root.stdout);

    let theirs = kubectl(&["options"]);
    let ours = dispatch(&["options"]);
    ours.expect_code(0);
    let heading = |t: &str| t.lines().next().unwrap_or_default().to_string();
    assert_eq!(heading(&ours.stdout), heading(&theirs));
    assert!(theirs.ends_with("\n\n") && ours.stdout.ends_with("\n\n"), "{}", ours.stdout);
    let flag_lines: Vec<&str> = ours.stdout.lines().filter(|l| l.starts_with("    -")).collect();
    assert!(flag_lines.len() >= 17, "{}", ours.stdout);
    for line in &flag_lines {
        assert!(theirs.lines().any(|l| l == *line), "kubectl options has no line {line:?}:\n{theirs}");
    }
    // Each flag line is followed by its help after a tab, then a blank line, as kubectl's.
    let lines: Vec<&str> = ours.stdout.lines().collect();
    for (i, _) in lines.iter().enumerate().filter(|(_, l)| l.starts_with("    -")) {
        assert!(lines[i + 1].starts_with('\t') && lines[i + 2].is_empty(), "{}", ours.stdout);
    }
    // Taken by every verb, before it or after it: these runs get as far as connecting.
    for words in [&["lease", "--request-timeout", "1s", "--as", "x"][..], &["--user", "x", "gate", "-v", "1"]] {
        let run = dispatch(words);
        run.expect_code(1);
        assert!(run.stderr.contains("cannot reach the API server"), "{words:?}: {}", run.stderr);
    }
}

/// `-h` and `--help` print the same page for every verb (`lease`'s differed: its `--until`
/// values carried descriptions, which clap shows only in the long help; completion keeps them).
#[test]
fn short_and_long_help_are_the_same_page() {
    for verb in ["gate", "lease", "workload", "workloads", "doctor", "options"] {
        let short = dispatch(&[verb, "-h"]);
        let long = dispatch(&[verb, "--help"]);
        short.expect_code(0);
        assert_eq!(short.stdout, long.stdout, "{verb} -h and {verb} --help differ");
    }
}

//! The duration flags: `--request-timeout` (kubectl's rule: bare seconds or a Go duration) and
//! the live modes' `--timeout`, through `parse_timeout` and through the command line as clap
//! and `resolve` read it. Any text is a duration or a usage error, never a panic; an accepted
//! one is within Go's range and can be added to the monotonic clock.

#![no_main]

use clap::Parser;
use kubectl_dispatch::cli::args::Cli;
use kubectl_dispatch::cli::resolve::{MAX_DURATION, parse_timeout, resolve};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(Some(d)) = parse_timeout(text) {
        assert!(d <= MAX_DURATION, "{text:?} gave {d:?}");
        assert!(std::time::Instant::now().checked_add(d).is_some(), "{text:?} gave {d:?}");
    }
    let request_timeout = format!("--request-timeout={text}");
    let timeout = format!("--timeout={text}");
    let runs: [&[&str]; 4] = [
        &["kubectl-dispatch", &request_timeout, "lease"],
        &["kubectl-dispatch", "lease", "--watch", &timeout],
        &["kubectl-dispatch", "gate", "--wait", &timeout],
        &["kubectl-dispatch", "gate", "--watch", &timeout, &request_timeout],
    ];
    for args in runs {
        if let Ok(cli) = Cli::try_parse_from(args) {
            let _ = resolve(cli);
        }
    }
});

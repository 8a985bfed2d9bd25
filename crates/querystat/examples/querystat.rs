//! A stand-in for `platscope db querystat` until the CLI is wired (the bench drives this):
//!
//!     querystat [INTERVAL [COUNT]] [--server postgres|mariadb] [--pid PID] [--exe PATH]
//!               [--by transaction] [--slower MS] [--buffer-hits] [--json]
//!
//! Exit codes as the CLI will use them: 2 for usage errors, 1 for runtime failures.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use querystat::{
    find_server, render_report, run, By, Options, RunOptions, Selector, ServerKind, Tracer,
};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn usage(msg: &str) -> ! {
    eprintln!("querystat: {msg}");
    eprintln!(
        "usage: querystat [INTERVAL [COUNT]] [--server postgres|mariadb] [--pid PID] [--exe PATH] \
         [--by transaction] [--slower MS] [--buffer-hits] [--json]"
    );
    std::process::exit(2)
}

fn main() {
    let mut selector = Selector::default();
    let mut options = Options::default();
    let mut run_options = RunOptions::default();
    let mut json = false;
    let mut positional = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value =
            |name: &str| args.next().unwrap_or_else(|| usage(&format!("{name} needs a value")));
        match arg.as_str() {
            "--server" => {
                selector.kind = Some(match value("--server").as_str() {
                    "postgres" | "postgresql" => ServerKind::Postgres,
                    "mariadb" | "mysql" => ServerKind::MariaDb,
                    other => usage(&format!("--server {other:?}: expected postgres or mariadb")),
                })
            }
            "--pid" => {
                selector.pid = Some(
                    value("--pid").parse().unwrap_or_else(|_| usage("--pid: expected a number")),
                )
            }
            "--exe" => selector.exe = Some(PathBuf::from(value("--exe"))),
            "--by" => {
                options.by = match value("--by").as_str() {
                    "transaction" => By::Transaction,
                    "query" => By::Query,
                    other => usage(&format!("--by {other:?}: expected query or transaction")),
                }
            }
            "--slower" => {
                let ms: f64 = value("--slower")
                    .parse()
                    .unwrap_or_else(|_| usage("--slower: expected milliseconds"));
                if !(ms.is_finite() && ms > 0.0) {
                    usage("--slower: expected a positive number of milliseconds");
                }
                options.slower = Some(Duration::from_secs_f64(ms / 1e3));
            }
            "--json" => json = true,
            "--buffer-hits" => options.buffer_hits = true,
            a if a.starts_with('-') => usage(&format!("unknown option {a}")),
            _ => positional.push(arg),
        }
    }
    if let Some(i) = positional.first() {
        let secs: f64 = i.parse().unwrap_or_else(|_| usage("INTERVAL: expected seconds"));
        if !(secs.is_finite() && secs > 0.0) {
            usage("INTERVAL must be positive");
        }
        run_options.interval = Duration::from_secs_f64(secs);
    }
    if let Some(c) = positional.get(1) {
        run_options.count = Some(c.parse().unwrap_or_else(|_| usage("COUNT: expected a number")));
    }

    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let result = querystat::preflight().and_then(|()| find_server(&selector)).and_then(|server| {
        eprintln!("querystat: tracing {}", server.describe());
        let tracer = Tracer::attach(&server, &options)?;
        let mut sink = std::io::sink();
        let mut stdout = std::io::stdout();
        let out: &mut dyn std::io::Write = if json { &mut sink } else { &mut stdout };
        run(&tracer, &run_options, &STOP, out)
    });
    match result {
        Ok(report) if json => match serde_json::to_string_pretty(&report) {
            Ok(text) => println!("{text}"),
            Err(e) => {
                eprintln!("querystat: {e}");
                std::process::exit(1)
            }
        },
        Ok(report) => print!("{}", render_report(&report)),
        Err(e) => {
            eprintln!("querystat: {e}");
            std::process::exit(if e.is_usage() { 2 } else { 1 })
        }
    }
}

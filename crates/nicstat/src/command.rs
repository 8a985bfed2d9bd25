//! `platscope net stat …` and the `nicstat` compat name: nicstat's flags, operands and
//! layouts. The loop: sample, print, sleep until the next interval (sub-second intervals
//! allowed); Ctrl-C or a closed pipe ends it after the last complete line.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use clap::{ArgAction, Args, Parser};
use experiment::output::write_out;
use experiment::{Format, Globals, Tool};
use measure::time::Stamp;
use measure::{stop, Classified, FsRoot};

use crate::render::{render_list, render_report, wire_note};
use crate::{parse_count, parse_interval, Monitor, Options, SpeedOverride};

/// nicstat: KB/s, packets/s, %Util and Sat per interface; -x errors, drops and softnet,
/// -t TCP, -u UDP, -l list (the same flags as the `nicstat` compat name).
#[derive(Debug, Clone, Args)]
pub struct NetStatArgs {
    /// Only these interfaces (comma-separated; may be repeated).
    #[arg(short = 'i', value_name = "IF[,IF...]", value_delimiter = ',', action = ArgAction::Append)]
    pub interfaces: Vec<String>,

    /// Speed in Mbit/s and duplex (fd, the default, or hd) of an interface, overriding what the
    /// kernel reports (comma-separated; may be repeated). Example: -S eth0:1000fd,eth1:100hd.
    #[arg(short = 'S', value_name = "IF:SPEED[fd|hd]", value_delimiter = ',', action = ArgAction::Append, value_parser = parse_speed)]
    pub speeds: Vec<SpeedOverride>,

    /// Extended output: errors, collisions, drops (separately), and softnet drops and squeezes
    /// per CPU.
    #[arg(short = 'x')]
    pub extended: bool,

    /// TCP statistics.
    #[arg(short = 't')]
    pub tcp: bool,

    /// UDP statistics.
    #[arg(short = 'u')]
    pub udp: bool,

    /// All: the same as -x -t -u.
    #[arg(short = 'a')]
    pub all: bool,

    /// List interfaces with loopback, speed (Mbit/s), duplex and state, then exit.
    #[arg(short = 'l')]
    pub list: bool,

    /// Print the version (with -l: also link type, MTU and where the speed came from).
    #[arg(short = 'v')]
    pub print_version: bool,

    /// Parseable output: one colon-separated line per interface, time in seconds since the
    /// epoch, throughput always in KB/s.
    #[arg(short = 'p')]
    pub parseable: bool,

    /// Throughput in Mbit/s (10^6 bits per second) instead of KB/s (1024 bytes per second).
    #[arg(short = 'M')]
    pub mbps: bool,

    /// Separate read and write utilization (%rUtil %wUtil).
    #[arg(short = 'U')]
    pub split_util: bool,

    /// Skip interfaces (and CPUs) with no traffic in the interval.
    #[arg(short = 'z')]
    pub skip_idle: bool,

    /// Only non-loopback interfaces.
    #[arg(short = 'n')]
    pub non_local: bool,

    /// Summary: read and written KB/s only.
    #[arg(short = 's')]
    pub summary: bool,

    /// Count Ethernet framing in %Util: 24 bytes per packet (preamble+SFD 8, FCS 4,
    /// inter-frame gap 12), which interface byte counters leave out.
    #[arg(long)]
    pub wire: bool,

    /// Seconds between samples; decimals allowed (0.1). Without it, one line of averages since
    /// boot.
    #[arg(value_name = "INTERVAL", value_parser = parse_interval, allow_negative_numbers = true)]
    pub interval: Option<Duration>,

    /// Number of lines to print, the first being averages since boot (default: until Ctrl-C).
    #[arg(value_name = "COUNT", value_parser = parse_count, allow_negative_numbers = true)]
    pub count: Option<u64>,
}

/// The standalone `nicstat` command line (the compat name), with platscope's `--json`.
#[derive(Debug, Parser)]
#[command(name = "nicstat", disable_version_flag = true)]
pub struct NicstatCli {
    /// Print one JSON object per sample (JSON Lines) instead of text.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub args: NetStatArgs,
}

fn parse_speed(text: &str) -> Result<SpeedOverride, measure::UsageError> {
    text.parse()
}

impl NetStatArgs {
    /// The library's options for these flags (`-a` is `-x -t -u`).
    pub fn options(&self) -> Options {
        Options {
            interfaces: self.interfaces.clone(),
            speeds: self.speeds.clone(),
            extended: self.extended || self.all,
            tcp: self.tcp || self.all,
            udp: self.udp || self.all,
            parseable: self.parseable,
            mbps: self.mbps,
            split_util: self.split_util,
            skip_idle: self.skip_idle,
            non_local: self.non_local,
            summary: self.summary,
            wire: self.wire,
        }
    }
}

/// `platscope net stat`.
#[derive(Debug)]
pub struct NetStat;

impl Tool for NetStat {
    const PATH: &'static [&'static str] = &["net", "stat"];
    const ABOUT: &'static str = "nicstat: KB/s, packets/s, %Util and Sat per interface; -x \
                                 errors, drops and softnet, -t TCP, -u UDP, -l list (the same \
                                 flags as the `nicstat` compat name)";
    type Args = NetStatArgs;

    fn run(args: &NetStatArgs, globals: &Globals) -> Result<(), Classified> {
        run(args, globals.format, globals.version)
    }
}

/// The `nicstat` compat name with its arguments (not including `argv[0]`); `version` is
/// platscope's, for `-v`.
pub fn compat(args: &[OsString], version: &str) -> Result<(), Classified> {
    match experiment::compat::parse::<NicstatCli>("nicstat", args)? {
        Some(cli) => {
            let format = if cli.json { Format::Json } else { Format::Text };
            run(&cli.args, format, version)
        }
        None => Ok(()),
    }
}

/// The version line for -v.
fn version_line(version: &str) -> String {
    format!("nicstat version 1.95-compatible (platscope {version})\n")
}

/// Runs the monitor: text in nicstat's layouts, or one JSON object per sample.
pub fn run(args: &NetStatArgs, format: Format, version: &str) -> Result<(), Classified> {
    if format == Format::Csv {
        return Err(Classified::usage(
            "net stat has no CSV form; use -p (nicstat's parseable lines) or --json",
        ));
    }
    let text = format == Format::Text;
    let opts = args.options();
    // Usage errors (unknown -i or -S interface) stay usage errors: exit status 2.
    let mut monitor = Monitor::new(FsRoot::live(), opts.clone())?;
    if args.print_version && text && !write_out(&version_line(version))? {
        return Ok(());
    }
    if args.list {
        let links =
            monitor.list().map_err(|e| Classified::from(e).context("listing interfaces"))?;
        let listed = match format {
            Format::Json => format!("{}\n", serde_json::to_string_pretty(&links)?),
            _ => render_list(&links, args.print_version),
        };
        write_out(&listed)?;
        return Ok(());
    }
    for note in monitor.take_notes() {
        measure::say!("nicstat: {note}");
    }
    if opts.wire && text {
        if opts.parseable {
            measure::say!("{}", wire_note());
        } else if !write_out(&format!("{}\n", wire_note()))? {
            return Ok(());
        }
    }

    let (interval, count) = match args.interval {
        None => (Duration::ZERO, 1),
        Some(interval) => (interval, args.count.unwrap_or(u64::MAX)),
    };
    let subsecond = interval > Duration::ZERO && interval < Duration::from_secs(1);
    stop::install();
    let start = Instant::now();
    for n in 0..count {
        if n > 0 {
            let due = start + interval.saturating_mul(u32::try_from(n).unwrap_or(u32::MAX));
            if !stop::sleep_until(due) {
                break;
            }
        }
        let report = monitor
            .next_report()
            .map_err(|e| Classified::from(e).context("sampling network counters"))?;
        // An interface that disappeared (or came back) is said, not left to a silent output.
        for note in monitor.take_notes() {
            measure::say!("nicstat: {note}");
        }
        let printed = match format {
            Format::Json => format!("{}\n", serde_json::to_string(&report)?),
            _ => {
                let header = n == 0 || monitor.selected_count() > 1;
                let stamp = Stamp::local(report.epoch_s, subsecond);
                render_report(&report, &opts, &stamp, header)
            }
        };
        if !write_out(&printed)? || stop::requested() {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<NicstatCli, clap::Error> {
        NicstatCli::try_parse_from(std::iter::once("nicstat").chain(args.iter().copied()))
    }

    #[test]
    fn nicstat_flags_parse() {
        let cli = parse(&[
            "-i",
            "eth0,lo",
            "-S",
            "eth0:1000fd",
            "-S",
            "lo:10hd,eth1:100",
            "-xtupMUzn",
            "--wire",
            "0.1",
            "5",
        ])
        .unwrap();
        let a = &cli.args;
        assert_eq!(a.interfaces, ["eth0", "lo"]);
        assert_eq!(a.speeds.len(), 3);
        assert!(
            a.extended && a.tcp && a.udp && a.parseable && a.mbps && a.split_util && a.skip_idle
        );
        assert!(a.non_local && a.wire);
        assert_eq!(a.interval, Some(Duration::from_millis(100)));
        assert_eq!(a.count, Some(5));
        let opts = parse(&["-a"]).unwrap().args.options();
        assert!(opts.extended && opts.tcp && opts.udp);
    }

    #[test]
    fn bad_operands_are_usage_errors() {
        for args in [
            &["0"][..],
            &["-1"],
            &["-0.5"],
            &["1", "0"],
            &["1", "-3"],
            &["abc"],
            &["-S", "eth0"],
            &["-S", "eth0:fast"],
            &["-S", "eth0:100xd"],
        ] {
            let err = parse(args).unwrap_err();
            assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation, "{args:?}: {err}");
        }
    }

    #[test]
    fn a_clap_error_becomes_one_line() {
        let err = parse(&["0"]).unwrap_err();
        let line = experiment::compat::clap_one_line(&err, "nicstat -h");
        assert!(!line.contains('\n'), "{line}");
        assert!(line.contains("greater than 0"), "{line}");
    }
}

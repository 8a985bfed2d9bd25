//! The exporter's commands: `platscope serve` and `platscope results textfile`.

use std::net::SocketAddr;
use std::path::PathBuf;

use experiment::{Globals, Tool};
use measure::{Classified, FsRoot};

use crate::collect::{self, Collector as _, Config};
use crate::{Exporter, Limits, Server, WebConfig};

/// `platscope serve` arguments.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address and port to listen on. Port 0 picks a free port (the address is printed on
    /// stderr). Anything but a loopback address exposes the metrics: add --web-config.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:9464")]
    pub listen: SocketAddr,

    /// Collectors to run at every scrape, comma-separated (default: every collector this build
    /// has). build_info and host_info are always answered.
    #[arg(long, value_name = "LIST")]
    pub collect: Option<String>,

    /// TLS and basic-auth settings in the Prometheus exporter-toolkit format node_exporter
    /// reads (tls_server_config, basic_auth_users with bcrypt hashes).
    #[arg(long, value_name = "FILE")]
    pub web_config: Option<PathBuf>,

    /// A process group for the `process` collector: NAME=comm:COMM, NAME=regex:RE or
    /// NAME=cgroup:PATH (repeat for more; first match wins). Without any, every process name
    /// is a group.
    #[arg(long = "group", value_name = "SPEC")]
    pub groups: Vec<String>,

    /// How many process groups are reported by name (the busiest); the rest are summed as
    /// `other`, so the number of series stays bounded.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub process_top: u64,

    /// How old (seconds) an interface's speed and duplex may be before the `nic` collector
    /// reads them again (0: at every scrape); each interface's between half of this and all of
    /// it, so they are not all read at one scrape. A change the kernel announces is read at the
    /// next scrape regardless, and counters at every scrape.
    #[arg(long, value_name = "SECONDS", default_value_t = collect::nic::LINK_FACTS_MAX_AGE.as_secs(), value_parser = clap::value_parser!(u64).range(0..=86400))]
    pub link_facts_max_age: u64,

    /// Most connections open at once. At the cap, the connection that has waited longest
    /// without sending its request is closed to make room (scrapers are not locked out by idle
    /// or slow clients); a line on stderr says so, at most every 10 s.
    #[arg(long, value_name = "N", default_value_t = crate::server::MAX_CONNECTIONS as u64, value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub max_connections: u64,
}

/// `platscope serve`: serves until Ctrl-C or SIGTERM.
#[derive(Debug)]
pub struct Serve;

impl Tool for Serve {
    const PATH: &'static [&'static str] = &["serve"];
    const ABOUT: &'static str = "Serve the figures as an OpenMetrics endpoint for Prometheus \
                                 (/metrics, computed at scrape time), on localhost unless \
                                 --listen says otherwise.";
    type Args = ServeArgs;

    fn run(args: &ServeArgs, globals: &Globals) -> Result<(), Classified> {
        let names = args.collect.as_deref().map(collect::parse_list).transpose()?;
        let web = args.web_config.as_deref().map(WebConfig::load).transpose()?;
        // Said once the address is bound: a bind that fails is the one line the user sees.
        let warning = match &web {
            _ if args.listen.ip().is_loopback() => None,
            None => Some(format!(
                "platscope serve: warning: listening on {} without --web-config: anyone who can \
                 reach this port reads the metrics",
                args.listen
            )),
            Some(web) if web.tls.is_none() && !web.users.is_empty() => Some(
                "platscope serve: warning: basic-auth passwords cross the network in clear text \
                 without tls_server_config"
                    .to_string(),
            ),
            Some(_) => None,
        };
        let groups = args
            .groups
            .iter()
            .map(|spec| collect::process::ProcessGroup::parse(spec))
            .collect::<Result<Vec<_>, _>>()?;
        let config = Config {
            root: FsRoot::live(),
            db: globals.store.db.clone(),
            revision: globals.revision.to_string(),
            process: collect::process::CollectorOptions { groups, top: args.process_top as usize },
            link_facts_max_age: std::time::Duration::from_secs(args.link_facts_max_age),
        };
        let collectors = collect::build(names.as_deref(), &config)?;
        crate::server::keep_freed_heap();
        let exporter = Exporter::new(collectors);
        let names = exporter.names().join(",");
        measure::stop::install();
        let limits = Limits { max_connections: args.max_connections as usize };
        let server = Server::bind(args.listen, exporter, web)?.with_limits(limits);
        if let Some(warning) = warning {
            measure::say!("{warning}");
        }
        measure::say!("platscope serve: serving on {} (collectors: {names})", server.url());
        server.run(measure::stop::flag())?;
        measure::say!("platscope serve: stopped by {}", measure::stop::cause());
        Ok(())
    }
}

/// The latest benchmark figures as a node_exporter textfile (text format 0.0.4), written to
/// DIR/platscope.prom through a temp file and a rename.
#[derive(Debug, clap::Args)]
pub struct TextfileArgs {
    /// node_exporter's textfile directory (its --collector.textfile.directory).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
}

/// `platscope results textfile --dir DIR`: the `bench` collector's families, as `serve` would
/// answer them, in node_exporter's textfile directory.
#[derive(Debug)]
pub struct Textfile;

impl Tool for Textfile {
    const PATH: &'static [&'static str] = &["results", "textfile"];
    const ABOUT: &'static str = "The latest benchmark figures as a node_exporter textfile (text \
                                 format 0.0.4), written to DIR/platscope.prom through a temp \
                                 file and a rename.";
    type Args = TextfileArgs;

    fn run(args: &TextfileArgs, globals: &Globals) -> Result<(), Classified> {
        let path = match &globals.store.db {
            Some(p) => p.clone(),
            None => results::default_path().ok_or_else(|| {
                Classified::usage(
                    "no HOME or XDG_DATA_HOME to find the results database; use --db PATH",
                )
            })?,
        };
        if !path.exists() {
            return Err(Classified::runtime(format!(
                "no results database at {}: run a measurement first, or give --db PATH",
                path.display()
            )));
        }
        // Opened once read-only to refuse a foreign or corrupt file before anything is written.
        drop(results::SqliteStore::open_read_only(&path)?);
        let collector = collect::bench::BenchCollector::new(Some(path));
        let mut families = Vec::new();
        collector.collect(&mut families)?;
        let path = crate::textfile::write(&args.dir, &families)?;
        let series: usize = families.iter().map(|f| f.samples.len()).sum();
        measure::say!("wrote {} ({series} series)", path.display());
        Ok(())
    }
}

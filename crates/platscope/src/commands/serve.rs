//! `platscope serve`: the OpenMetrics endpoint for Prometheus (crate `exporter`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::Args;
use exporter::collect::{self, Config};
use exporter::{Exporter, Server, WebConfig};
use measure::FsRoot;

/// `platscope serve` arguments.
#[derive(Debug, Args)]
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
}

/// Serves until Ctrl-C or SIGTERM.
pub fn run(args: &ServeArgs, db: Option<&Path>) -> anyhow::Result<()> {
    let names = args.collect.as_deref().map(collect::parse_list).transpose()?;
    let web = args.web_config.as_deref().map(WebConfig::load).transpose()?;
    if !args.listen.ip().is_loopback() {
        match &web {
            None => measure::say!(
                "platscope serve: warning: listening on {} without --web-config: anyone who can \
                 reach this port reads the metrics",
                args.listen
            ),
            Some(web) if web.tls.is_none() && !web.users.is_empty() => measure::say!(
                "platscope serve: warning: basic-auth passwords cross the network in clear text \
                 without tls_server_config"
            ),
            Some(_) => {}
        }
    }
    let groups = args
        .groups
        .iter()
        .map(|spec| collect::process::ProcessGroup::parse(spec))
        .collect::<Result<Vec<_>, _>>()?;
    let config = Config {
        root: FsRoot::live(),
        db: db.map(Path::to_path_buf),
        revision: env!("PLATSCOPE_GIT_HASH").to_string(),
        process: collect::process::CollectorOptions { groups, top: args.process_top as usize },
    };
    let collectors = collect::build(names.as_deref(), &config)?;
    let exporter = Exporter::new(collectors);
    let names = exporter.names().join(",");
    measure::stop::install();
    let server = Server::bind(args.listen, exporter, web)?;
    measure::say!("platscope serve: serving on {} (collectors: {names})", server.url());
    server.run(measure::stop::flag())?;
    measure::say!("platscope serve: stopped by {}", measure::stop::cause());
    Ok(())
}

//! Finding the database server in /proc, its process tree, and checking its binary has what
//! the tracer attaches to.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::elf;
use crate::error::{Error, Result};

/// Which database (the workspace's one kind: PostgreSQL is traced with its USDT probes,
/// MariaDB or MySQL's `mariadbd`/`mysqld` with uprobes).
pub use measure::database::ServerKind;

/// A running server: its top process (the postmaster, or mariadbd).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Server {
    /// The top process's PID.
    pub pid: u32,
    /// Which database.
    pub kind: ServerKind,
    /// The binary it runs (resolved from `/proc/PID/exe`).
    pub exe: PathBuf,
    /// The binary's `--version` line, e.g. "postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)".
    pub version: String,
}

impl Server {
    /// The path the probes are attached through: `/proc/PID/exe` (the same inode even if the
    /// package was upgraded and the file replaced since the server started).
    pub fn attach_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/exe", self.pid))
    }

    /// One line naming the server: "PostgreSQL 15.20, PID 1234, /usr/lib/postgresql/15/bin/postgres".
    pub fn describe(&self) -> String {
        format!(
            "{}, PID {}, {} ({})",
            self.kind.title(),
            self.pid,
            self.exe.display(),
            self.version
        )
    }
}

/// How the user chose the server (`--server`, `--pid`, `--exe`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    /// Only this kind (`--server postgres|mariadb`).
    pub kind: Option<ServerKind>,
    /// Exactly this process (`--pid`); a PostgreSQL backend leads to its postmaster.
    pub pid: Option<u32>,
    /// Only servers running this binary (`--exe`).
    pub exe: Option<PathBuf>,
}

/// One process as /proc shows it.
#[derive(Debug, Clone)]
struct Proc {
    pid: u32,
    ppid: u32,
    exe: Option<PathBuf>,
}

fn read_exe(pid: u32) -> Option<PathBuf> {
    let link = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    // A binary replaced (package upgrade) since the process started reads "... (deleted)".
    let text = link.to_string_lossy();
    Some(PathBuf::from(text.strip_suffix(" (deleted)").unwrap_or(&text)))
}

/// `(ppid, state)` from /proc/PID/stat.
fn read_stat(pid: u32) -> Option<(u32, char)> {
    let text = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    let stat = measure::procstat::parse_stat(&text).ok()?;
    Some((stat.ppid, char::from(stat.state)))
}

fn all_pids() -> Result<Vec<u32>> {
    let dir = std::fs::read_dir("/proc").map_err(Error::io("reading /proc"))?;
    Ok(dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect())
}

fn processes(with_exe: bool) -> Result<Vec<Proc>> {
    Ok(all_pids()?
        .into_iter()
        .filter_map(|pid| {
            let (ppid, _) = read_stat(pid)?;
            Some(Proc { pid, ppid, exe: if with_exe { read_exe(pid) } else { None } })
        })
        .collect())
}

/// True while `pid` exists and is not a zombie.
pub fn is_alive(pid: u32) -> bool {
    read_stat(pid).is_some_and(|(_, state)| state != 'Z' && state != 'X')
}

/// `pid` and every process descended from it, now.
pub fn process_tree(pid: u32) -> Result<Vec<u32>> {
    let procs = processes(false)?;
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for p in &procs {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut tree = vec![pid];
    let mut seen = HashSet::from([pid]);
    let mut i = 0;
    while i < tree.len() {
        for &c in children.get(&tree[i]).map(Vec::as_slice).unwrap_or_default() {
            if seen.insert(c) {
                tree.push(c);
            }
        }
        i += 1;
    }
    Ok(tree)
}

/// The version line a server binary prints for `--version`.
fn version_of(exe: &Path) -> String {
    match std::process::Command::new(exe).arg("--version").output() {
        Ok(out) if out.status.success() => {
            String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").trim().to_string()
        }
        _ => "version unknown".to_string(),
    }
}

/// The top server processes in `procs`: those running a server binary whose parent does not
/// run the same binary.
fn top_servers(procs: &[Proc]) -> Vec<(u32, ServerKind, PathBuf)> {
    let exe_of: HashMap<u32, &PathBuf> =
        procs.iter().filter_map(|p| Some((p.pid, p.exe.as_ref()?))).collect();
    let mut out: Vec<_> = procs
        .iter()
        .filter_map(|p| {
            let exe = p.exe.as_ref()?;
            let kind = ServerKind::from_binary(exe)?;
            (exe_of.get(&p.ppid) != Some(&exe)).then(|| (p.pid, kind, exe.clone()))
        })
        .collect();
    out.sort_by_key(|s| s.0);
    out
}

/// Finds the server to trace, as [`Selector`] asks.
pub fn find_server(selector: &Selector) -> Result<Server> {
    let procs = processes(true)?;
    if let Some(pid) = selector.pid {
        let Some(p) = procs.iter().find(|p| p.pid == pid) else {
            return Err(Error::NoProcess(pid));
        };
        let exe = p.exe.clone().unwrap_or_default();
        let kind = ServerKind::from_binary(&exe)
            .filter(|k| selector.kind.is_none_or(|want| want == *k))
            .ok_or_else(|| Error::NotAServer { pid, exe: exe.display().to_string() })?;
        // A PostgreSQL backend: walk up to its postmaster.
        let by_pid: HashMap<u32, &Proc> = procs.iter().map(|p| (p.pid, p)).collect();
        let mut top = pid;
        while let Some(parent) = by_pid.get(&top).and_then(|p| by_pid.get(&p.ppid)) {
            if parent.exe.as_ref() != Some(&exe) || parent.pid == top {
                break;
            }
            top = parent.pid;
        }
        let version = version_of(&exe);
        return Ok(Server { pid: top, kind, exe, version });
    }
    let (pid, kind, exe) = choose(top_servers(&procs), selector)?;
    let version = version_of(&exe);
    Ok(Server { pid, kind, exe, version })
}

/// The one server among `servers` the selector allows, or why there is none.
fn choose(
    mut servers: Vec<(u32, ServerKind, PathBuf)>,
    selector: &Selector,
) -> Result<(u32, ServerKind, PathBuf)> {
    if let Some(kind) = selector.kind {
        servers.retain(|s| s.1 == kind);
    }
    if let Some(exe) = &selector.exe {
        let wanted = std::fs::canonicalize(exe).unwrap_or_else(|_| exe.clone());
        servers.retain(|s| s.2 == wanted);
        if servers.is_empty() {
            return Err(Error::ExeNotRunning(exe.clone()));
        }
    }
    match servers.len() {
        0 => Err(Error::NoServer(selector.kind.map_or("PostgreSQL or MariaDB", ServerKind::title))),
        1 => Ok(servers.remove(0)),
        count => {
            let list = servers
                .iter()
                .map(|(pid, kind, exe)| {
                    format!("  {pid:>8}  {:<10}  {}", kind.title(), exe.display())
                })
                .collect::<Vec<_>>()
                .join("\n");
            Err(Error::SeveralServers { count, list })
        }
    }
}

/// PostgreSQL USDT probes the tracer needs (provider "postgresql").
pub const PG_PROBES: &[&str] = &[
    "query__execute__start",
    "query__execute__done",
    "query__start",
    "query__parse__start",
    "buffer__read__done",
    "smgr__md__read__done",
    "transaction__start",
    "transaction__commit",
    "transaction__abort",
];

/// MariaDB's `dispatch_command(enum_server_command, THD*, char*, uint, bool)`.
pub const MARIADB_DISPATCH: &str = "_Z16dispatch_command19enum_server_commandP3THDPcjb";
/// MariaDB's `Query_cache::send_result_to_client(THD*, char*, uint)`.
pub const MARIADB_QC_SEND: &str = "_ZN11Query_cache21send_result_to_clientEP3THDPcj";

/// Checks the server's binary has the probes (PostgreSQL) or symbols (MariaDB) needed,
/// saying which are missing and why.
pub fn check_traceable(server: &Server) -> Result<()> {
    let path = server.attach_path();
    let image =
        elf::Image::read(&path).map_err(Error::io(format!("reading {}", path.display())))?;
    let untraceable = |why: String| Error::Untraceable {
        exe: server.exe.clone(),
        version: server.version.clone(),
        why,
    };
    match server.kind {
        ServerKind::Postgres => {
            let missing: Vec<&str> =
                PG_PROBES.iter().copied().filter(|p| !image.has_usdt("postgresql", p)).collect();
            if !missing.is_empty() {
                return Err(untraceable(format!(
                    "it has no USDT probe(s) {} (PostgreSQL must be built with --enable-dtrace, \
                     as Debian's and PGDG's packages are)",
                    missing.join(", ")
                )));
            }
        }
        ServerKind::MariaDb => {
            let missing: Vec<&str> = [MARIADB_DISPATCH, MARIADB_QC_SEND]
                .into_iter()
                .filter(|s| !image.has_function(s))
                .collect();
            if !missing.is_empty() {
                return Err(untraceable(format!(
                    "its symbol table lacks {} (the binary is stripped of these symbols, or this \
                     version names them differently)",
                    missing.join(", ")
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: u32, ppid: u32, exe: &str) -> Proc {
        Proc { pid, ppid, exe: Some(PathBuf::from(exe)) }
    }

    #[test]
    fn top_servers_skip_backends_and_other_binaries() {
        let pg = "/usr/lib/postgresql/15/bin/postgres";
        let procs = vec![
            p(1, 0, "/sbin/init"),
            p(100, 1, pg),
            p(101, 100, pg),
            p(102, 100, pg),
            p(200, 1, "/usr/sbin/mariadbd"),
            p(300, 1, "/usr/bin/bash"),
            p(400, 300, pg),
        ];
        let tops: Vec<u32> = top_servers(&procs).iter().map(|s| s.0).collect();
        assert_eq!(tops, vec![100, 200, 400]);
        assert_eq!(top_servers(&procs)[1].1, ServerKind::MariaDb);
    }

    #[test]
    fn choosing_says_none_or_lists_several() {
        let pg = PathBuf::from("/usr/lib/postgresql/15/bin/postgres");
        let my = PathBuf::from("/usr/sbin/mariadbd");
        let both = vec![(100, ServerKind::Postgres, pg.clone()), (200, ServerKind::MariaDb, my)];
        let err = choose(vec![], &Selector::default()).unwrap_err();
        assert!(matches!(err, Error::NoServer(_)));
        assert!(err.to_string().starts_with("no PostgreSQL or MariaDB server is running"), "{err}");
        let err = choose(both.clone(), &Selector::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "2 database servers are running, choose one with --pid:\n       100  PostgreSQL  \
             /usr/lib/postgresql/15/bin/postgres\n       200  MariaDB     /usr/sbin/mariadbd"
        );
        assert!(err.is_usage());
        let mariadb = Selector { kind: Some(ServerKind::MariaDb), ..Selector::default() };
        assert_eq!(choose(both.clone(), &mariadb).unwrap().0, 200);
        let only_pg = vec![both[0].clone()];
        let err = choose(only_pg, &mariadb).unwrap_err();
        assert_eq!(err.to_string().split(" (").next().unwrap(), "no MariaDB server is running");
        let other_exe =
            Selector { exe: Some(PathBuf::from("/opt/pg16/bin/postgres")), ..Selector::default() };
        assert!(matches!(choose(both, &other_exe).unwrap_err(), Error::ExeNotRunning(_)));
    }

    #[test]
    fn kinds_from_binary_names() {
        assert_eq!(ServerKind::from_binary(Path::new("/x/postmaster")), Some(ServerKind::Postgres));
        assert_eq!(
            ServerKind::from_binary(Path::new("/usr/sbin/mysqld")),
            Some(ServerKind::MariaDb)
        );
        assert_eq!(ServerKind::from_binary(Path::new("/usr/bin/psql")), None);
    }

    #[test]
    fn own_tree_contains_self_and_children() {
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let tree = process_tree(std::process::id()).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(tree[0], std::process::id());
        assert!(tree.contains(&child.id()));
    }
}

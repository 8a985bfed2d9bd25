//! Passwords on a command line never reach the results store — not in the stored
//! argv, not in `results show`, not in the file's bytes — and a new store is its owner's alone.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use test_tier::live;

use test_support::{command, platscope, text};
use testdb::{PgOptions, Postgres};

fn stored_runs(db: &str) -> Vec<serde_json::Value> {
    let out = platscope(&["results", "list", "--db", db, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let ids: Vec<String> = list
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["id"].as_i64().expect("id").to_string())
        .collect();
    ids.iter()
        .map(|id| {
            let out = platscope(&["results", "show", id, "--db", db, "--json"]);
            assert!(out.status.success(), "{}", text(&out.stderr));
            serde_json::from_slice(&out.stdout).expect("json")
        })
        .collect()
}

fn argv(run: &serde_json::Value) -> Vec<String> {
    run["parameters"]["argv"]
        .as_array()
        .expect("argv stored")
        .iter()
        .map(|w| w.as_str().expect("text").to_string())
        .collect()
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// Two inputs whose names are a PostgreSQL URL and a libpq conninfo with passwords (files are
/// the one argument every user can put any text in): the stored argv has `***` where each
/// password was, and `results show` prints none; the new store file is 0600.
#[test]
fn a_stored_runs_argv_has_no_password() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = "postgresql://app:UrlPw7x@db1/orders";
    let conninfo = "host=db1 password=KeyPw7x dbname=orders";
    for name in [url, conninfo] {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
        std::fs::write(&path, vec![7u8; 100_000]).expect("input");
    }
    let db = dir.path().join("store/results.db").display().to_string();
    let out = command()
        .current_dir(dir.path())
        .args(["--db", &db, "compress", "--discard", "-t", "1", url, conninfo])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", text(&out.stderr));

    let runs = stored_runs(&db);
    assert_eq!(runs.len(), 2, "one run per input");
    for run in &runs {
        let words = argv(run);
        assert!(words.contains(&"postgresql://app:***@db1/orders".to_string()), "{words:?}");
        assert!(words.contains(&"host=db1 password=*** dbname=orders".to_string()), "{words:?}");
        assert!(!words.iter().any(|w| w.contains("UrlPw7x") || w.contains("KeyPw7x")), "{words:?}");
    }
    // `results show` prints the command line redacted (the compress result itself names its
    // input file, which is the input's name, not a credential of this run).
    let shown = platscope(&["results", "show", "1", "--db", &db]);
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    let shown = text(&shown.stdout);
    let line = shown.lines().find(|l| l.starts_with("command line:")).expect("command line shown");
    assert!(line.contains("app:***@db1") && line.contains("password=***"), "{line}");
    assert!(!line.contains("UrlPw7x") && !line.contains("KeyPw7x"), "{line}");
    let mode = |p: &Path| std::fs::metadata(p).expect("exists").permissions().mode() & 0o777;
    assert_eq!(mode(Path::new(&db)), 0o600, "a new store is its owner's alone");
    assert_eq!(mode(&dir.path().join("store")), 0o700);
}

/// `load --url` with a password, against a real PostgreSQL (trust authentication ignores the
/// password, so the run goes through): no byte of it reaches the store.
#[live]
fn load_with_a_password_stores_none_of_it() {
    let pg = Postgres::start(&PgOptions::default()).expect("PostgreSQL starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("results.db").display().to_string();
    let secret = "LoadPw7x";
    let url = format!("{} password={secret}", pg.conninfo());
    let prep = platscope(&[
        "--no-store",
        "load",
        "prepare",
        "--server",
        "postgres",
        "--url",
        &url,
        "--tables",
        "1",
        "--rows",
        "100",
    ]);
    assert!(prep.status.success(), "{}", text(&prep.stderr));
    let out = platscope(&[
        "--db",
        &db,
        "load",
        "--server",
        "postgres",
        "--url",
        &url,
        "--rate",
        "20",
        "--duration",
        "1",
        "--workload",
        "read-only",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let runs = stored_runs(&db);
    assert!(!runs.is_empty(), "the run is stored");
    let words = argv(&runs[0]);
    assert!(words.iter().any(|w| w.ends_with("password=***")), "{words:?}");
    for file in ["results.db", "results.db-wal"] {
        let bytes = std::fs::read(dir.path().join(file)).unwrap_or_default();
        assert!(!contains(&bytes, secret), "{file} holds the password");
    }
    let shown = platscope(&["results", "show", "1", "--db", &db]);
    assert!(!contains(&shown.stdout, secret), "{}", text(&shown.stdout));
}

/// `load --rate 50 --transactions 5` against `target` (connection flags), with `env` set and
/// `HOME`/`PGPASSFILE` pointing at `home` unless `env` says otherwise.
fn load_with(home: &Path, target: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = command();
    cmd.env_remove("PGPASSWORD").env_remove("PGPASSFILE").env_remove("MYSQL_PWD");
    cmd.env("HOME", home);
    cmd.envs(env.iter().copied());
    cmd.args(["--no-store", "load"]).args(target).args(["--rate", "50", "--transactions", "5"]);
    cmd.output().expect("runs")
}

/// A PostgreSQL role that needs a password (scram over TCP): without one the run is refused;
/// `PGPASSWORD`, or a 0600 password file (`PGPASSFILE`, `~/.pgpass`) gives it; a password file
/// others can read is named with the fix; MariaDB takes `MYSQL_PWD` and `~/.my.cnf`.
#[live]
fn passwords_come_from_the_environment_and_password_files() {
    let pg = Postgres::start(&PgOptions::default()).expect("PostgreSQL starts");
    pg.sql("CREATE ROLE app LOGIN PASSWORD 'EnvPw7x'; CREATE TABLE sbtest1 (id int primary key, k int, c text, pad text); GRANT SELECT ON sbtest1 TO app; INSERT INTO sbtest1 SELECT g, g, 'c', 'p' FROM generate_series(1, 100) g")
        .expect("role");
    let hba = pg.data_dir().join("pg_hba.conf");
    std::fs::write(&hba, "local all platscope trust\nhost all app 127.0.0.1/32 scram-sha-256\n")
        .expect("hba");
    pg.sql("SELECT pg_reload_conf()").expect("reload");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let home = tempfile::tempdir().expect("home");
    let url = format!("host=127.0.0.1 port={} user=app dbname=postgres", pg.port());
    let target = ["--server", "postgres", "--url", url.as_str()];

    let out = load_with(home.path(), &target, &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "no password anywhere: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");

    let out = load_with(home.path(), &target, &[("PGPASSWORD", "EnvPw7x")]);
    assert!(out.status.success(), "PGPASSWORD: {}", text(&out.stderr));
    assert!(text(&out.stdout).contains("5 completed"), "{}", text(&out.stdout));

    let pgpass = home.path().join(".pgpass");
    let line = format!("# test\n127.0.0.1:{}:*:app:EnvPw7x\n", pg.port());
    std::fs::write(&pgpass, &line).expect("pgpass");
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let out = load_with(home.path(), &target, &[]);
    assert!(out.status.success(), "~/.pgpass: {}", text(&out.stderr));
    let elsewhere = home.path().join("passfile");
    std::fs::rename(&pgpass, &elsewhere).expect("move");
    let passfile = elsewhere.display().to_string();
    let out = load_with(home.path(), &target, &[("PGPASSFILE", &passfile)]);
    assert!(out.status.success(), "PGPASSFILE: {}", text(&out.stderr));
    std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let out = load_with(home.path(), &target, &[("PGPASSFILE", &passfile)]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("chmod 0600") && err.contains(&passfile), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // A wrong password in the environment is the server's refusal, one line, and never printed.
    let out = load_with(home.path(), &target, &[("PGPASSWORD", "WrongPw7x")]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("WrongPw7x"), "{err}");

    let maria = testdb::MariaDb::start(&testdb::MariaDbOptions::default()).expect("MariaDB starts");
    maria
        .sql("CREATE DATABASE platscope; CREATE TABLE platscope.sbtest1 (id int primary key, k int, c text, pad text); INSERT INTO platscope.sbtest1 VALUES (1,1,'c','p'),(2,2,'c','p'); CREATE USER app@localhost IDENTIFIED BY 'MyPw7x'; GRANT SELECT ON platscope.* TO app@localhost")
        .expect("user");
    let socket = maria.socket().display().to_string();
    let target = ["--server", "mariadb", "--socket", socket.as_str()];
    let as_app = ["--server", "mariadb", "--socket", socket.as_str(), "--user", "app"];
    let out = load_with(home.path(), &as_app, &[]);
    assert_eq!(out.status.code(), Some(1), "no password: {}", text(&out.stderr));
    let out = load_with(home.path(), &as_app, &[("MYSQL_PWD", "MyPw7x")]);
    assert!(out.status.success(), "MYSQL_PWD: {}", text(&out.stderr));
    // ~/.my.cnf names the user and its password: no flag or variable needed.
    std::fs::write(
        home.path().join(".my.cnf"),
        "[mysqld]\nuser=mysql\n[client]\nuser = app\npassword = \"MyPw7x\"\n",
    )
    .expect("my.cnf");
    let out = load_with(home.path(), &target, &[]);
    assert!(out.status.success(), "~/.my.cnf: {}", text(&out.stderr));
    assert!(text(&out.stdout).contains("as app"), "{}", text(&out.stdout));
}

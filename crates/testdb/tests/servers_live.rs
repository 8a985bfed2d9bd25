//! Both servers start, answer SQL, and are gone (process and files) after drop. Root only:
//! these fail, with the reason, when not run as root.

use test_tier::live;
use testdb::{MariaDb, MariaDbOptions, PgOptions, Postgres};

fn require_root() {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(euid, 0, "these tests start database servers: run them as root");
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[live]
fn postgres_starts_answers_and_is_removed_root() {
    require_root();
    let pg = Postgres::start(&PgOptions::default().setting("autovacuum", "off")).unwrap();
    let pid = pg.pid();
    let dir = pg.data_dir().to_path_buf();
    assert_eq!(pg.sql("SELECT 6 * 7").unwrap(), "42");
    assert_eq!(pg.sql("SHOW fsync").unwrap(), "off");
    assert_eq!(pg.sql("SHOW autovacuum").unwrap(), "off");
    assert!(std::fs::read_link(format!("/proc/{pid}/exe")).unwrap().ends_with("postgres"));
    let err = pg.sql("SELECT * FROM no_such_table").unwrap_err();
    assert!(err.to_string().contains("no_such_table"), "{err}");
    drop(pg);
    assert!(!alive(pid), "postmaster {pid} still running after drop");
    assert!(!dir.exists());
}

#[live]
fn mariadb_starts_with_query_cache_and_is_removed_root() {
    require_root();
    let db = MariaDb::start(&MariaDbOptions::default().query_cache(16 << 20)).unwrap();
    let pid = db.pid();
    let dir = db.data_dir().to_path_buf();
    assert_eq!(db.sql("SELECT 6 * 7").unwrap(), "42");
    assert_eq!(db.sql("SELECT @@query_cache_type").unwrap(), "ON");
    assert_eq!(db.sql("SELECT @@query_cache_size").unwrap(), (16u64 << 20).to_string());
    let before = db.status("Queries").unwrap();
    db.sql("SELECT 1").unwrap();
    assert!(db.status("Queries").unwrap() > before);
    drop(db);
    assert!(!alive(pid), "mariadbd {pid} still running after drop");
    assert!(!dir.exists());
}

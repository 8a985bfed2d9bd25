//! The fleet reader's tables in a real PostgreSQL 15 (live tier, root: `testdb` starts a
//! throwaway cluster): the same round trip, order, filter and idempotence as the SQLite file,
//! a read in batches larger than one, and a connection lost in the middle of a read.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use test_tier::live;

use results::{FleetFilter, FleetStore, HeadlineFigure, PgStore, ReportFigures, StoreError};
use testdb::{PgOptions, Postgres};

fn report(uuid: &str, host: &str, day: u32, kernel: &str) -> ReportFigures {
    let facts: BTreeMap<String, String> = [("CPU model", "Example CPU"), ("Kernel", kernel)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let figure = |name: &str, median: f64| HeadlineFigure {
        area: "Memory".into(),
        name: name.into(),
        metric: format!("mem_latency{{figure={name}}}"),
        unit: "ns".into(),
        median,
        p25: median - 1.0,
        p75: median + 1.0,
        samples: 21,
    };
    ReportFigures {
        uuid: uuid.into(),
        host: host.into(),
        recorded_at: format!("2026-11-{day:02}T03:00:00.000Z"),
        version: "0.1.0 (git abc)".into(),
        facts,
        facts_digest: String::new(),
        figures: vec![figure("idle DRAM latency", 100.0 + f64::from(day)), figure("L1", 1.25)],
    }
}

fn count(pg: &Postgres, sql: &str) -> usize {
    pg.sql(sql).expect("psql").trim().parse().expect("a count")
}

fn url(pg: &Postgres) -> String {
    format!("postgresql://platscope@127.0.0.1:{}/postgres", pg.port())
}

#[live("starts PostgreSQL 15 (root), about 3 s")]
fn figures_round_trip_through_postgresql_as_through_sqlite() {
    let pg = Postgres::start(&PgOptions::default()).expect("PostgreSQL starts");
    let mut store = PgStore::connect(&url(&pg)).unwrap();
    let all = vec![
        report("u-b2", "beta", 2, "6.1.0"),
        report("u-a1", "alpha", 1, "6.1.0"),
        report("u-b3", "beta-2", 3, "6.12.1"),
        report("u-a2", "alpha", 2, "6.1.0"),
    ];
    assert_eq!(store.record_many_report_figures(&all).unwrap(), 4);
    assert_eq!(store.record_many_report_figures(&all).unwrap(), 0, "idempotent by UUID");
    assert!(!store.record_report_figures(&all[0]).unwrap());
    assert_eq!(count(&pg, "SELECT count(*) FROM fleet_reports"), 4);
    assert_eq!(count(&pg, "SELECT count(*) FROM fleet_figures"), 8);
    assert_eq!(count(&pg, "SELECT count(*) FROM fleet_facts"), 2);
    assert_eq!(count(&pg, "SELECT count(*) FROM fleet_headlines"), 2);

    // A second connection (another host's push) reads what the first wrote, in order.
    let reader = PgStore::connect(&url(&pg)).unwrap();
    let back = reader.all_report_figures(&FleetFilter::default()).unwrap();
    let order: Vec<&str> = back.iter().map(|r| r.uuid.as_str()).collect();
    assert_eq!(order, ["u-a1", "u-a2", "u-b2", "u-b3"], "by host, then time");
    for r in &back {
        let mut expected = all.iter().find(|o| o.uuid == r.uuid).unwrap().clone();
        expected.facts_digest = expected.digest();
        assert_eq!(r, &expected);
    }
    // The same filter as in SQLite: globs without regard to case, a half-open time window.
    let filter = FleetFilter {
        since: Some("2026-11-02".into()),
        until: Some("2026-11-03".into()),
        hosts: vec!["BETA*".into(), "alph?".into()],
    };
    let kept: Vec<String> =
        reader.all_report_figures(&filter).unwrap().into_iter().map(|r| r.uuid).collect();
    assert_eq!(kept, ["u-a2", "u-b2"]);
}

#[live("starts PostgreSQL 15 (root), about 5 s")]
fn a_read_spans_batches_and_a_lost_connection_is_one_line_naming_the_store() {
    let pg = Postgres::start(&PgOptions::default()).expect("PostgreSQL starts");
    let store = PgStore::connect(&url(&pg)).unwrap();
    // 50 000 reports of 200 hosts, two figures each, made by the server: more than two of the
    // reader's batches.
    pg.sql(
        "INSERT INTO fleet_facts VALUES ('d', '{\"Kernel\": \"6.1.0\"}');
         INSERT INTO fleet_headlines (area, name, metric, unit) VALUES
             ('Memory', 'idle DRAM latency', 'mem_latency{}', 'ns'), ('CPU', 'timer', 't', 'ns');
         INSERT INTO fleet_reports (uuid, host, recorded_at, version, facts_digest)
             SELECT 'u' || i, 'host-' || lpad((i % 200)::text, 3, '0'),
                    to_char(timestamp '2026-01-01' + (i / 200) * interval '1 hour',
                            'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), 'v', 'd'
             FROM generate_series(1, 50000) i;
         INSERT INTO fleet_figures SELECT id, p - 1, p, id, id, id, 5
             FROM fleet_reports, generate_series(1, 2) p;",
    )
    .expect("fills");
    let mut previous: Option<(String, String)> = None;
    let mut figures = 0;
    let n = store
        .report_figures(&FleetFilter::default(), &mut |r| {
            let key = (r.host.clone(), r.recorded_at.clone());
            assert!(previous.as_ref().is_none_or(|p| *p <= key), "{previous:?} then {key:?}");
            assert_eq!(r.facts["Kernel"], "6.1.0");
            figures += r.figures.len();
            previous = Some(key);
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!((n, figures), (50_000, 100_000));

    // The server ends the reader's connection after the first report: the read fails on one
    // line naming the store, having given only what it read.
    let mut given = 0;
    let lost = store
        .report_figures(&FleetFilter::default(), &mut |_| {
            if given == 0 {
                pg.sql(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE application_name = 'platscope'",
                )
                .expect("terminates");
            }
            given += 1;
            ControlFlow::Continue(())
        })
        .unwrap_err();
    assert!(matches!(lost, StoreError::Remote { .. }), "{lost:?}");
    let text = lost.to_string();
    assert!(text.contains(&format!("127.0.0.1:{}", pg.port())) && !text.contains('\n'), "{text}");
    assert!(given < 50_000, "{given}");
}

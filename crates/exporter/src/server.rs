//! The HTTP side of `platscope serve`: `GET /metrics` collects every configured collector at
//! scrape time and answers in the format the scraper's `Accept` asks for.
//!
//! Concurrency is bounded: one thread per open connection, at most
//! [`Limits::max_connections`] of them, each reading its request under the bounds of
//! [`crate::http`] (16 KiB head, one 5 s deadline); at most [`WORKERS`] collections run at once,
//! so scrapes arriving while one is in progress wait their turn. At the cap, the connection that
//! has waited longest without sending a request is closed to make room: idle or trickling
//! clients cannot lock scrapers out.

use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::collect::Collector;
use crate::error::ServeError;
use crate::http::{self, Conn, Head, ReadError, Status};
use crate::web::Auth;
use crate::{negotiate, render, Family, Format, Kind, Unit};

/// Scrapes collected at the same time, at most.
pub const WORKERS: usize = 4;

/// How often the accept loop looks at the stop flag.
const POLL: Duration = Duration::from_millis(100);

/// The collectors of one `serve`, asked at every scrape.
#[derive(Debug)]
pub struct Exporter {
    collectors: Vec<Box<dyn Collector>>,
}

impl Exporter {
    /// An exporter over these collectors (scraped in this order).
    pub fn new(collectors: Vec<Box<dyn Collector>>) -> Self {
        Exporter { collectors }
    }

    /// The collectors' names, in scrape order.
    pub fn names(&self) -> Vec<&'static str> {
        self.collectors.iter().map(|c| c.name()).collect()
    }

    /// Collects every collector, then adds how long each took and whether it succeeded. A
    /// failing collector's partial families are dropped; the others answer.
    pub fn gather(&self) -> Vec<Family> {
        let mut out = Vec::new();
        let mut duration = Family::new(
            "platscope_scrape_duration_seconds",
            Kind::Gauge,
            Some(Unit::Seconds),
            "How long each collector took in this scrape.",
        );
        let mut success = Family::new(
            "platscope_scrape_collector_success",
            Kind::Gauge,
            None,
            "1 if the collector answered in this scrape, 0 if it failed (its error is in serve's log).",
        );
        for collector in &self.collectors {
            let name = collector.name();
            let start = Instant::now();
            let before = out.len();
            // A panicking collector must not take a worker thread (and the pool) with it.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                collector.collect(&mut out)
            }));
            let ok = match result {
                Ok(Ok(())) => true,
                Ok(Err(e)) => {
                    out.truncate(before);
                    measure::say!("platscope serve: scrape: {e}");
                    false
                }
                Err(_) => {
                    out.truncate(before);
                    measure::say!("platscope serve: scrape: the {name} collector panicked");
                    false
                }
            };
            duration.push(&[("collector", name)], start.elapsed().as_secs_f64());
            success.push(&[("collector", name)], if ok { 1.0 } else { 0.0 });
        }
        out.push(duration);
        out.push(success);
        out
    }

    /// One scrape's body in the format `accept` asks for.
    pub fn scrape(&self, accept: Option<&str>) -> (Format, String) {
        let format = negotiate(accept);
        (format, render(&self.gather(), format))
    }
}

/// Asks the C allocator to keep freed memory for the next scrape. A scrape of 1,000
/// interfaces builds and frees a few MB; with glibc's defaults the freed top of the heap and
/// every large buffer go back to the kernel at once, and the next scrape faults the same pages
/// in again (a fifth of a scrape's CPU time in perf). What is kept is bounded by one scrape's
/// peak (per connection thread's arena), not by the number of scrapes.
pub fn keep_freed_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const KEEP: libc::c_int = 256 << 20;
        // SAFETY: mallopt only changes glibc's thresholds; called before the threads that
        // allocate for scrapes start. A refused setting (returns 0) leaves the defaults.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
            libc::mallopt(libc::M_TRIM_THRESHOLD, KEEP);
        }
    }
}

/// Limits that hold `serve` against hostile or broken clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most connections open at once. At the cap, the connection that has waited longest
    /// without sending its whole request is closed to make room for the new one.
    pub max_connections: usize,
}

/// The default cap on open connections.
pub const MAX_CONNECTIONS: usize = 64;

impl Default for Limits {
    fn default() -> Self {
        Limits { max_connections: MAX_CONNECTIONS }
    }
}

/// The socket the server accepts on: TCP, or the private Unix socket behind the TLS front end.
enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

/// One accepted connection.
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn try_clone(&self) -> std::io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }

    fn shutdown(&self, how: Shutdown) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(how),
            Stream::Unix(s) => s.shutdown(how),
        };
    }

    fn conn(&mut self) -> &mut dyn Conn {
        match self {
            Stream::Tcp(s) => s,
            Stream::Unix(s) => s,
        }
    }

    fn set_write_timeout(&self, timeout: Duration) {
        let _ = match self {
            Stream::Tcp(s) => s.set_write_timeout(Some(timeout)),
            Stream::Unix(s) => s.set_write_timeout(Some(timeout)),
        };
    }
}

impl Listener {
    fn fd(&self) -> i32 {
        match self {
            Listener::Tcp(l) => l.as_raw_fd(),
            Listener::Unix(l) => l.as_raw_fd(),
        }
    }

    fn set_nonblocking(&self) -> std::io::Result<()> {
        match self {
            Listener::Tcp(l) => l.set_nonblocking(true),
            Listener::Unix(l) => l.set_nonblocking(true),
        }
    }

    fn accept(&self) -> std::io::Result<Stream> {
        let stream = match self {
            Listener::Tcp(l) => Stream::Tcp(l.accept()?.0),
            Listener::Unix(l) => Stream::Unix(l.accept()?.0),
        };
        // Accepted sockets inherit nothing from the non-blocking listener on Linux, but say so.
        match &stream {
            Stream::Tcp(s) => s.set_nonblocking(false)?,
            Stream::Unix(s) => s.set_nonblocking(false)?,
        }
        Ok(stream)
    }

    /// Waits up to `timeout` for a connection to accept.
    fn wait(&self, timeout: Duration) {
        let mut fd = libc::pollfd { fd: self.fd(), events: libc::POLLIN, revents: 0 };
        let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: `fd` is one valid pollfd for the duration of the call.
        unsafe { libc::poll(&mut fd, 1, ms) };
    }
}

/// One open connection as the accept loop sees it.
struct Slot {
    id: u64,
    since: Instant,
    /// Still waiting for its request (or draining after a refusal): may be closed to make room.
    waiting: bool,
    /// A second handle on the socket, to shut it down from the accept loop.
    handle: Stream,
}

/// The open connections and the cap's log state.
struct Table {
    next: u64,
    open: Vec<Slot>,
    /// When the cap was last reported, and how many connections it closed or refused since.
    reported: Option<Instant>,
    unreported: u64,
}

/// Connections and the gate on collections, shared by the accept loop and connection threads.
struct Shared {
    table: Mutex<Table>,
    exporter: Exporter,
    auth: Option<Arc<Auth>>,
    /// Collections in progress (at most [`WORKERS`]).
    busy: Mutex<usize>,
    freed: Condvar,
}

/// How often the cap is reported at most.
const REPORT_EVERY: Duration = Duration::from_secs(10);

impl Shared {
    fn set_waiting(&self, id: u64, waiting: bool) {
        if let Ok(mut table) = self.table.lock() {
            if let Some(slot) = table.open.iter_mut().find(|s| s.id == id) {
                slot.waiting = waiting;
            }
        }
    }

    fn close(&self, id: u64) {
        if let Ok(mut table) = self.table.lock() {
            table.open.retain(|s| s.id != id);
        }
    }

    /// Runs `f` once fewer than [`WORKERS`] collections are in progress.
    fn collect<T>(&self, f: impl FnOnce() -> T) -> T {
        if let Ok(mut busy) = self.busy.lock() {
            while *busy >= WORKERS {
                busy = match self.freed.wait(busy) {
                    Ok(b) => b,
                    Err(_) => return f(),
                };
            }
            *busy += 1;
        }
        let out = f();
        if let Ok(mut busy) = self.busy.lock() {
            *busy = busy.saturating_sub(1);
        }
        self.freed.notify_one();
        out
    }
}

/// A bound, not yet serving HTTP server.
pub struct Server {
    listener: Listener,
    addr: SocketAddr,
    exporter: Exporter,
    auth: Option<Arc<Auth>>,
    scheme: &'static str,
    limits: Limits,
    /// The TLS front end, when the web configuration asks for TLS.
    tls: Option<crate::web::TlsFront>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("addr", &self.addr).field("scheme", &self.scheme).finish()
    }
}

impl Server {
    /// Binds `addr` (port 0: the kernel picks one; [`Server::local_addr`] says which).
    pub fn bind(
        addr: SocketAddr,
        exporter: Exporter,
        web: Option<crate::web::WebConfig>,
    ) -> Result<Self, ServeError> {
        let listener = TcpListener::bind(addr).map_err(|error| {
            let hint = match error.kind() {
                std::io::ErrorKind::AddrInUse => {
                    " (another process listens there; pick another port with --listen)"
                }
                std::io::ErrorKind::AddrNotAvailable => {
                    " (no interface of this host has that address)"
                }
                std::io::ErrorKind::PermissionDenied => " (ports below 1024 need root)",
                _ => "",
            };
            ServeError::Bind { addr, error, hint }
        })?;
        let local = listener.local_addr().map_err(|e| ServeError::Http(e.to_string()))?;
        let (auth, tls) = match web {
            Some(web) => {
                let auth = web.auth().map(Arc::new);
                (auth, web.into_tls())
            }
            None => (None, None),
        };
        let (listener, tls, scheme) = match tls {
            None => (Listener::Tcp(listener), None, "http"),
            Some(config) => {
                // TLS is terminated in front of the HTTP server, which then listens on a
                // private Unix socket.
                let (unix, front) = crate::web::TlsFront::start(listener, config)?;
                (Listener::Unix(unix), Some(front), "https")
            }
        };
        listener.set_nonblocking().map_err(|e| ServeError::Http(format!("listener: {e}")))?;
        Ok(Server { listener, addr: local, exporter, auth, scheme, limits: Limits::default(), tls })
    }

    /// The same server with these limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR/metrics` or `https://…`.
    pub fn url(&self) -> String {
        format!("{}://{}/metrics", self.scheme, self.addr)
    }

    /// Serves until `stop` is set. One thread per open connection, at most
    /// [`Limits::max_connections`]; collections run at most [`WORKERS`] at a time.
    pub fn run(self, stop: &'static AtomicBool) -> Result<(), ServeError> {
        let max = self.limits.max_connections.max(1);
        let shared = Arc::new(Shared {
            table: Mutex::new(Table { next: 0, open: Vec::new(), reported: None, unreported: 0 }),
            exporter: self.exporter,
            auth: self.auth,
            busy: Mutex::new(0),
            freed: Condvar::new(),
        });
        while !stop.load(Ordering::Relaxed) {
            let stream = match self.listener.accept() {
                Ok(stream) => stream,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    self.listener.wait(POLL);
                    continue;
                }
                Err(e) => {
                    // Out of descriptors and the like: say so, then let the others finish.
                    measure::say!("platscope serve: accepting a connection: {e}");
                    std::thread::sleep(POLL);
                    continue;
                }
            };
            let Some(id) = admit(&shared, &stream, max) else { continue };
            let conn_shared = Arc::clone(&shared);
            let spawned = std::thread::Builder::new().name("serve-conn".into()).spawn(move || {
                serve_connection(stream, id, &conn_shared);
                conn_shared.close(id);
            });
            if spawned.is_err() {
                shared.close(id);
            }
        }
        if let Ok(table) = shared.table.lock() {
            for slot in &table.open {
                slot.handle.shutdown(Shutdown::Both);
            }
        }
        if let Some(tls) = self.tls {
            tls.stop();
        }
        Ok(())
    }
}

/// Registers a new connection, making room at the cap by closing the connection that has
/// waited longest for its request; `None` when it cannot be admitted (it is then dropped).
fn admit(shared: &Shared, stream: &Stream, max: usize) -> Option<u64> {
    let handle = stream.try_clone().ok()?;
    let mut table = shared.table.lock().ok()?;
    let mut admitted = true;
    if table.open.len() >= max {
        let oldest = table
            .open
            .iter()
            .enumerate()
            .filter(|(_, s)| s.waiting)
            .min_by_key(|(_, s)| s.since)
            .map(|(i, _)| i);
        match oldest {
            Some(i) => table.open.swap_remove(i).handle.shutdown(Shutdown::Both),
            None => admitted = false,
        }
        table.unreported += 1;
        let due = table.reported.is_none_or(|at| at.elapsed() >= REPORT_EVERY);
        if due {
            measure::say!(
                "platscope serve: {max} connections open (--max-connections): closing the ones \
                 that wait longest without sending a request ({} since the last report)",
                table.unreported
            );
            table.reported = Some(Instant::now());
            table.unreported = 0;
        }
    }
    if !admitted {
        return None;
    }
    table.next += 1;
    let id = table.next;
    table.open.push(Slot { id, since: Instant::now(), waiting: true, handle });
    Some(id)
}

/// Reads one request within the head deadline, answers it, closes.
fn serve_connection(mut stream: Stream, id: u64, shared: &Shared) {
    stream.set_write_timeout(http::WRITE_TIMEOUT);
    let deadline = Instant::now() + http::HEAD_DEADLINE;
    match http::read_request(stream.conn(), deadline) {
        Ok(head) => {
            shared.set_waiting(id, false);
            let _ = handle(&head, stream.conn(), shared);
            stream.shutdown(Shutdown::Write);
        }
        Err(ReadError::Gone) => {}
        Err(ReadError::Refuse(status)) => {
            shared.set_waiting(id, false);
            let refused = http::refuse(stream.conn(), status);
            stream.shutdown(Shutdown::Write);
            shared.set_waiting(id, true);
            if refused.is_ok() {
                http::linger(stream.conn());
            }
        }
    }
}

/// Answers one request. Authentication comes first: without it, nothing but 401.
fn handle(head: &Head, conn: &mut dyn Conn, shared: &Shared) -> std::io::Result<()> {
    let head_only = head.method == "HEAD";
    if let Some(auth) = &shared.auth {
        if !auth.allows(head.header("Authorization")) {
            return http::respond(
                conn,
                Status::UNAUTHORIZED,
                &[("WWW-Authenticate", "Basic realm=\"platscope\"")],
                b"401 Unauthorized\n",
                head_only,
            );
        }
    }
    let get = head.method == "GET" || head_only;
    match (get, head.path()) {
        (true, "/metrics") => {
            let (format, body) = shared.collect(|| shared.exporter.scrape(head.header("Accept")));
            http::respond(
                conn,
                Status::OK,
                &[("Content-Type", format.content_type())],
                body.as_bytes(),
                head_only,
            )
        }
        (true, "/") => http::respond(
            conn,
            Status::OK,
            &[("Content-Type", "text/html; charset=utf-8")],
            INDEX.as_bytes(),
            head_only,
        ),
        (false, "/" | "/metrics") => {
            http::respond(conn, Status::METHOD_NOT_ALLOWED, &[], b"405 Method Not Allowed\n", false)
        }
        _ => http::respond(conn, Status::NOT_FOUND, &[], b"404 Not Found\n", head_only),
    }
}

const INDEX: &str = "<!DOCTYPE html>\n<html><head><title>platscope</title></head><body>\n\
<h1>platscope</h1>\n<p><a href=\"/metrics\">/metrics</a></p>\n</body></html>\n";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::CollectError;

    #[derive(Debug)]
    struct Failing;
    impl Collector for Failing {
        fn name(&self) -> &'static str {
            "failing"
        }
        fn collect(&self, out: &mut Vec<Family>) -> Result<(), CollectError> {
            out.push(Family::new("platscope_half", Kind::Gauge, None, "x"));
            Err(CollectError { collector: "failing", message: "no such file".into() })
        }
    }

    #[derive(Debug)]
    struct Panicking;
    impl Collector for Panicking {
        fn name(&self) -> &'static str {
            "panicking"
        }
        #[allow(clippy::panic)]
        fn collect(&self, _: &mut Vec<Family>) -> Result<(), CollectError> {
            panic!("collector bug")
        }
    }

    #[test]
    fn a_failing_collector_does_not_fail_the_scrape() {
        let exporter = Exporter::new(vec![
            Box::new(Failing),
            Box::new(Panicking),
            Box::new(crate::collect::info::Info::new(&crate::collect::Config::default())),
        ]);
        let (format, body) = exporter.scrape(None);
        assert_eq!(format, Format::OpenMetrics);
        assert!(body.contains("platscope_scrape_collector_success{collector=\"failing\"} 0\n"));
        assert!(body.contains("platscope_scrape_collector_success{collector=\"info\"} 1\n"));
        assert!(body.contains("platscope_scrape_collector_success{collector=\"panicking\"} 0\n"));
        assert!(body.contains("platscope_scrape_duration_seconds{collector=\"info\"} "));
        assert!(body.contains("platscope_build_info{"));
        assert!(!body.contains("platscope_half"));
        assert!(body.ends_with("# EOF\n"));
    }
}

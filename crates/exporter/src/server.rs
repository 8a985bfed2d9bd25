//! The HTTP side of `platscope serve`: `GET /metrics` collects every configured collector at
//! scrape time and answers in the format the scraper's `Accept` asks for.
//!
//! Concurrency is bounded: tiny_http reads requests on its own connection threads and queues
//! them; a fixed pool of [`WORKERS`] threads takes them off the queue, so scrapes arriving while
//! one is in progress wait their turn instead of each spawning a collection of its own.

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tiny_http::{Header, Method, Request, Response};

use crate::collect::Collector;
use crate::web::Auth;
use crate::{negotiate, render, Family, Format, Kind, Unit};

/// Request-handling threads: scrapes collected at the same time, at most.
pub const WORKERS: usize = 4;

/// How often an idle worker looks at the stop flag.
const POLL: Duration = Duration::from_millis(100);

/// What can go wrong starting or running the server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listening address is in use, not on this host, or not permitted.
    #[error("cannot listen on {addr}: {error}{hint}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The OS error (not a `source`: the message already says it once).
        error: std::io::Error,
        /// A hint naming the fix.
        hint: &'static str,
    },
    /// The web configuration file is wrong (a usage error naming the field).
    #[error("{0}")]
    WebConfig(String),
    /// The HTTP server failed.
    #[error("HTTP server: {0}")]
    Http(String),
}

impl ServeError {
    /// True when the user can fix it by changing the command line or the config file.
    pub fn is_usage(&self) -> bool {
        match self {
            ServeError::Bind { error, .. } => error.kind() == std::io::ErrorKind::AddrNotAvailable,
            ServeError::WebConfig(_) => true,
            ServeError::Http(_) => false,
        }
    }
}

impl measure::Usage for ServeError {
    fn is_usage(&self) -> bool {
        ServeError::is_usage(self)
    }
}

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

/// A bound, not yet serving HTTP server.
pub struct Server {
    http: Arc<tiny_http::Server>,
    addr: SocketAddr,
    exporter: Arc<Exporter>,
    auth: Option<Arc<Auth>>,
    scheme: &'static str,
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
        let (http, tls, scheme) = match tls {
            None => {
                let http = tiny_http::Server::from_listener(listener, None)
                    .map_err(|e| ServeError::Http(e.to_string()))?;
                (http, None, "http")
            }
            Some(config) => {
                // TLS is terminated in front of tiny_http, which then listens on a private
                // Unix socket: tiny_http's own TLS cannot verify client certificates.
                let (http, front) = crate::web::TlsFront::start(listener, config)?;
                (http, Some(front), "https")
            }
        };
        Ok(Server {
            http: Arc::new(http),
            addr: local,
            exporter: Arc::new(exporter),
            auth,
            scheme,
            tls,
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR/metrics` or `https://…`.
    pub fn url(&self) -> String {
        format!("{}://{}/metrics", self.scheme, self.addr)
    }

    /// Serves until `stop` is set, then returns once the workers are done.
    pub fn run(self, stop: &'static AtomicBool) -> Result<(), ServeError> {
        let mut workers = Vec::with_capacity(WORKERS);
        for n in 0..WORKERS {
            let http = Arc::clone(&self.http);
            let exporter = Arc::clone(&self.exporter);
            let auth = self.auth.clone();
            let worker = std::thread::Builder::new()
                .name(format!("serve-{n}"))
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        match http.recv_timeout(POLL) {
                            Ok(Some(request)) => handle(request, &exporter, auth.as_deref()),
                            Ok(None) => {}
                            Err(e) => {
                                measure::say!("platscope serve: {e}");
                                std::thread::sleep(POLL);
                            }
                        }
                    }
                })
                .map_err(|e| ServeError::Http(format!("starting a worker thread: {e}")))?;
            workers.push(worker);
        }
        for worker in workers {
            let _ = worker.join();
        }
        if let Some(tls) = self.tls {
            tls.stop();
        }
        Ok(())
    }
}

fn header(name: &str, value: &str) -> Option<Header> {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).ok()
}

fn request_header<'r>(request: &'r Request, name: &'static str) -> Option<&'r str> {
    request.headers().iter().find(|h| h.field.equiv(name)).map(|h| h.value.as_str())
}

/// Answers one request. Authentication comes first: without it, nothing but 401.
fn handle(request: Request, exporter: &Exporter, auth: Option<&Auth>) {
    if let Some(auth) = auth {
        if !auth.allows(request_header(&request, "Authorization")) {
            let mut response = Response::from_string("401 Unauthorized\n").with_status_code(401);
            if let Some(h) = header("WWW-Authenticate", "Basic realm=\"platscope\"") {
                response.add_header(h);
            }
            let _ = request.respond(response);
            return;
        }
    }
    let path = request.url().split('?').next().unwrap_or("");
    let get = matches!(request.method(), Method::Get | Method::Head);
    let response = match (get, path) {
        (true, "/metrics") => {
            let (format, body) = exporter.scrape(request_header(&request, "Accept"));
            // The whole body is at hand: always a Content-Length, never chunked (tiny_http
            // chunks bodies over 32 KiB by default), which every scraper and script reads.
            let mut response = Response::from_string(body).with_chunked_threshold(usize::MAX);
            if let Some(h) = header("Content-Type", format.content_type()) {
                response.add_header(h);
            }
            response
        }
        (true, "/") => {
            let mut response = Response::from_string(INDEX);
            if let Some(h) = header("Content-Type", "text/html; charset=utf-8") {
                response.add_header(h);
            }
            response
        }
        (false, "/" | "/metrics") => {
            Response::from_string("405 Method Not Allowed\n").with_status_code(405)
        }
        _ => Response::from_string("404 Not Found\n").with_status_code(404),
    };
    let _ = request.respond(response);
}

const INDEX: &str = "<!DOCTYPE html>\n<html><head><title>platscope</title></head><body>\n\
<h1>platscope</h1>\n<p><a href=\"/metrics\">/metrics</a></p>\n</body></html>\n";

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may unwrap
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

//! `--web-config FILE`: TLS and basic authentication in the format node_exporter and the
//! Prometheus exporter toolkit read, so a fleet's existing files work unchanged:
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: server.crt
//!   key_file: server.key
//!   client_auth_type: RequireAndVerifyClientCert   # optional
//!   client_ca_file: ca.crt                         # optional
//! basic_auth_users:
//!   alice: $2y$10$...bcrypt...
//! ```
//!
//! Relative paths are relative to the file's directory, as in the toolkit. Unknown fields are
//! refused by name rather than ignored (a misspelt `client_auth_type` must not silently serve
//! without client certificates).
//!
//! TLS is terminated by [`TlsFront`] in front of the HTTP server: the public listener speaks
//! TLS and hands the plain bytes to the HTTP server on a
//! Unix socket in a private (0700) directory.

use std::collections::{BTreeMap, HashSet};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, ServerConnection};
use serde::Deserialize;

use crate::error::ServeError;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileFormat {
    tls_server_config: Option<TlsFile>,
    basic_auth_users: Option<BTreeMap<String, String>>,
    http_server_config: Option<HttpFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsFile {
    cert_file: Option<PathBuf>,
    key_file: Option<PathBuf>,
    client_auth_type: Option<String>,
    client_ca_file: Option<PathBuf>,
    min_version: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpFile {
    http2: Option<bool>,
}

/// Whether and how clients must show a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// `NoClientCert` (the default).
    None,
    /// `VerifyClientCertIfGiven`: a certificate is optional, but one given must verify.
    VerifyIfGiven,
    /// `RequireAndVerifyClientCert`: no verified certificate, no connection.
    RequireAndVerify,
}

/// The TLS part of a web configuration, files resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// The server's certificate chain (PEM).
    pub cert_file: PathBuf,
    /// Its private key (PEM).
    pub key_file: PathBuf,
    /// Client certificate policy.
    pub client_auth: ClientAuth,
    /// CA certificates client certificates must chain to.
    pub client_ca_file: Option<PathBuf>,
    /// `TLS13` to refuse TLS 1.2.
    pub tls13_only: bool,
}

/// A parsed `--web-config` file.
#[derive(Debug)]
pub struct WebConfig {
    /// TLS, when configured.
    pub tls: Option<TlsSettings>,
    /// `user → bcrypt hash`.
    pub users: BTreeMap<String, String>,
    tls_config: Option<Arc<ServerConfig>>,
}

fn bad(path: &Path, message: impl std::fmt::Display) -> ServeError {
    ServeError::WebConfig(format!("--web-config {}: {message}", path.display()))
}

impl WebConfig {
    /// Reads and checks the file: fields, bcrypt hashes, and (for TLS) that the certificate,
    /// key and CA files load.
    pub fn load(path: &Path) -> Result<Self, ServeError> {
        let text = std::fs::read_to_string(path).map_err(|e| bad(path, e))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let mut config = Self::parse(&text, base).map_err(|m| bad(path, m))?;
        if let Some(tls) = &config.tls {
            config.tls_config = Some(server_config(tls).map_err(|m| bad(path, m))?);
        }
        Ok(config)
    }

    /// Parses the YAML text; relative file names are taken relative to `base`. Files are not
    /// opened here.
    pub fn parse(text: &str, base: &Path) -> Result<Self, String> {
        let file: FileFormat = if text.trim().is_empty() {
            FileFormat { tls_server_config: None, basic_auth_users: None, http_server_config: None }
        } else {
            // The parser quotes the file's text back (a key with a line break in it): the
            // error stays one line.
            serde_yaml::from_str(text).map_err(|e| e.to_string().replace('\n', "\\n"))?
        };
        if let Some(HttpFile { http2: Some(true) }) = file.http_server_config {
            return Err(
                "http_server_config.http2: HTTP/2 is not supported (set it to false)".into()
            );
        }
        let tls = match file.tls_server_config {
            None => None,
            Some(t) => {
                let resolve = |p: PathBuf| if p.is_absolute() { p } else { base.join(p) };
                let cert_file =
                    t.cert_file.map(resolve).ok_or("tls_server_config.cert_file is missing")?;
                let key_file =
                    t.key_file.map(resolve).ok_or("tls_server_config.key_file is missing")?;
                let client_auth = match t.client_auth_type.as_deref() {
                    None | Some("NoClientCert") => ClientAuth::None,
                    Some("VerifyClientCertIfGiven") => ClientAuth::VerifyIfGiven,
                    Some("RequireAndVerifyClientCert") => ClientAuth::RequireAndVerify,
                    Some(other @ ("RequestClientCert" | "RequireAnyClientCert")) => {
                        return Err(format!(
                            "tls_server_config.client_auth_type: {other} (accepting unverified \
                             certificates) is not supported; use RequireAndVerifyClientCert or \
                             VerifyClientCertIfGiven"
                        ))
                    }
                    Some(other) => {
                        return Err(format!(
                            "tls_server_config.client_auth_type: unknown value {other:?} \
                             (NoClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert)"
                        ))
                    }
                };
                let client_ca_file = t.client_ca_file.map(resolve);
                if client_auth != ClientAuth::None && client_ca_file.is_none() {
                    return Err("tls_server_config.client_ca_file is required when \
                                client_auth_type verifies client certificates"
                        .into());
                }
                let tls13_only = match t.min_version.as_deref() {
                    None | Some("TLS12") => false,
                    Some("TLS13") => true,
                    Some(other) => {
                        return Err(format!(
                            "tls_server_config.min_version: {other:?} is not supported (TLS12 or TLS13)"
                        ))
                    }
                };
                Some(TlsSettings { cert_file, key_file, client_auth, client_ca_file, tls13_only })
            }
        };
        let users = file.basic_auth_users.unwrap_or_default();
        for (user, hash) in &users {
            if user.contains(':') {
                return Err(format!("basic_auth_users: user name {user:?} contains ':'"));
            }
            hash.parse::<bcrypt::HashParts>().map_err(|e| {
                // Escaped: a user name may hold a line break, and the error is one line.
                format!("basic_auth_users.{name}: not a bcrypt hash ({e}); make one with htpasswd -nBC 10 {name}", name = user.escape_debug())
            })?;
        }
        Ok(WebConfig { tls, users, tls_config: None })
    }

    /// The basic-auth checker, when users are configured.
    pub fn auth(&self) -> Option<Auth> {
        (!self.users.is_empty()).then(|| Auth::new(self.users.clone()))
    }

    /// The loaded TLS configuration, when TLS is configured.
    pub(crate) fn into_tls(self) -> Option<Arc<ServerConfig>> {
        self.tls_config
    }
}

fn server_config(tls: &TlsSettings) -> Result<Arc<ServerConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&tls.cert_file)
        .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("tls_server_config.cert_file {}: {e}", tls.cert_file.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "tls_server_config.cert_file {}: no certificate in it",
            tls.cert_file.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(&tls.key_file)
        .map_err(|e| format!("tls_server_config.key_file {}: {e}", tls.key_file.display()))?;
    let versions: &[&rustls::SupportedProtocolVersion] = if tls.tls13_only {
        &[&rustls::version::TLS13]
    } else {
        &[&rustls::version::TLS13, &rustls::version::TLS12]
    };
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(versions)
        .map_err(|e| format!("tls_server_config: {e}"))?;
    let builder = match (&tls.client_auth, &tls.client_ca_file) {
        (ClientAuth::None, _) | (_, None) => builder.with_no_client_auth(),
        (policy, Some(ca_file)) => {
            let field = "tls_server_config.client_ca_file";
            let mut roots = RootCertStore::empty();
            for cert in CertificateDer::pem_file_iter(ca_file)
                .map_err(|e| format!("{field} {}: {e}", ca_file.display()))?
            {
                let cert = cert.map_err(|e| format!("{field} {}: {e}", ca_file.display()))?;
                roots.add(cert).map_err(|e| format!("{field} {}: {e}", ca_file.display()))?;
            }
            let mut verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            if *policy == ClientAuth::VerifyIfGiven {
                verifier = verifier.allow_unauthenticated();
            }
            let verifier =
                verifier.build().map_err(|e| format!("{field} {}: {e}", ca_file.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder.with_single_cert(certs, key).map_err(|e| {
        format!(
            "tls_server_config.key_file {}: does not fit the certificate: {e}",
            tls.key_file.display()
        )
    })?;
    Ok(Arc::new(config))
}

/// A bcrypt hash of nothing anyone can type, checked for unknown users so that a wrong user
/// name costs as long as a wrong password (no user enumeration by timing).
const DUMMY_HASH: &str = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";

/// Most distinct successful `Authorization` headers remembered; beyond it the cache starts over.
const CACHE_LIMIT: usize = 256;

/// Basic-auth checks against bcrypt hashes. bcrypt is slow on purpose (tens of milliseconds at
/// cost 10), so a header that passed once is remembered exactly as sent: a scrape every second
/// costs one bcrypt, not one per scrape. Failures are never cached.
#[derive(Debug)]
pub struct Auth {
    users: BTreeMap<String, String>,
    passed: Mutex<HashSet<String>>,
}

impl Auth {
    /// A checker for `user → bcrypt hash`.
    pub fn new(users: BTreeMap<String, String>) -> Self {
        Auth { users, passed: Mutex::new(HashSet::new()) }
    }

    /// Whether this `Authorization` header value lets the request through.
    pub fn allows(&self, header: Option<&str>) -> bool {
        let Some(header) = header else { return false };
        if self.passed.lock().is_ok_and(|set| set.contains(header)) {
            return true;
        }
        let Some((user, password)) = decode_basic(header) else { return false };
        let ok = match self.users.get(&user) {
            Some(hash) => bcrypt::verify(&password, hash).unwrap_or(false),
            None => {
                let _ = bcrypt::verify(&password, DUMMY_HASH);
                false
            }
        };
        if ok {
            if let Ok(mut set) = self.passed.lock() {
                if set.len() >= CACHE_LIMIT {
                    set.clear();
                }
                set.insert(header.to_string());
            }
        }
        ok
    }
}

/// `Basic base64(user:password)` → `(user, password)`.
fn decode_basic(header: &str) -> Option<(String, String)> {
    let (scheme, token) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let bytes = base64::engine::general_purpose::STANDARD.decode(token.trim()).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// Most TLS connections served at once; more are closed at once (bounded threads).
const MAX_TLS_CONNECTIONS: usize = 64;
/// A TLS connection idle this long is closed.
const IDLE: Duration = Duration::from_secs(120);

/// The TLS front end: accepts TLS on the public listener and relays the plain bytes to
/// the HTTP server on a private Unix socket.
#[derive(Debug)]
pub struct TlsFront {
    stop: Arc<AtomicBool>,
    accept: Option<std::thread::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl TlsFront {
    /// Binds the private Unix socket the HTTP server is to accept on, and starts the TLS
    /// accept loop on `listener`.
    pub(crate) fn start(
        listener: TcpListener,
        config: Arc<ServerConfig>,
    ) -> Result<(UnixListener, TlsFront), ServeError> {
        let http_err =
            |what: &str, e: &dyn std::fmt::Display| ServeError::Http(format!("{what}: {e}"));
        // tempfile makes the directory 0700: only this user reaches the plain-text socket.
        let dir = tempfile::Builder::new()
            .prefix("platscope-serve-")
            .tempdir()
            .map_err(|e| http_err("creating a private directory", &e))?;
        let socket = dir.path().join("http.sock");
        let unix =
            UnixListener::bind(&socket).map_err(|e| http_err("binding a Unix socket", &e))?;
        listener.set_nonblocking(true).map_err(|e| http_err("listener", &e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let accept_stop = Arc::clone(&stop);
        let accept = std::thread::Builder::new()
            .name("serve-tls".into())
            .spawn(move || accept_loop(listener, config, socket, accept_stop))
            .map_err(|e| http_err("starting the TLS thread", &e))?;
        Ok((unix, TlsFront { stop, accept: Some(accept), _dir: dir }))
    }

    /// Stops accepting; connections in progress end with the process.
    pub(crate) fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

fn accept_loop(
    listener: TcpListener,
    config: Arc<ServerConfig>,
    socket: PathBuf,
    stop: Arc<AtomicBool>,
) {
    let open = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::Relaxed) {
        let tcp = match listener.accept() {
            Ok((tcp, _)) => tcp,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            Err(_) => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
        };
        if open.fetch_add(1, Ordering::AcqRel) >= MAX_TLS_CONNECTIONS {
            open.fetch_sub(1, Ordering::AcqRel);
            continue; // dropped: closed at once
        }
        let (config, socket, count) = (Arc::clone(&config), socket.clone(), Arc::clone(&open));
        let spawned = std::thread::Builder::new().name("serve-tls-conn".into()).spawn(move || {
            let _ = relay(tcp, config, &socket);
            count.fetch_sub(1, Ordering::AcqRel);
        });
        if spawned.is_err() {
            // The closure never ran: give its slot back here.
            open.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Waits until one of the two descriptors is readable (or hung up); false on idle timeout.
fn wait_readable(a: &TcpStream, b: Option<&UnixStream>) -> std::io::Result<(bool, bool)> {
    let mut fds = [
        libc::pollfd { fd: a.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        libc::pollfd { fd: b.map_or(-1, AsRawFd::as_raw_fd), events: libc::POLLIN, revents: 0 },
    ];
    let timeout = i32::try_from(IDLE.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: `fds` is a valid array of two pollfd for the duration of the call; a negative fd
    // is ignored by poll.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if n == 0 {
        return Err(std::io::Error::from(std::io::ErrorKind::TimedOut));
    }
    let ready = |f: &libc::pollfd| f.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0;
    Ok((ready(&fds[0]), ready(&fds[1])))
}

/// One TLS connection: handshake (a required client certificate that is missing or does not
/// verify ends it here, before any byte reaches HTTP), then relay both ways.
fn relay(mut tcp: TcpStream, config: Arc<ServerConfig>, socket: &Path) -> std::io::Result<()> {
    let other = std::io::Error::other;
    let mut tls = ServerConnection::new(config).map_err(other)?;
    let mut backend: Option<UnixStream> = None;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let (from_client, from_backend) = wait_readable(&tcp, backend.as_ref())?;
        if from_client {
            if tls.read_tls(&mut tcp)? == 0 {
                return Ok(());
            }
            let processed = tls.process_new_packets();
            // Send what rustls has to say (handshake messages, or the alert on failure).
            while tls.wants_write() {
                tls.write_tls(&mut tcp)?;
            }
            processed.map_err(other)?;
            if !tls.is_handshaking() && backend.is_none() {
                backend = Some(UnixStream::connect(socket)?);
            }
            if let Some(back) = backend.as_mut() {
                loop {
                    match tls.reader().read(&mut buf) {
                        Ok(0) => return Ok(()),
                        Ok(n) => back.write_all(&buf[..n])?,
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        if from_backend {
            let Some(back) = backend.as_mut() else { continue };
            let n = back.read(&mut buf)?;
            if n == 0 {
                tls.send_close_notify();
            } else {
                tls.writer().write_all(&buf[..n])?;
            }
            while tls.wants_write() {
                tls.write_tls(&mut tcp)?;
            }
            if n == 0 {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `bcrypt::hash("s3cret", 4)`, cost 4 to keep the test quick.
    fn hash(password: &str) -> String {
        bcrypt::hash(password, 4).unwrap()
    }

    fn basic(user: &str, password: &str) -> String {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        format!("Basic {token}")
    }

    #[test]
    fn parses_the_toolkit_format_and_resolves_paths() {
        let text = format!(
            "tls_server_config:\n  cert_file: server.crt\n  key_file: /etc/k.key\n  \
             client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n\
             basic_auth_users:\n  alice: '{}'\n",
            hash("x")
        );
        let config = WebConfig::parse(&text, Path::new("/etc/platscope")).unwrap();
        let tls = config.tls.unwrap();
        assert_eq!(tls.cert_file, Path::new("/etc/platscope/server.crt"));
        assert_eq!(tls.key_file, Path::new("/etc/k.key"));
        assert_eq!(tls.client_auth, ClientAuth::RequireAndVerify);
        assert_eq!(tls.client_ca_file.as_deref(), Some(Path::new("/etc/platscope/ca.crt")));
        assert_eq!(config.users.len(), 1);
        let empty = WebConfig::parse("", Path::new("/")).unwrap();
        assert!(empty.tls.is_none() && empty.auth().is_none());
    }

    #[test]
    fn bad_files_name_the_field() {
        let cases = [
            ("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth: x\n", "client_auth"),
            ("tls_server_config:\n  cert_file: a\n", "tls_server_config.key_file"),
            ("basic_auth_users:\n  bob: plaintext\n", "basic_auth_users.bob"),
            (
                "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n",
                "client_ca_file",
            ),
            (
                "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: Maybe\n",
                "client_auth_type",
            ),
            ("basic_auth_user:\n  bob: x\n", "basic_auth_user"),
        ];
        for (text, field) in cases {
            let err = WebConfig::parse(text, Path::new("/")).unwrap_err();
            assert!(err.contains(field), "{text:?}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn basic_auth_decisions() {
        let users = BTreeMap::from([("alice".to_string(), hash("s3cret"))]);
        let auth = Auth::new(users);
        assert!(!auth.allows(None));
        assert!(!auth.allows(Some(&basic("alice", "wrong"))));
        assert!(!auth.allows(Some(&basic("mallory", "s3cret"))));
        assert!(!auth.allows(Some("Bearer abc")));
        assert!(!auth.allows(Some("Basic !!!not-base64")));
        let good = basic("alice", "s3cret");
        assert!(auth.allows(Some(&good)));
        assert!(auth.passed.lock().unwrap().contains(&good), "a success is cached");
        assert!(auth.allows(Some(&good)));
        assert_eq!(auth.passed.lock().unwrap().len(), 1, "failures are not cached");
    }

    #[test]
    fn arbitrary_and_mutated_authorization_headers_decode_or_not_without_panic() {
        use test_support::fuzz::{self, proptest::prop_assert};
        let seeds =
            vec![basic("alice", "s3cret"), basic("", ":"), "Basic".into(), "Bearer x".into()];
        fuzz::check(fuzz::PURE, fuzz::text_or_mutated(seeds, 120), |header| {
            if let Some((user, _)) = decode_basic(&header) {
                prop_assert!(!user.contains(':'));
            }
            Ok(())
        });
    }

    #[test]
    fn a_user_name_with_a_line_break_gives_a_one_line_error() {
        // Found by the web-config fuzz target: the name was printed as it was.
        let text = "basic_auth_users:\n  \"a\\nb\": not-a-hash\n";
        let e = WebConfig::parse(text, Path::new("/etc")).err().unwrap_or_default();
        assert!(e.contains("not a bcrypt hash") && !e.contains('\n'), "{e:?}");
    }

    #[test]
    fn the_dummy_hash_is_a_valid_bcrypt_hash() {
        assert!(DUMMY_HASH.parse::<bcrypt::HashParts>().is_ok());
    }
}

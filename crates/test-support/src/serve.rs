//! A `platscope serve` a test starts on loopback, reads the bound address of, and stops by PID.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A `platscope serve` this test started; stopped by its PID on drop.
#[derive(Debug)]
pub struct Serve {
    pub child: Child,
    pub addr: SocketAddr,
    /// Its stderr lines after the "serving on" one.
    pub lines: mpsc::Receiver<String>,
}

impl Serve {
    /// Starts `platscope serve --listen 127.0.0.1:0 EXTRA…` and reads the bound address back
    /// from its "serving on" line (bounded wait).
    pub fn start(extra: &[&str]) -> Serve {
        let mut child = Command::new(crate::cli::bin())
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting platscope serve");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[serve] {line}");
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(rest) = line.split("serving on ").nth(1) {
                        let url = rest.split_whitespace().next().unwrap_or("");
                        let hostport = url.split("://").nth(1).and_then(|r| r.split('/').next());
                        let addr = hostport.and_then(|h| h.parse().ok());
                        let addr = addr.unwrap_or_else(|| panic!("no address in {line:?}"));
                        return Serve { child, addr, lines: rx };
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    let status = child.wait();
                    panic!("platscope serve did not say where it serves within 20 s ({status:?})");
                }
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then a bounded wait for the exit status.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        let pid = libc::pid_t::try_from(self.child.id()).expect("pid fits");
        // SAFETY: kill has no memory preconditions; the PID is our own unreaped child.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("platscope serve did not stop within 10 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

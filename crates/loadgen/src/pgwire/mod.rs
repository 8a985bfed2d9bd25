//! PostgreSQL's frontend/backend protocol (version 3) on a blocking socket: the connection
//! `platscope load` drives PostgreSQL with.
//!
//! Why not the `postgres` crate: it is a synchronous wrapper over tokio-postgres, with a Tokio
//! runtime per connection and a channel hop per statement, so every transaction cost the driver
//! more CPU than libpq costs pgbench. Here a prepared statement's Bind, Execute and Sync go out
//! in one `write` from a buffer kept across statements, and the answer comes back through one
//! read buffer, also kept: a point select is one write and usually one read, and nothing is
//! allocated per statement.
//!
//! Frontend messages are encoded by `postgres-protocol`, which also does the MD5 and
//! SCRAM-SHA-256 arithmetic. Backend messages are framed and parsed here, as outside input: a
//! message longer than [`MAX_MESSAGE`](codec::MAX_MESSAGE) is refused, the read buffer grows
//! only as bytes arrive, and a stream that is cut, malformed or closed is
//! [`DbError::Gone`](crate::conn::DbError::Gone) — the connection is marked broken and the run
//! reconnects. No TLS: `sslmode=require` is refused, not ignored.
//!
//! `codec` frames and parses what the server sends and encodes bound values; `client` is the
//! connection: the socket, startup and authentication, statements, and libpq's host list.

mod client;
mod codec;
#[cfg(test)]
mod tests;

pub(crate) use client::connect;

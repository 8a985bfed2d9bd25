//! PostgreSQL's wire protocol (moved whole into `client`; split by concern in the next commit).

mod client;

pub(crate) use client::*;

//! A link's duplex mode: its own module because the sysfs reader ([`crate::link`]), the ethtool
//! ioctl decoder ([`crate::ioctl`]) and the ethtool netlink dump ([`crate::netlink`]) all produce it.

use serde::Serialize;

/// Duplex mode of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Duplex {
    Full,
    Half,
    Unknown,
}

impl Duplex {
    /// nicstat's four-letter spelling (`-l`).
    pub fn short(&self) -> &'static str {
        match self {
            Duplex::Full => "full",
            Duplex::Half => "half",
            Duplex::Unknown => "unkn",
        }
    }
}

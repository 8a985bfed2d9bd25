//! Page sizes an arena can be backed by.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How an arena's memory is paged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PageSize {
    /// Base pages, marked `MADV_NOHUGEPAGE` so THP cannot slip in and change results.
    #[serde(rename = "4k")]
    Base,
    /// Transparent huge pages, requested with `MADV_HUGEPAGE` on a 2 MiB-aligned range.
    Thp,
    /// hugetlbfs 2 MiB pages from the reserved pool.
    #[serde(rename = "2m")]
    Huge2M,
    /// hugetlbfs 1 GiB pages from the reserved pool.
    #[serde(rename = "1g")]
    Huge1G,
}

impl PageSize {
    /// Every accepted spelling, for messages.
    pub const NAMES: &'static str = "4k, thp, 2m, 1g";

    /// The size of one page as the MMU maps it (THP: the huge size it aims for).
    pub fn bytes(self) -> u64 {
        match self {
            PageSize::Base => 4096,
            PageSize::Thp | PageSize::Huge2M => 2 << 20,
            PageSize::Huge1G => 1 << 30,
        }
    }

    /// The file that sizes this page size's hugetlb pool machine-wide.
    pub fn pool_sysctl(self) -> String {
        match self {
            PageSize::Huge2M => "/proc/sys/vm/nr_hugepages".to_string(),
            other => {
                format!("/sys/kernel/mm/hugepages/hugepages-{}kB/nr_hugepages", other.bytes() >> 10)
            }
        }
    }

    /// Whether the memory comes from a hugetlb pool.
    pub fn is_hugetlb(self) -> bool {
        matches!(self, PageSize::Huge2M | PageSize::Huge1G)
    }
}

impl fmt::Display for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PageSize::Base => "4k",
            PageSize::Thp => "thp",
            PageSize::Huge2M => "2m",
            PageSize::Huge1G => "1g",
        })
    }
}

/// Parses a page size for a command line (`--page 4k|thp|2m|1g`); the message lists the names.
pub fn parse_page(text: &str) -> Result<PageSize, String> {
    text.parse()
}

impl FromStr for PageSize {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "4k" | "4kib" | "base" => Ok(PageSize::Base),
            "thp" => Ok(PageSize::Thp),
            "2m" | "2mib" => Ok(PageSize::Huge2M),
            "1g" | "1gib" => Ok(PageSize::Huge1G),
            _ => Err(format!("unknown page size {s:?}; use one of {}", PageSize::NAMES)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_displays() {
        for page in [PageSize::Base, PageSize::Thp, PageSize::Huge2M, PageSize::Huge1G] {
            assert_eq!(page.to_string().parse::<PageSize>(), Ok(page));
        }
        assert_eq!("2MiB".parse::<PageSize>(), Ok(PageSize::Huge2M));
        assert!("3m".parse::<PageSize>().is_err());
    }
}

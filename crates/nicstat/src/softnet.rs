//! `/proc/net/softnet_stat`: one line of 32-bit hexadecimal counters per CPU.
//!
//! Columns have been added over the years, always at the end: processed, dropped (backlog over
//! `netdev_max_backlog`), time_squeeze (the receive softirq ran out of budget or time with work
//! left), five retired zeros, cpu_collision (now always 0), received_rps (since 2.6.35),
//! flow_limit_count (since 3.11), then the backlog length and the CPU number (since 5.10), and
//! on recent kernels the input and process queue lengths. Before 5.10 a line is printed only for
//! online CPUs, so the line number is not the CPU number when some are offline: then
//! [`SoftnetCpu::cpu`] is `None` and [`SoftnetCpu::row`] is all that is known.
//!
//! The counters are 32-bit and wrap; subtract them with [`crate::CounterDelta`].

use serde::Serialize;

use measure::ParseError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SoftnetCpu {
    /// The CPU number the kernel printed (column 13, since 5.10).
    pub cpu: Option<u32>,
    /// The line's position in the file, from 0.
    pub row: u32,
    pub processed: u64,
    pub dropped: u64,
    pub time_squeeze: u64,
    /// Since 2.6.35.
    pub received_rps: Option<u64>,
    /// Since 3.11.
    pub flow_limit_count: Option<u64>,
    /// Packets waiting in the backlog when the file was read (a level, not a counter; 5.10+).
    pub backlog_len: Option<u64>,
}

impl SoftnetCpu {
    /// The CPU's number when printed, else its line number (exact when no CPU is offline).
    pub fn label(&self) -> u32 {
        self.cpu.unwrap_or(self.row)
    }
}

/// Parses every line.
pub fn parse_softnet_stat(text: &str) -> Result<Vec<SoftnetCpu>, ParseError> {
    let mut cpus = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let mut values = Vec::with_capacity(16);
        for word in raw.split_whitespace() {
            let value = u64::from_str_radix(word, 16)
                .map_err(|_| ParseError::new(index + 1, format!("'{word}' is not hexadecimal")))?;
            values.push(value);
        }
        if values.len() < 3 {
            return Err(ParseError::new(
                index + 1,
                format!("{} columns, expected 3 or more", values.len()),
            ));
        }
        let at = |i: usize| values.get(i).copied();
        let row = u32::try_from(cpus.len()).unwrap_or(u32::MAX);
        cpus.push(SoftnetCpu {
            cpu: at(12).and_then(|c| u32::try_from(c).ok()),
            row,
            processed: values[0],
            dropped: values[1],
            time_squeeze: values[2],
            received_rps: at(9),
            flow_limit_count: at(10),
            backlog_len: at(11),
        });
    }
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_number_is_taken_when_printed() {
        let line = "0000000a 00000001 00000002 00000000 00000000 00000000 00000000 00000000 00000000 00000003 00000004 00000005 00000007\n";
        let cpu = parse_softnet_stat(line).unwrap()[0];
        assert_eq!(cpu.cpu, Some(7));
        assert_eq!((cpu.processed, cpu.dropped, cpu.time_squeeze), (10, 1, 2));
        assert_eq!(
            (cpu.received_rps, cpu.flow_limit_count, cpu.backlog_len),
            (Some(3), Some(4), Some(5))
        );
    }

    #[test]
    fn without_a_cpu_column_the_row_stands_in() {
        let text = "00000001 00000000 00000000\n00000002 00000000 00000000\n";
        let cpus = parse_softnet_stat(text).unwrap();
        assert_eq!(cpus[1].cpu, None);
        assert_eq!(cpus[1].label(), 1);
    }
}

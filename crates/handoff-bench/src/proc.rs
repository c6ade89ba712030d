//! CPU time and memory of a process, from `/proc`.

/// Clock ticks per second of `/proc/<pid>/stat` times (USER_HZ, 100 on Linux).
const TICKS_PER_SEC: f64 = 100.0;

/// One sample of a process's resource use.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ProcSample {
    /// User + system CPU seconds so far.
    pub cpu_secs: f64,
    /// Resident set size in bytes.
    pub rss_bytes: u64,
    /// The part of it that is mapped file pages: the binary's and its libraries' code and
    /// read-only data (`RssFile`), as opposed to heap and stacks.
    pub rss_file_bytes: u64,
}

impl ProcSample {
    /// Samples `pid`; zeros when it cannot be read (the figures then show as 0).
    pub(crate) fn of(pid: u32) -> Self {
        let cpu_secs = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                let (_, rest) = stat.rsplit_once(')')?;
                let fields: Vec<&str> = rest.split_whitespace().collect();
                // Fields 14 and 15 of stat (utime, stime) are 11 and 12 after the name.
                let utime: f64 = fields.get(11)?.parse().ok()?;
                let stime: f64 = fields.get(12)?.parse().ok()?;
                Some((utime + stime) / TICKS_PER_SEC)
            })
            .unwrap_or(0.0);
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        Self {
            cpu_secs,
            rss_bytes: status_bytes(&status, "VmRSS:"),
            rss_file_bytes: status_bytes(&status, "RssFile:"),
        }
    }
}

/// A `kB` line of `/proc/<pid>/status` in bytes; 0 when absent.
fn status_bytes(status: &str, key: &str) -> u64 {
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_this_process() {
        let sample = ProcSample::of(std::process::id());
        assert!(sample.rss_bytes > 0);
        assert!(sample.rss_file_bytes > 0 && sample.rss_file_bytes < sample.rss_bytes);
        assert!(sample.cpu_secs >= 0.0);
    }
}

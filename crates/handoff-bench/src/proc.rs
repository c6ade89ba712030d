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
        let rss_bytes = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|status| {
                let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
                let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
                Some(kib * 1024)
            })
            .unwrap_or(0);
        Self {
            cpu_secs,
            rss_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_this_process() {
        let sample = ProcSample::of(std::process::id());
        assert!(sample.rss_bytes > 0);
        assert!(sample.cpu_secs >= 0.0);
    }
}

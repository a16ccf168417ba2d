//! Process CPU time (user + system, all threads, including exited ones) and memory from `/proc`.

use std::time::Duration;

/// CPU time consumed so far by process `pid` (`None`: this process).
pub fn cpu_time(pid: Option<u32>) -> Option<Duration> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/stat"),
        None => "/proc/self/stat".to_owned(),
    };
    let stat = std::fs::read_to_string(path).ok()?;
    // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so split after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    // After ')': state is field 3 of proc(5); utime is field 14, stime field 15.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let ticks = clock_ticks();
    let total = utime + stime;
    Some(Duration::from_secs(total / ticks) + Duration::from_nanos((total % ticks) * 1_000_000_000 / ticks))
}

fn clock_ticks() -> u64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(t)) if t > 0 => t as u64,
        _ => 100,
    }
}

/// CPU consumed over an interval by the server and by the driver itself.
pub struct CpuMark {
    server_pid: u32,
    server: Option<Duration>,
    driver: Option<Duration>,
}

impl CpuMark {
    pub fn start(server_pid: u32) -> CpuMark {
        CpuMark { server_pid, server: cpu_time(Some(server_pid)), driver: cpu_time(None) }
    }

    /// (server, driver) CPU used since `start`.
    pub fn stop(&self) -> (Option<Duration>, Option<Duration>) {
        let server = cpu_time(Some(self.server_pid)).zip(self.server).map(|(b, a)| b.saturating_sub(a));
        let driver = cpu_time(None).zip(self.driver).map(|(b, a)| b.saturating_sub(a));
        (server, driver)
    }
}

/// A `kB` field of `/proc/PID/status` (`VmRSS`, `VmHWM`…), in KiB.
pub fn status_kib(pid: u32, field: &str) -> Result<u64, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| e.to_string())?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("no {field} in /proc/{pid}/status"))
}

/// Resets the peak resident set size (`VmHWM`) of `pid` to its current size (Linux ≥ 4.0).
pub fn reset_peak_rss(pid: u32) -> Result<(), String> {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").map_err(|e| format!("cannot reset VmHWM: {e}"))
}

//! cryptsetup's progress output of a re-encryption (`Progress: …`, `--progress-json`,
//! `--progress-frequency`).

use crate::args::Opts;
use crate::interrupt::interrupted;
use std::io::Write;
use std::time::Instant;

/// cryptsetup's progress output: a "Progress: …" line redrawn at most every half second,
/// then "Finished, …"; or one JSON object per update with `--progress-json`; nothing with
/// `--batch-mode`. With `--progress-frequency SECS` a line every SECS seconds (not redrawn).
pub(crate) struct Progress {
    json: bool,
    quiet: bool,
    device: String,
    /// `--progress-frequency` in microseconds; 0 for the default (redraw every 0.5 s).
    frequency: u64,
    start: Option<(Instant, u64)>,
    last: Option<Instant>,
}

impl Progress {
    /// The progress output the command line asks for, naming `device` (in JSON).
    pub(crate) fn new(o: &Opts, device: &str) -> Self {
        Progress {
            json: o.progress_json,
            quiet: o.batch_mode,
            device: device.to_string(),
            frequency: u64::from(o.progress_frequency.unwrap_or(0)) * 1_000_000,
            start: None,
            last: None,
        }
    }

    /// `done` of `total` bytes processed.
    pub(crate) fn show(&mut self, done: u64, total: u64) {
        if self.quiet && !self.json {
            return;
        }
        let now = Instant::now();
        let Some((start, start_bytes)) = self.start else {
            self.start = Some((now, done));
            self.last = Some(now);
            return;
        };
        let fin = done == total;
        if !fin
            && self
                .last
                .is_some_and(|l| now.duration_since(l).as_micros() < self.interval())
        {
            return;
        }
        self.last = Some(now);
        let tdiff = now.duration_since(start).as_secs_f64();
        if tdiff == 0.0 {
            return;
        }
        let uib = (done - start_bytes) as f64 / tdiff;
        let eta = if uib > 0.0 {
            ((total as f64 / uib - tdiff).max(0.0) * 1e6) as u64
        } else {
            0
        };
        let mut out = std::io::stdout().lock();
        if self.json {
            let _ = writeln!(
                out,
                "{{\"device\":\"{}\",\"device_bytes\":\"{done}\",\"device_size\":\"{total}\",\
                 \"speed\":\"{}\",\"eta_ms\":\"{}\",\"time_ms\":\"{}\"}}",
                self.device,
                uib as u64,
                if fin { 0 } else { eta / 1000 },
                (tdiff * 1e3) as u64
            );
        } else {
            let (speed, unit) = if uib > 1073741824.0 {
                (uib / 1073741824.0, "GiB")
            } else if uib > 1048576.0 {
                (uib / 1048576.0, "MiB")
            } else if uib > 1024.0 {
                (uib / 1024.0, "KiB")
            } else {
                (uib, "B")
            };
            if self.frequency == 0 {
                let _ = write!(out, "\x1b[2K\r");
            }
            if fin {
                let _ = writeln!(
                    out,
                    "Finished, time {}, {}, speed {speed:5.1} {unit}/s",
                    human_time((tdiff * 1e6) as u64),
                    written(done)
                );
            } else {
                let _ = write!(
                    out,
                    "Progress: {:5.1}%, ETA {}, {}, speed {speed:5.1} {unit}/s{}",
                    done as f64 / total as f64 * 100.0,
                    human_time(eta),
                    written(done),
                    if self.frequency == 0 { "" } else { "\n" }
                );
            }
        }
        let _ = out.flush();
    }
}

/// A run's progress, shown; the run stops at its next safe point once interrupted (Ctrl-C,
/// see [`crate::interrupt`]).
impl lukskit_reencrypt::Progress for Progress {
    fn update(&mut self, done: u64, total: u64) -> bool {
        self.show(done, total);
        !interrupted()
    }
}

impl Progress {
    /// Whether the output is JSON (`--progress-json`).
    pub(crate) fn is_json(&self) -> bool {
        self.json
    }

    fn interval(&self) -> u128 {
        if self.frequency == 0 {
            500_000
        } else {
            u128::from(self.frequency)
        }
    }
}

fn human_time(us: u64) -> String {
    let s = us / 1_000_000;
    if us < 5_400_000_000 {
        format!("{:02}m{:02}s", s / 60, s % 60)
    } else if us < 129_600_000_000 {
        format!("{:02}h{:02}m{:02}s", s / 3600, (s / 60) % 60, s % 60)
    } else {
        format!("{:02} days", s / 86400)
    }
}

fn written(bytes: u64) -> String {
    let (v, u) = if bytes < 1 << 32 {
        (bytes >> 20, "MiB")
    } else if bytes < 1 << 42 {
        (bytes >> 30, "GiB")
    } else if bytes < 1 << 52 {
        (bytes >> 40, "TiB")
    } else {
        (bytes >> 50, "PiB")
    };
    format!("{v:4} {u} written")
}

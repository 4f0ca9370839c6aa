//! Progress and summaries: a progress bar on stderr when it is a terminal (never in pipes, never
//! with -q), and the one-line per-file summary.

use std::io::{IsTerminal, Read};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How chatty to be, decided once from the flags and whether stderr is a terminal.
#[derive(Copy, Clone, Debug)]
pub struct Ui {
    pub bars: bool,
    pub summaries: bool,
    pub detail: bool,
}

impl Ui {
    pub fn new(quiet: bool, verbose: u8) -> Self {
        let tty = std::io::stderr().is_terminal();
        Self {
            bars: tty && !quiet,
            summaries: !quiet && (tty || verbose > 0),
            detail: !quiet && verbose > 1,
        }
    }

    /// A bar for `len` input bytes (a byte counter when the length is unknown), hidden unless
    /// bars are on.
    pub fn bar(&self, len: Option<u64>, label: &str) -> ProgressBar {
        if !self.bars {
            return ProgressBar::hidden();
        }
        let pb = match len {
            Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr())
                .with_style(
                    ProgressStyle::with_template(
                        "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
                    )
                    .expect("valid template")
                    .progress_chars("=> "),
                ),
            None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(
                ProgressStyle::with_template("{msg} {spinner} {bytes} {bytes_per_sec}")
                    .expect("valid template"),
            ),
        };
        pb.set_message(label.to_string());
        pb
    }
}

/// Counts bytes through a reader into a progress bar.
pub struct Tracked<R> {
    pub inner: R,
    pub bar: ProgressBar,
}

impl<R: Read> Read for Tracked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bar.inc(n as u64);
        Ok(n)
    }
}

/// Bytes as people read them: 1023 B, 12.3 KiB, 4.50 MiB.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else if v < 10.0 {
        format!("{v:.2} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

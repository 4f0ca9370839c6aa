//! Temporary outputs removed when a signal ends the run. Every output is written under a
//! temporary name first; error paths drop (and so delete) it, but SIGINT, SIGTERM and SIGHUP
//! end the process without unwinding. A watcher thread removes whatever is still registered
//! here and then lets the signal end the process as it would have (exit status 128 + signal).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Temporary files and folders that exist now and are not yet renamed into place.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Starts the watcher. Without it (if the handlers cannot be installed) signals keep their
/// default action, and only the temporary files of an interrupted run are left behind.
pub fn watch_signals() {
    let Ok(mut signals) = Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            remove_pending();
            // Ends the process the way the signal's default action would.
            let _ = signal_hook::low_level::emulate_default_handler(signal);
            std::process::exit(128 + signal);
        }
    });
}

fn remove_pending() {
    let pending = match PENDING.lock() {
        Ok(p) => p.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    };
    for path in pending {
        // A folder may gain an entry while it is removed (the main thread still writes):
        // a few tries empty it.
        for _ in 0..5 {
            let gone = match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path).is_ok(),
                Ok(_) => std::fs::remove_file(&path).is_ok(),
                Err(_) => true,
            };
            if gone {
                break;
            }
        }
    }
}

/// A temporary path registered for removal on a signal while the guard lives. Dropping the
/// guard only unregisters: deleting on error paths is the temporary file's own business.
#[derive(Debug)]
pub struct Pending(PathBuf);

impl Pending {
    /// Registers `path` (a file or a folder).
    pub fn new(path: &Path) -> Self {
        let mut p = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        p.push(path.to_path_buf());
        Pending(path.to_path_buf())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let mut p = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = p.iter().rposition(|x| *x == self.0) {
            p.swap_remove(i);
        }
    }
}

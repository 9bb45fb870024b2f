//! The global's record, in its state directory, of the rates its nodes enforce
//! ([`Held`]): written after each cycle that changed them, read back at start.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::cluster::Held;
use crate::config::persist::write_atomically;

/// The file's name in the state directory.
const NAME: &str = "held-rates.json";

/// `held-rates.json` in one state directory.
pub struct HeldFile {
    path: PathBuf,
    /// Whether the log said that the last save failed (said once until one succeeds).
    failing: AtomicBool,
}

impl HeldFile {
    /// The record in `state_dir`.
    pub fn new(state_dir: &Path) -> HeldFile {
        HeldFile {
            path: state_dir.join(NAME),
            failing: AtomicBool::new(false),
        }
    }

    /// What the record holds; nothing when there is none. A record that cannot be read
    /// is said in the log and taken as none: it only narrows what a restart may hand out
    /// before the nodes report, and a global that would not start without it would hold
    /// every rate in the cluster where it is.
    pub fn load(&self) -> Held {
        let text = match std::fs::read(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Held::default(),
            Err(e) => {
                tracing::warn!(
                    "cannot read {}: {e}; no node's rates are held",
                    self.path.display()
                );
                return Held::default();
            }
        };
        serde_json::from_slice(&text).unwrap_or_else(|e| {
            tracing::warn!(
                "{} is not a record of rates ({e}); no node's rates are held",
                self.path.display()
            );
            Held::default()
        })
    }

    /// Replaces the record with `held`. A failure is logged (once until a save succeeds)
    /// and otherwise ignored: the cycle goes on.
    pub fn save(&self, held: &Held) {
        let saved = serde_json::to_vec(held)
            .map_err(std::io::Error::other)
            .and_then(|bytes| write_atomically(&self.path, &bytes));
        match saved {
            Ok(()) => {
                if self.failing.swap(false, Ordering::Relaxed) {
                    tracing::info!("{} is written again", self.path.display());
                }
            }
            Err(e) => {
                if !self.failing.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "cannot write {}: {e}; a restart of this global would not know what the nodes enforce",
                        self.path.display()
                    );
                }
            }
        }
    }
}

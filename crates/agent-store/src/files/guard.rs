//! What every operation on a file context does first, under its lock:
//! the guard (a byte order mark refused, a batch cut short undone or
//! hidden, dead writers' temporary files swept), once per hold of the
//! lock.

use super::LockedFile;
use super::open::BOM;
use super::recovery;
use super::store::FileStore;
use crate::{Error, Result};
use agent_data::Format;

impl FileStore {
    /// Runs `f` with the held lock, or with a lock taken just for it.
    pub(super) fn with_lock<T>(
        &mut self,
        exclusive: bool,
        f: impl FnOnce(&mut Self, &mut LockedFile) -> Result<T>,
    ) -> Result<T> {
        if let Some(mut file) = self.lock.take() {
            // Once per hold: a commit's catch-up and append share one.
            let guarded = if self.guarded {
                Ok(())
            } else {
                self.guard(&mut file)
            };
            let result = guarded.and_then(|()| {
                self.guarded = true;
                f(self, &mut file)
            });
            // A failure may leave a batch cut short: guard the next use.
            self.guarded = result.is_ok();
            self.lock = Some(file);
            return result;
        }
        let mut file = if exclusive {
            LockedFile::open(&self.path, true).map_err(self.io("open for writing"))?
        } else {
            LockedFile::open_shared(&self.path).map_err(self.io("read"))?
        };
        self.guard(&mut file)?;
        f(self, &mut file)
    }

    /// What every operation does first with the file locked: refuses a
    /// byte order mark; then, under the exclusive lock, undoes a batch a
    /// trusted record proves was cut short and sweeps dead writers'
    /// temporary files, while under a shared lock it only hides such a
    /// batch (reading never truncates).
    pub(super) fn guard(&mut self, file: &mut LockedFile) -> Result<()> {
        if file.read_range(0, 3).map_err(self.io("read"))? == BOM {
            return Err(Error::ByteOrderMark {
                name: self.name.clone(),
            });
        }
        if self.format != Format::Jsonl {
            // Records of batches in flight are for JSONL only: a JSON array
            // is rewritten whole, through a rename.
            return Ok(());
        }
        let mut warnings = Vec::new();
        if file.is_exclusive() {
            let cut = recovery::recover(file, &mut warnings);
            self.note(warnings);
            let cut = cut.map_err(self.io("repair"))?;
            if !self.swept {
                self.swept = true;
                recovery::sweep_temps(file.target());
            }
            if self.seen.file.is_some() && cut.is_some_and(|len| len < self.seen.end.offset as u64)
            {
                return Err(self.replaced("cut back (an interrupted append was undone)"));
            }
        } else {
            let cap = recovery::in_flight(file, &mut warnings);
            self.note(warnings);
            if let Some(len) = cap.map_err(self.io("read"))? {
                file.cap(len);
            }
        }
        Ok(())
    }
}

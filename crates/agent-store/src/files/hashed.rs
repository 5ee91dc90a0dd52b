//! `verify --chain` of a JSONL file (D111: verify at hashing speed): the
//! chain recomputed over the lines as stored, without parsing them, and
//! compared with every digest kept beside the file. The head record is
//! what says the lines are the messages as agentctx wrote them: when the
//! chain over the lines ends at its digest after its count of messages,
//! SHA-256's collision resistance makes each line its message's compact
//! JSON. Anything else — no record, a record the lines do not reach, a
//! torn last line — is verified in full, which says where and what.

use super::store::FileStore;
use crate::verify::{Sealed, check_checkpoints_by};
use crate::{Result, Verified};
use agent_data::Format;

impl FileStore {
    /// [`Store::verify_chain`](crate::Store::verify_chain) of this file.
    pub(super) fn verify_hashed(&mut self) -> Result<Verified> {
        if self.format != Format::Jsonl {
            return self.verify_file();
        }
        let kept = self.kept_beside()?;
        let Some(record) = kept.record else {
            return self.verify_kept(kept);
        };
        let snapshot = kept.sealed.as_deref().map(Sealed::read);
        let mut wanted: Vec<usize> = kept.points.iter().map(|(messages, _)| *messages).collect();
        if let Some(Ok(snapshot)) = &snapshot {
            wanted.push(snapshot.summarises());
        }
        let prefix = self.with_lock(false, |store, file| {
            let len = file.len().map_err(store.io("read"))?;
            super::first_sight::chain_prefix(file, len, &wanted).map_err(store.io("read"))
        })?;
        if prefix.unterminated || (prefix.lines, prefix.head) != (record.messages, record.digest) {
            return self.verify_kept(kept);
        }
        let mut findings = kept.ignored;
        match snapshot {
            Some(Ok(snapshot)) => {
                findings.extend(snapshot.check_digest(prefix.digest_at(snapshot.summarises())));
            }
            Some(Err(unreadable)) => findings.push(unreadable),
            None => {}
        }
        findings.extend(check_checkpoints_by(&kept.points, |messages| {
            prefix.digest_at(messages)
        }));
        Ok(Verified {
            name: self.name.clone(),
            messages: prefix.lines,
            head: prefix.head,
            findings,
            folded: false,
        })
    }
}

//! The access watch of a machine: fanotify on its disk, run by its agent
//! (which holds the watches by the harness's ids) and read back as a
//! [`protocol::Seen`] when the step is done.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::access::{AccessWatch, Accessed};
use crate::vm::channel::Channel;
use crate::vm::protocol::{self, Message};
use crate::vm::POWER_OFF_TIMEOUT;

static WATCHES: AtomicU64 = AtomicU64::new(1);

/// A fresh watch id.
pub fn next_id() -> u64 {
    WATCHES.fetch_add(1, Ordering::Relaxed)
}

/// An access watch run by the machine's agent (fanotify on its disk): it
/// sees every process of the machine, as the sandbox's sees every process
/// of the phase.
pub struct MachineWatch {
    pub channel: Arc<Channel>,
    pub watch: u64,
}

impl AccessWatch for MachineWatch {
    fn finish(self: Box<Self>) -> Accessed {
        let watch = self.watch;
        let answer =
            self.channel.call(|id| Message::FinishWatch { id, watch }, Vec::new(), POWER_OFF_TIMEOUT);
        let seen = answer.map_err(|e| e.to_string()).and_then(|frame| match frame.message {
            Message::Failed { failure, .. } => Err(failure.message),
            _ => serde_json::from_slice::<protocol::Seen>(&frame.data).map_err(|e| e.to_string()),
        });
        match seen {
            Ok(seen) => seen.accessed(),
            Err(why) => Accessed {
                files: Default::default(),
                incomplete: Some(format!("the machine's agent: {why}")),
            },
        }
    }
}

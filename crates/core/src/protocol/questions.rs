//! N-Chance's questions to a block's manager (`IsSinglet`): the machine
//! waits for each answer before it lets the block go or makes room, so an
//! answer that never comes (lost with a crashed or partitioned manager, or
//! a manager that changed with the membership) would hold it for ever.
//! Each question has a deadline; past it the machine is told "not a
//! singlet" (the block is let go; the origin still has it).

use super::node::NodeProtocol;
use super::timers::Timer;
use super::{Content, PeerMsg, ProtocolKey};
use crate::coop::{Msg, SizeClassed};
use std::collections::HashMap;

/// Questions awaiting an answer: per block, the deadline of the latest
/// and how many are open (the machine may ask about one block twice, for
/// its limbo and for making room, and waits for both answers).
#[derive(Debug)]
pub(super) struct Questions<K> {
    asked: HashMap<K, (u64, u32), foldhash::fast::FixedState>,
}

impl<K> Default for Questions<K> {
    fn default() -> Self {
        Questions {
            asked: HashMap::default(),
        }
    }
}

impl<K: ProtocolKey> Questions<K> {
    pub(super) fn len(&self) -> usize {
        self.asked.len()
    }

    pub(super) fn contains(&self, block: K) -> bool {
        self.asked.contains_key(&block)
    }

    /// An answer about `block` came.
    pub(super) fn answered(&mut self, block: K) {
        if let Some((_, open)) = self.asked.get_mut(&block) {
            *open -= 1;
            if *open == 0 {
                self.asked.remove(&block);
            }
        }
    }
}

impl<K, D> NodeProtocol<K, D>
where
    K: ProtocolKey + SizeClassed,
    D: Content,
{
    /// The machine asks `block`'s manager whether its copy is a singlet;
    /// with too many questions open, it is answered "no" at once.
    pub(super) fn ask_singlet(&mut self, block: K, now: u64) {
        if self.questions.len() >= self.cfg.max_held && !self.questions.contains(block) {
            self.stats.dropped += 1;
            let answer = Msg::Singlet {
                block,
                singlet: false,
            };
            return self.deliver_to_node(answer, now);
        }
        let deadline = now + self.peer_timeout();
        let entry = self.questions.asked.entry(block).or_insert((deadline, 0));
        *entry = (deadline, entry.1 + 1);
        self.timers.arm(deadline, Timer::Question(block));
        self.send_to_manager(block, PeerMsg::IsSinglet { block });
    }

    /// A question's deadline: each still unanswered, the machine hears
    /// "not a singlet".
    pub(super) fn question_deadline(&mut self, block: K, now: u64) {
        let open = match self.questions.asked.get(&block) {
            Some(&(deadline, open)) if deadline <= now => open,
            _ => return,
        };
        self.questions.asked.remove(&block);
        for _ in 0..open {
            self.stats.timeouts += 1;
            let answer = Msg::Singlet {
                block,
                singlet: false,
            };
            self.deliver_to_node(answer, now);
        }
    }
}

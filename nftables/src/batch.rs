//! One nfnetlink transaction, without I/O.

use netlink_packet_core::{
    NLM_F_ACK, NLM_F_APPEND, NLM_F_CREATE, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage,
    NetlinkPayload,
};

use super::chain::{ChainAttribute, ChainMessage, HookAttribute};
use super::expression::Expression;
use super::message::NftablesMessage;
use super::rule::{RuleAttribute, RuleMessage};
use super::table::{TableAttribute, TableMessage};

/// Messages the kernel applies all or nothing once they are put between a
/// batch begin and end. Each asks for an acknowledgement, so that the
/// kernel says which of them failed, and when it is done.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch {
    /// Each with its NLM_F_* flags beyond NLM_F_REQUEST | NLM_F_ACK.
    messages: Vec<(NftablesMessage, u16)>,
}

/// A base chain: where it hooks, and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BaseChain<'a> {
    /// "filter", "nat" or "route".
    pub kind: &'a str,
    pub hook: u32,
    pub priority: i32,
    /// The device of a netdev family's chain.
    pub device: Option<&'a str>,
}

impl Batch {
    pub fn new() -> Batch {
        Batch::default()
    }

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The messages in order, without the batch delimiters.
    pub fn messages(&self) -> impl Iterator<Item = &NftablesMessage> {
        self.messages.iter().map(|(message, _)| message)
    }

    /// `message`, with its flags beyond NLM_F_REQUEST | NLM_F_ACK.
    pub fn push(&mut self, message: NftablesMessage, flags: u16) {
        self.messages.push((message, flags));
    }

    /// `add table FAMILY NAME`: made if missing, left as it is otherwise.
    pub fn add_table(&mut self, family: u8, name: &str) {
        self.push(
            NftablesMessage::NewTable(TableMessage::new(
                family,
                vec![TableAttribute::Name(name.to_owned())],
            )),
            NLM_F_CREATE,
        );
    }

    /// `delete table FAMILY NAME`, with its chains and rules.
    pub fn delete_table(&mut self, family: u8, name: &str) {
        self.push(
            NftablesMessage::DeleteTable(TableMessage::new(
                family,
                vec![TableAttribute::Name(name.to_owned())],
            )),
            0,
        );
    }

    /// `add chain FAMILY TABLE NAME { type ... hook ... priority ...;
    /// policy accept; }`.
    pub fn add_base_chain(&mut self, family: u8, table: &str, name: &str, base: BaseChain<'_>) {
        let mut hook = vec![
            HookAttribute::Number(base.hook),
            HookAttribute::Priority(base.priority),
        ];
        hook.extend(
            base.device
                .map(|device| HookAttribute::Device(device.to_owned())),
        );
        self.push(
            NftablesMessage::NewChain(ChainMessage::new(
                family,
                vec![
                    ChainAttribute::Table(table.to_owned()),
                    ChainAttribute::Name(name.to_owned()),
                    ChainAttribute::Hook(hook),
                    ChainAttribute::Policy(super::verdict::ACCEPT as u32),
                    ChainAttribute::Type(base.kind.to_owned()),
                ],
            )),
            NLM_F_CREATE,
        );
    }

    /// A rule of `expressions` appended to `chain`.
    pub fn add_rule(&mut self, family: u8, table: &str, chain: &str, expressions: Vec<Expression>) {
        self.push(
            NftablesMessage::NewRule(RuleMessage::new(
                family,
                vec![
                    RuleAttribute::Table(table.to_owned()),
                    RuleAttribute::Chain(chain.to_owned()),
                    RuleAttribute::Expressions(expressions),
                ],
            )),
            NLM_F_CREATE | NLM_F_APPEND,
        );
    }

    /// The netlink messages to send, batch begin and end around them,
    /// numbered from `first_sequence`.
    pub fn into_netlink(self, first_sequence: u32) -> Vec<NetlinkMessage<NftablesMessage>> {
        let messages = std::iter::once((NftablesMessage::batch_begin(), NLM_F_REQUEST))
            .chain(
                self.messages
                    .into_iter()
                    .map(|(message, flags)| (message, NLM_F_REQUEST | NLM_F_ACK | flags)),
            )
            .chain(std::iter::once((
                NftablesMessage::batch_end(),
                NLM_F_REQUEST,
            )));
        messages
            .zip(0u32..)
            .map(|((message, flags), index)| {
                netlink_message(message, flags, first_sequence.wrapping_add(index))
            })
            .collect()
    }
}

/// A message with its header filled in.
pub fn netlink_message(
    message: NftablesMessage,
    flags: u16,
    sequence: u32,
) -> NetlinkMessage<NftablesMessage> {
    let mut header = NetlinkHeader::default();
    header.flags = flags;
    header.sequence_number = sequence;
    let mut message = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(message));
    message.finalize();
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::NFPROTO_IPV4;

    #[test]
    fn a_batch_is_numbered_from_its_begin_and_asks_for_acknowledgements() {
        let mut batch = Batch::new();
        batch.add_table(NFPROTO_IPV4, "t");
        batch.delete_table(NFPROTO_IPV4, "t");
        let messages = batch.into_netlink(u32::MAX - 1);
        let sequences: Vec<u32> = messages
            .iter()
            .map(|message| message.header.sequence_number)
            .collect();
        assert_eq!(sequences, [u32::MAX - 1, u32::MAX, 0, 1]);
        for message in &messages[1..messages.len() - 1] {
            assert_eq!(message.header.flags & NLM_F_ACK, NLM_F_ACK);
        }
        assert_eq!(messages[0].header.flags, NLM_F_REQUEST);
        assert_eq!(messages[messages.len() - 1].header.flags, NLM_F_REQUEST);
    }
}

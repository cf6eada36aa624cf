//! Request builders: one function per IPVS operation, producing the message
//! and how it must be sent.
//!
//! Requests are encoded like ipvsadm where the kernel cares: service and
//! destination addresses as 16-byte `nf_inet_addr`, ports big-endian, flags
//! with a full mask. Operations that only identify an object (delete, get,
//! zero, list destinations) send only the identifying attributes, which is
//! all the kernel reads for them.

use std::net::SocketAddr;

use netlink_packet_core::{
    NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload,
};
use netlink_packet_generic::GenlMessage;

use crate::{
    DaemonAttribute, Destination, IpvsAttribute, IpvsCommand, IpvsMessage, RequestError, Service,
    ServiceKey, SyncDaemon, SyncState, Timeouts,
};

/// What the kernel answers, hence which netlink flags to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// A change: the answer is an acknowledgement (or an error).
    Change,
    /// A single reply message (or an error).
    Get,
    /// A multipart dump ending with `NLMSG_DONE`. An empty dump is not an
    /// error: listing the destinations of a service that does not exist
    /// gives an empty dump, not `ESRCH`.
    Dump,
}

impl RequestKind {
    /// The `nlmsg_flags` to send.
    pub fn flags(self) -> u16 {
        match self {
            RequestKind::Change => NLM_F_REQUEST | NLM_F_ACK,
            // The acknowledgement after the reply tells a pipelined batch
            // that this request is done.
            RequestKind::Get => NLM_F_REQUEST | NLM_F_ACK,
            RequestKind::Dump => NLM_F_REQUEST | NLM_F_DUMP,
        }
    }
}

/// A message ready to be sent, and what to expect back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub message: IpvsMessage,
    pub kind: RequestKind,
}

impl Request {
    fn new(kind: RequestKind, command: IpvsCommand, attributes: Vec<IpvsAttribute>) -> Self {
        Request {
            message: IpvsMessage::new(command, attributes),
            kind,
        }
    }

    /// The complete netlink message, for the IPVS family id resolved through
    /// the generic netlink controller. The port number is left 0 (the
    /// kernel).
    pub fn to_netlink(
        &self,
        family_id: u16,
        sequence_number: u32,
    ) -> NetlinkMessage<GenlMessage<IpvsMessage>> {
        let mut genl = GenlMessage::from_payload(self.message.clone());
        genl.set_resolved_family_id(family_id);
        let mut header = NetlinkHeader::default();
        header.flags = self.kind.flags();
        header.sequence_number = sequence_number;
        let mut message = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(genl));
        message.finalize();
        message
    }
}

fn service_attribute(key: &ServiceKey) -> IpvsAttribute {
    IpvsAttribute::Service(key.to_attributes())
}

/// Add a service (`EEXIST` if it exists, `ENOENT` for an unknown scheduler or
/// persistence engine).
pub fn new_service(service: &Service) -> Result<Request, RequestError> {
    service.validate()?;
    Ok(Request::new(
        RequestKind::Change,
        IpvsCommand::NewService,
        vec![IpvsAttribute::Service(service.to_attributes())],
    ))
}

/// Replace the settings of an existing service (`ESRCH` if missing). The
/// kernel needs the full entry: scheduler, flags, timeout and netmask.
pub fn set_service(service: &Service) -> Result<Request, RequestError> {
    service.validate()?;
    Ok(Request::new(
        RequestKind::Change,
        IpvsCommand::SetService,
        vec![IpvsAttribute::Service(service.to_attributes())],
    ))
}

/// Delete a service and its destinations (`ESRCH` if missing).
pub fn delete_service(key: &ServiceKey) -> Request {
    Request::new(
        RequestKind::Change,
        IpvsCommand::DeleteService,
        vec![service_attribute(key)],
    )
}

/// Read one service (`ESRCH` if missing); parse with
/// [`Service::from_reply`].
pub fn get_service(key: &ServiceKey) -> Request {
    Request::new(
        RequestKind::Get,
        IpvsCommand::GetService,
        vec![service_attribute(key)],
    )
}

/// List all services; parse each message with [`Service::from_reply`].
pub fn dump_services() -> Request {
    Request::new(RequestKind::Dump, IpvsCommand::GetService, vec![])
}

fn destination_request(
    command: IpvsCommand,
    key: &ServiceKey,
    destination: &Destination,
) -> Result<Request, RequestError> {
    destination.validate(key.family())?;
    Ok(Request::new(
        RequestKind::Change,
        command,
        vec![
            service_attribute(key),
            IpvsAttribute::Destination(destination.to_attributes()),
        ],
    ))
}

/// Add a destination to a service (`ESRCH` if the service is missing,
/// `EEXIST` if the destination exists).
pub fn new_destination(
    key: &ServiceKey,
    destination: &Destination,
) -> Result<Request, RequestError> {
    destination_request(IpvsCommand::NewDestination, key, destination)
}

/// Change a destination (`ENOENT` if missing).
pub fn set_destination(
    key: &ServiceKey,
    destination: &Destination,
) -> Result<Request, RequestError> {
    destination_request(IpvsCommand::SetDestination, key, destination)
}

/// Remove a destination (`ENOENT` if missing).
pub fn delete_destination(key: &ServiceKey, destination: SocketAddr) -> Request {
    Request::new(
        RequestKind::Change,
        IpvsCommand::DeleteDestination,
        vec![
            service_attribute(key),
            IpvsAttribute::Destination(Destination::key_attributes(destination)),
        ],
    )
}

/// List the destinations of a service; parse each message with
/// [`Destination::from_reply`]. The kernel answers an empty dump, not an
/// error, when the service does not exist or the key is malformed.
pub fn dump_destinations(key: &ServiceKey) -> Request {
    Request::new(
        RequestKind::Dump,
        IpvsCommand::GetDestination,
        vec![service_attribute(key)],
    )
}

/// Start a sync daemon (`EEXIST` if one runs in that state already).
pub fn new_daemon(daemon: &SyncDaemon) -> Result<Request, RequestError> {
    daemon.validate()?;
    Ok(Request::new(
        RequestKind::Change,
        IpvsCommand::NewDaemon,
        vec![IpvsAttribute::Daemon(daemon.to_attributes())],
    ))
}

/// Stop the sync daemon running in `state` (`ESRCH` if none). The kernel
/// reads nothing but the state.
pub fn delete_daemon(state: SyncState) -> Request {
    Request::new(
        RequestKind::Change,
        IpvsCommand::DeleteDaemon,
        vec![IpvsAttribute::Daemon(vec![DaemonAttribute::State(
            state.to_raw(),
        )])],
    )
}

/// List the running sync daemons (0, 1 or 2 messages); parse each with
/// [`SyncDaemon::from_reply`].
pub fn dump_daemons() -> Request {
    Request::new(RequestKind::Dump, IpvsCommand::GetDaemon, vec![])
}

/// Read the timeouts; parse with [`Timeouts::from_reply`].
pub fn get_config() -> Request {
    Request::new(RequestKind::Get, IpvsCommand::GetConfig, vec![])
}

/// Set the timeouts (0 = unchanged).
pub fn set_config(timeouts: &Timeouts) -> Request {
    Request::new(
        RequestKind::Change,
        IpvsCommand::SetConfig,
        timeouts.to_attributes(),
    )
}

/// Read the version and connection table size; parse with
/// [`Info::from_reply`](crate::Info::from_reply).
pub fn get_info() -> Request {
    Request::new(RequestKind::Get, IpvsCommand::GetInfo, vec![])
}

/// Zero the counters of every service and destination.
pub fn zero_all() -> Request {
    Request::new(RequestKind::Change, IpvsCommand::Zero, vec![])
}

/// Zero the counters of one service and its destinations (`ESRCH` if
/// missing).
pub fn zero_service(key: &ServiceKey) -> Request {
    Request::new(
        RequestKind::Change,
        IpvsCommand::Zero,
        vec![service_attribute(key)],
    )
}

/// Delete every service (sync daemons and timeouts are untouched).
pub fn flush() -> Request {
    Request::new(RequestKind::Change, IpvsCommand::Flush, vec![])
}

#[cfg(test)]
mod tests;

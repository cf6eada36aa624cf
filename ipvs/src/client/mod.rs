//! A client of the kernel's IPVS: one socket, the family resolved once,
//! requests pipelined.
//!
//! Each method is one operation, answered in full. [`Client::apply`] sends
//! many changes at once (a thousand services and their destinations take a
//! handful of system calls instead of one round trip each) and says which
//! ones the kernel refused and why.
//!
//! Sockets belong to the network namespace they were opened in: a client
//! connected from a thread inside a namespace programs that namespace's IPVS.

mod batch;
mod error;
mod traffic;
mod transport;

// Work in the client's namespace: sockets opened and /proc files read
// there are that namespace's, and the caller's thread never moves.
use fulcrum_netns::run_in as in_namespace;
use netlink_packet_core::ParseableParametrized;
use netlink_packet_generic::GenlHeader;

use std::fmt;
use std::net::SocketAddr;

pub use batch::EncodedBatch;
pub use error::{Errno, Error};
pub use traffic::Traffic;

use crate::request::{self, Request, RequestKind};
use crate::{
    Destination, Info, IpvsCommand, IpvsMessage, RequestError, Service, ServiceKey, SyncDaemon,
    SyncState, Timeouts, kernel_error_message,
};
pub(crate) use transport::set_option;
use transport::{Exchange, Refusal, Transport};

/// A connection to IPVS in the network namespace it was opened in.
pub struct Client {
    /// None after an exchange broke the socket; reopened on next use.
    transport: Option<Transport>,
    /// The network namespace of the first socket, where a new one is
    /// opened, whichever thread (and namespace) the client is used from.
    namespace: std::fs::File,
    /// The messages exchanged with the kernel, over every socket the client
    /// opened (the readers of [`Client::map_destinations`] included).
    traffic: std::sync::Arc<traffic::Counters>,
}

/// One change to IPVS, for [`Client::apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    CreateService(Service),
    /// Replace a service's scheduler, flags, persistence and netmask.
    UpdateService(Service),
    DeleteService(ServiceKey),
    CreateDestination(ServiceKey, Destination),
    UpdateDestination(ServiceKey, Destination),
    DeleteDestination(ServiceKey, SocketAddr),
    StartDaemon(SyncDaemon),
    StopDaemon(SyncState),
    SetTimeouts(Timeouts),
    ZeroAll,
    ZeroService(ServiceKey),
    Flush,
}

impl Operation {
    /// The request for it, refused here if the kernel would refuse it with
    /// a bare EINVAL.
    pub fn request(&self) -> Result<Request, RequestError> {
        Ok(match self {
            Operation::CreateService(service) => request::new_service(service)?,
            Operation::UpdateService(service) => request::set_service(service)?,
            Operation::DeleteService(key) => request::delete_service(key),
            Operation::CreateDestination(key, destination) => {
                request::new_destination(key, destination)?
            }
            Operation::UpdateDestination(key, destination) => {
                request::set_destination(key, destination)?
            }
            Operation::DeleteDestination(key, address) => {
                request::delete_destination(key, *address)
            }
            Operation::StartDaemon(daemon) => request::new_daemon(daemon)?,
            Operation::StopDaemon(state) => request::delete_daemon(*state),
            Operation::SetTimeouts(timeouts) => request::set_config(timeouts),
            Operation::ZeroAll => request::zero_all(),
            Operation::ZeroService(key) => request::zero_service(key),
            Operation::Flush => request::flush(),
        })
    }
}

/// Says what the operation does to which object: "create service TCP
/// 10.0.0.1:80", "delete destination 10.0.2.11:80 of service FWM 42".
impl fmt::Display for Operation {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operation::CreateService(service) => {
                write!(formatter, "create service {}", service.key)
            }
            Operation::UpdateService(service) => {
                write!(formatter, "update service {}", service.key)
            }
            Operation::DeleteService(key) => write!(formatter, "delete service {key}"),
            Operation::CreateDestination(key, destination) => write!(
                formatter,
                "create destination {} of service {key}",
                destination.socket_address()
            ),
            Operation::UpdateDestination(key, destination) => write!(
                formatter,
                "update destination {} of service {key}",
                destination.socket_address()
            ),
            Operation::DeleteDestination(key, address) => {
                write!(formatter, "delete destination {address} of service {key}")
            }
            Operation::StartDaemon(daemon) => write!(
                formatter,
                "start the {} sync daemon on {}",
                daemon.state, daemon.interface
            ),
            Operation::StopDaemon(state) => write!(formatter, "stop the {state} sync daemon"),
            Operation::SetTimeouts(_) => formatter.write_str("set the timeouts"),
            Operation::ZeroAll => formatter.write_str("zero all counters"),
            Operation::ZeroService(key) => write!(formatter, "zero the counters of service {key}"),
            Operation::Flush => formatter.write_str("flush all services"),
        }
    }
}

/// Some operations of a batch failed.
#[derive(Debug)]
pub struct BatchError {
    /// The operations refused, by their index in the batch, each with why.
    /// The others before [`BatchError::interrupted`] were applied.
    pub failures: Vec<(usize, Error)>,
    /// The exchange with the kernel itself failed (a socket error, a lost
    /// answer): the outcome of the operation at this index and of every
    /// one after it is unknown; the kernel may have applied some of them.
    pub interrupted: Option<(usize, Error)>,
    pub total: usize,
}

impl fmt::Display for BatchError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((index, error)) = &self.interrupted {
            write!(
                formatter,
                "the exchange with the kernel failed at operation {} of {} ({error}): \
                 it and those after it may or may not have been applied",
                index + 1,
                self.total
            )?;
            if let Some((_, first)) = self.failures.first() {
                write!(
                    formatter,
                    "; before it, {} were refused, the first: {first}",
                    self.failures.len()
                )?;
            }
            return Ok(());
        }
        match self.failures.first() {
            Some((_, first)) => write!(
                formatter,
                "{} of {} operations failed; the first: {first}",
                self.failures.len(),
                self.total
            ),
            None => write!(formatter, "none of {} operations failed", self.total),
        }
    }
}

impl std::error::Error for BatchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match (&self.interrupted, self.failures.first()) {
            (Some((_, error)), _) | (None, Some((_, error))) => Some(error),
            (None, None) => None,
        }
    }
}

impl Client {
    /// Opens a generic netlink socket in the caller's network namespace and
    /// resolves the IPVS family, which loads ip_vs if it is not loaded.
    /// [`Error::Unavailable`] when the kernel has no IPVS and cannot load it.
    pub fn connect() -> Result<Client, Error> {
        let namespace = std::fs::File::open("/proc/thread-self/ns/net")?;
        let traffic = std::sync::Arc::new(traffic::Counters::default());
        Ok(Client {
            transport: Some(Transport::connect(traffic.clone())?),
            namespace,
            traffic,
        })
    }

    /// A second client of the same network namespace, with a socket and
    /// counts of its own: for work that runs beside this client's (a
    /// periodic read of the table beside the changes), from any thread.
    pub fn another(&self) -> Result<Client, Error> {
        let traffic = std::sync::Arc::new(traffic::Counters::default());
        let shared = traffic.clone();
        let transport = in_namespace(&self.namespace, move || Transport::connect(shared))
            .map_err(Error::Io)??;
        Ok(Client {
            transport: Some(transport),
            namespace: self.namespace.try_clone()?,
            traffic,
        })
    }

    /// The netlink messages this client has sent and received so far: the
    /// difference of two readings is what the calls between them cost.
    pub fn traffic(&self) -> Traffic {
        self.traffic.read()
    }

    /// The network namespace the client works in, for a caller that opens
    /// sockets of its own beside it.
    pub fn namespace(&self) -> std::io::Result<std::fs::File> {
        self.namespace.try_clone()
    }

    /// The generic netlink family id the kernel gave IPVS, while connected.
    pub fn family_id(&self) -> Option<u16> {
        self.transport.as_ref().map(Transport::family)
    }

    /// The socket; a new one if the last exchange broke the previous one,
    /// opened in the client's namespace (see [`in_namespace`]).
    fn transport(&mut self) -> Result<&mut Transport, Error> {
        if self.transport.is_none() {
            let traffic = self.traffic.clone();
            let transport = in_namespace(&self.namespace, move || Transport::connect(traffic))
                .map_err(Error::Io)??;
            self.transport = Some(transport);
        }
        Ok(self.transport.as_mut().expect("connected just above"))
    }

    /// Opens a new socket in the client's network namespace, as the client
    /// does by itself after an exchange fails: for instance after ip_vs was
    /// unloaded and loaded again, which gives IPVS a new family id.
    pub fn reconnect(&mut self) -> Result<(), Error> {
        self.transport = None;
        self.transport().map(|_| ())
    }

    /// Drops the socket after an error that leaves it in an unknown state:
    /// unread answers, or a dump the kernel is still running, would be read
    /// as the answers to the next requests.
    fn check<T>(&mut self, result: Result<T, Error>) -> Result<T, Error> {
        if let Err(error) = &result
            && error.breaks_the_exchange()
        {
            self.transport = None;
        }
        result
    }

    /// The IPVS version and connection table size.
    pub fn info(&mut self) -> Result<Info, Error> {
        let reply = self.get(request::get_info(), || "read IPVS info".into())?;
        Ok(Info::from_reply(&reply)?)
    }

    /// The TCP, TCP FIN and UDP timeouts, in seconds.
    pub fn timeouts(&mut self) -> Result<Timeouts, Error> {
        let reply = self.get(request::get_config(), || "read the timeouts".into())?;
        Ok(Timeouts::from_reply(&reply)?)
    }

    pub fn set_timeouts(&mut self, timeouts: &Timeouts) -> Result<(), Error> {
        self.apply_one(Operation::SetTimeouts(*timeouts))
    }

    /// Every service, with its statistics.
    ///
    /// The kernel keeps one service table for all network namespaces and a
    /// dump that spans several datagrams resumes by position in it, so a
    /// service added or removed in any namespace meanwhile shifts the
    /// position: the dump may repeat a service (dropped here) or skip one
    /// (which nothing shows: IPVS does not flag interrupted dumps).
    pub fn services(&mut self) -> Result<Vec<Service>, Error> {
        let replies = self.dump(
            request::dump_services(),
            || "list services".into(),
            |command, attributes| Ok(Service::decode_reply(command, attributes)?),
        )?;
        let mut seen = std::collections::HashSet::with_capacity(replies.len());
        let mut services = Vec::with_capacity(replies.len());
        for service in replies {
            if seen.insert(service.key) {
                services.push(service);
            }
        }
        Ok(services)
    }

    /// One service; an error with ESRCH if there is none with that key.
    pub fn service(&mut self, key: &ServiceKey) -> Result<Service, Error> {
        let reply = self.get(request::get_service(key), || format!("read service {key}"))?;
        Ok(Service::from_reply(&reply)?)
    }

    pub fn create_service(&mut self, service: &Service) -> Result<(), Error> {
        self.apply_one(Operation::CreateService(service.clone()))
    }

    pub fn update_service(&mut self, service: &Service) -> Result<(), Error> {
        self.apply_one(Operation::UpdateService(service.clone()))
    }

    pub fn delete_service(&mut self, key: &ServiceKey) -> Result<(), Error> {
        self.apply_one(Operation::DeleteService(*key))
    }

    /// The destinations of a service, with counters and statistics.
    ///
    /// The kernel answers an empty list, not an error, for a service that
    /// does not exist.
    pub fn destinations(&mut self, key: &ServiceKey) -> Result<Vec<Destination>, Error> {
        self.dump(
            request::dump_destinations(key),
            || format!("list the destinations of service {key}"),
            |command, attributes| Ok(Destination::decode_reply(command, attributes)?),
        )
    }

    /// The kernel's text listing of the client's namespace
    /// (`/proc/net/ip_vs`): every destination of every service in one read,
    /// where netlink needs a dump per service; see [`crate::listing`] for
    /// what it lacks.
    pub fn listing(
        &self,
    ) -> Result<Vec<crate::listing::ListedService>, crate::listing::ListingError> {
        // /proc shows the reading thread's namespace.
        in_namespace(&self.namespace, crate::listing::read)
            .map_err(crate::listing::ListingError::Read)?
    }

    /// The destinations of each of `keys`, in order (see
    /// [`Client::map_destinations`]).
    pub fn destinations_of(&mut self, keys: &[ServiceKey]) -> Result<Vec<Vec<Destination>>, Error> {
        self.map_destinations(keys, |_, destinations| destinations)
            .into_iter()
            .collect()
    }

    /// The destinations of each of `keys`, each list handed to `each` with
    /// its index, in the thread that read it; what `each` returns comes
    /// back in the order of `keys`.
    ///
    /// A large table is read over several sockets at once, by one thread
    /// each: the kernel can run only one dump per socket and needs one per
    /// service, and reading the answers (and whatever `each` does, such as
    /// formatting them) costs more than the kernel's work, so the threads
    /// share it. A thread that cannot open its socket leaves its share to
    /// the calling thread.
    pub fn map_destinations<T: Send>(
        &mut self,
        keys: &[ServiceKey],
        each: impl Fn(usize, Result<Vec<Destination>, Error>) -> T + Sync,
    ) -> Vec<T> {
        let workers = std::thread::available_parallelism()
            .map_or(1, |count| count.get())
            .min(MOST_DUMP_THREADS)
            .min(keys.len().div_ceil(SERVICES_PER_DUMP_THREAD))
            .max(1);
        let share = keys.len().div_ceil(workers).max(1);
        // One share: the keys from index `first` on, read with `client`.
        let read = |client: &mut Client, first: usize, share: &[ServiceKey]| -> Vec<T> {
            share
                .iter()
                .enumerate()
                .map(|(index, key)| each(first + index, client.destinations(key)))
                .collect()
        };
        // The workers' own handle on the namespace, so that `self` stays
        // free for the calling thread's share.
        let namespace = match self.namespace.try_clone() {
            Ok(namespace) if workers > 1 => namespace,
            _ => return read(self, 0, keys),
        };
        let namespace = &namespace;
        let read = &read;
        let traffic = self.traffic.clone();
        let traffic = &traffic;
        let shares: Vec<(usize, &[ServiceKey])> = keys
            .chunks(share)
            .enumerate()
            .map(|(part, keys)| (part * share, keys))
            .collect();
        let (mine, others) = std::thread::scope(|scope| {
            let others: Vec<_> = shares[1..]
                .iter()
                .map(|&(first, keys)| {
                    scope.spawn(move || {
                        let mut client = Client {
                            transport: Some(connect_in(namespace, traffic.clone())?),
                            namespace: namespace.try_clone()?,
                            traffic: traffic.clone(),
                        };
                        Ok::<_, Error>(read(&mut client, first, keys))
                    })
                })
                .collect();
            let mine = read(self, 0, shares[0].1);
            let others: Vec<_> = others
                .into_iter()
                .map(|handle| {
                    handle
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect();
            (mine, others)
        });
        let mut results = mine;
        for (outcome, &(first, keys)) in others.into_iter().zip(&shares[1..]) {
            match outcome {
                Ok(share) => results.extend(share),
                Err(_) => results.extend(read(self, first, keys)),
            }
        }
        results
    }

    pub fn create_destination(
        &mut self,
        key: &ServiceKey,
        destination: &Destination,
    ) -> Result<(), Error> {
        self.apply_one(Operation::CreateDestination(*key, destination.clone()))
    }

    pub fn update_destination(
        &mut self,
        key: &ServiceKey,
        destination: &Destination,
    ) -> Result<(), Error> {
        self.apply_one(Operation::UpdateDestination(*key, destination.clone()))
    }

    pub fn delete_destination(
        &mut self,
        key: &ServiceKey,
        address: SocketAddr,
    ) -> Result<(), Error> {
        self.apply_one(Operation::DeleteDestination(*key, address))
    }

    /// The running sync daemons (none, one or both of master and backup).
    pub fn daemons(&mut self) -> Result<Vec<SyncDaemon>, Error> {
        let replies = self.dump_messages(request::dump_daemons(), || "list sync daemons".into())?;
        replies
            .iter()
            .map(|reply| Ok(SyncDaemon::from_reply(reply)?))
            .collect()
    }

    pub fn start_daemon(&mut self, daemon: &SyncDaemon) -> Result<(), Error> {
        self.apply_one(Operation::StartDaemon(daemon.clone()))
    }

    pub fn stop_daemon(&mut self, state: SyncState) -> Result<(), Error> {
        self.apply_one(Operation::StopDaemon(state))
    }

    /// Zeroes the counters of every service and destination.
    pub fn zero_all(&mut self) -> Result<(), Error> {
        self.apply_one(Operation::ZeroAll)
    }

    /// Zeroes the counters of one service and its destinations.
    pub fn zero_service(&mut self, key: &ServiceKey) -> Result<(), Error> {
        self.apply_one(Operation::ZeroService(*key))
    }

    /// Deletes every service and destination.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.apply_one(Operation::Flush)
    }

    /// Applies `operations` in order, pipelined: many requests per system
    /// call, acknowledgements collected after.
    ///
    /// Every operation is checked before anything is sent: if one would be
    /// refused for its content, nothing is applied. The kernel then works
    /// through the batch in order and goes on past a refusal, as it would
    /// for separate calls (so a destination whose service was refused is
    /// refused too); every refusal is reported with the operation's index.
    pub fn apply(&mut self, operations: &[Operation]) -> Result<(), BatchError> {
        let batch = EncodedBatch::new(operations)?;
        self.apply_encoded(operations, &batch)
    }

    /// Applies `operations` as [`Client::apply`] does, from their batch
    /// encoded beforehand ([`EncodedBatch::new`], on any thread): the
    /// library's own work left here is copying each message into its
    /// datagram. `operations` name what the kernel refused.
    pub fn apply_encoded(
        &mut self,
        operations: &[Operation],
        batch: &EncodedBatch,
    ) -> Result<(), BatchError> {
        assert_eq!(
            operations.len(),
            batch.len(),
            "a batch encodes its operations"
        );
        self.send_batch(batch, |index| operations[index].to_string())
    }

    /// Applies requests built beforehand with [`Operation::request`], as
    /// [`Client::apply`] applies operations: for a caller that checks each
    /// operation as it reads it and should not build its request twice.
    /// Refusals name the request's command.
    pub fn apply_requests(&mut self, requests: &[Request]) -> Result<(), BatchError> {
        self.send_batch(&EncodedBatch::of_requests(requests), |index| {
            format!("{:?}", requests[index].message.command)
        })
    }

    fn send_batch(
        &mut self,
        batch: &EncodedBatch,
        describe: impl Fn(usize) -> String,
    ) -> Result<(), BatchError> {
        let mut failures = Vec::new();
        let exchange = match self.transport() {
            Ok(transport) => transport.execute(batch),
            Err(error) => Exchange {
                outcomes: Vec::new(),
                error: Some(error),
            },
        };
        for (index, outcome) in exchange.outcomes.iter().enumerate() {
            if let Err(refusal) = outcome {
                failures.push((
                    index,
                    kernel_error(&describe(index), batch.command(index), refusal),
                ));
            }
        }
        let interrupted = exchange.error.map(|error| (exchange.outcomes.len(), error));
        if let Some((_, error)) = &interrupted
            && error.breaks_the_exchange()
        {
            self.transport = None;
        }
        if failures.is_empty() && interrupted.is_none() {
            Ok(())
        } else {
            Err(BatchError {
                failures,
                interrupted,
                total: batch.len(),
            })
        }
    }

    fn apply_one(&mut self, operation: Operation) -> Result<(), Error> {
        self.apply(std::slice::from_ref(&operation))
            .map_err(
                |batch| match (batch.interrupted, batch.failures.into_iter().next()) {
                    (Some((_, error)), _) | (None, Some((_, error))) => error,
                    (None, None) => unreachable!("a batch error has a failure"),
                },
            )
    }

    /// A request answered by one message.
    fn get(
        &mut self,
        request: Request,
        describe: impl Fn() -> String,
    ) -> Result<IpvsMessage, Error> {
        debug_assert_eq!(request.kind, RequestKind::Get);
        let exchange = self
            .transport()?
            .execute(&EncodedBatch::of_requests(std::slice::from_ref(&request)));
        if let Some(error) = exchange.error {
            return self.check(Err(error));
        }
        let mut replies = exchange
            .outcomes
            .into_iter()
            .next()
            .expect("one outcome per request")
            .map_err(|refusal| kernel_error(&describe(), request.message.command, &refusal))?;
        match replies.len() {
            1 => Ok(replies.remove(0)),
            count => Err(Error::Protocol(format!(
                "{}: {count} replies, expected one",
                describe()
            ))),
        }
    }

    /// A dump's entries, each read by `decode` from its command and
    /// attribute bytes.
    fn dump<T>(
        &mut self,
        request: Request,
        describe: impl Fn() -> String,
        decode: impl FnMut(IpvsCommand, &[u8]) -> Result<T, Error>,
    ) -> Result<Vec<T>, Error> {
        debug_assert_eq!(request.kind, RequestKind::Dump);
        let outcome = self.transport()?.dump(&request, decode);
        self.check(outcome)?
            .map_err(|refusal| kernel_error(&describe(), request.message.command, &refusal))
    }

    /// A dump's entries as whole messages.
    fn dump_messages(
        &mut self,
        request: Request,
        describe: impl Fn() -> String,
    ) -> Result<Vec<IpvsMessage>, Error> {
        self.dump(request, describe, |command, attributes| {
            let header = GenlHeader {
                cmd: command.into(),
                version: crate::IPVS_GENL_VERSION,
            };
            Ok(IpvsMessage::parse_with_param(attributes, header)?)
        })
    }
}

/// Opens a socket in `namespace` from a worker thread of the caller's,
/// which it moves there.
fn connect_in(
    namespace: &std::fs::File,
    traffic: std::sync::Arc<traffic::Counters>,
) -> Result<Transport, Error> {
    fulcrum_netns::enter(namespace)?;
    Transport::connect(traffic)
}

/// At most this many threads read the destinations of a table.
const MOST_DUMP_THREADS: usize = 4;
/// Fewer services than this per thread and a thread costs more than it
/// saves (its socket, and resolving the family).
const SERVICES_PER_DUMP_THREAD: usize = 64;

/// A refusal in words: ipvsadm's for the command and errno where it has
/// some, else the C library's, and the kernel's own explanation if it gave
/// one.
fn kernel_error(operation: &str, command: IpvsCommand, refusal: &Refusal) -> Error {
    let errno = refusal.errno;
    let mut reason = match (command, errno.0) {
        // ipvsadm has no words for it (strerror says "Numerical result out
        // of range"); say what the kernel checks.
        (IpvsCommand::NewDestination | IpvsCommand::SetDestination, libc::ERANGE) => {
            "Weight is negative or lower threshold above upper threshold".to_owned()
        }
        (command, errno) => kernel_error_message(command, errno)
            .map(str::to_owned)
            .unwrap_or_else(|| refusal.errno.description()),
    };
    if let Some(message) = &refusal.message {
        reason = format!("{reason} ({message})");
    }
    Error::Kernel {
        operation: operation.to_owned(),
        errno,
        reason,
    }
}

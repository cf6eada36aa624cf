//! Running a command line against IPVS: ipvsadm's `main`,
//! `process_options` after parsing, `restore_table` and the listings'
//! data gathering (the text itself is `format`'s).
//!
//! Everything that touches IPVS goes through [`ipvs::Client`]. Messages,
//! exit statuses and where output goes follow `docs/ipvsadm.md` §1, §5-§9.

use std::io::{BufRead, Write};
use std::net::SocketAddr;

use ipvs::{
    Client, Destination, Family, Forwarding, Info, IpvsCommand, Netmask, Operation, Protocol,
    RequestError, Service, ServiceFlags, ServiceKey, SyncDaemon, SyncState, Timeouts, Tunnel,
    TunnelChecksum, TunnelKind,
};

use crate::cli::{self, Column, Command, CommandLine, ErrorKind, Parsed};
use crate::format::{self, ListKind, ListOptions};
use crate::json;

/// The program ends now with this status (ipvsadm's `exit()` from deep
/// inside a command).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit(pub i32);

/// `ipvsadm` as a function: `args` is argv (`args[0]` the program name as
/// invoked), `input` what `-R` reads. Returns the exit status; the caller
/// flushes `out`.
pub fn run(
    args: &[Vec<u8>],
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let program = args.first().cloned().unwrap_or_else(|| b"ipvsadm".to_vec());
    let (client, info) = match init() {
        Ok(connected) => connected,
        Err(errno) => {
            let _ = write!(
                err,
                "Can't initialize ipvs: {}\nAre you sure that IP Virtual Server is built in the \
                 kernel or as module?\n",
                error_message(IpvsCommand::GetInfo, errno)
            );
            return 2;
        }
    };
    if info.version.code() < 0x01_01_04 {
        let _ = write!(
            err,
            "Warning: IPVS version mismatch: \n  Kernel compiled with IPVS version {}\n  ipvsadm \
             v1.31  requires minimum IPVS version 1.1.4\n\n",
            info.version
        );
    }
    let mut runner = Runner {
        client,
        info,
        program,
        input,
        out,
        err,
        function: IpvsCommand::GetInfo,
    };
    if args.len() <= 1 {
        return match runner.list_all(false, &list_options(0)) {
            Ok(()) => 0,
            Err(Exit(status)) => status,
        };
    }
    match runner.process_options(args, false) {
        Ok(0) => 0,
        Ok(_) => 255,
        Err(Exit(status)) => status,
    }
}

/// `ipvs_init()`, then `modprobe -- ip_vs` and once more if it failed
/// (§9.1). The error is the errno ipvsadm would report.
fn init() -> Result<(Client, Info), i32> {
    fn attempt() -> Result<(Client, Info), i32> {
        let mut client = Client::connect().map_err(|error| match error {
            ipvs::Error::Unavailable => sockopt_errno(),
            other => errno_of(&other),
        })?;
        let info = client.info().map_err(|error| errno_of(&error))?;
        Ok((client, info))
    }
    attempt().or_else(|first| {
        let loaded = std::process::Command::new("/sbin/modprobe")
            .args(["--", "ip_vs"])
            .status()
            .is_ok_and(|status| status.success());
        if loaded { attempt() } else { Err(first) }
    })
}

/// Without the IPVS netlink family, libipvs falls back to the old socket
/// option interface: a raw socket (EPERM for an unprivileged user), then
/// `IP_VS_SO_GET_INFO`, which fails with ENOPROTOOPT when IPVS is absent.
fn sockopt_errno() -> i32 {
    // SAFETY: plain socket(2) and close(2) on the descriptor it returned.
    unsafe {
        let socket = libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_RAW);
        if socket < 0 {
            return std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EINVAL);
        }
        libc::close(socket);
    }
    libc::ENOPROTOOPT
}

/// The errno libipvs would have seen: the kernel's; for requests the
/// library refuses before sending, the errno the kernel answers them with;
/// EINVAL when the exchange failed without an answer (§9.2).
pub fn errno_of(error: &ipvs::Error) -> i32 {
    match error {
        ipvs::Error::Kernel { errno, .. } => errno.0,
        ipvs::Error::Invalid { source, .. } => refused_errno(source),
        _ => libc::EINVAL,
    }
}

/// The errno the kernel answers a request with that the library refuses
/// before sending.
fn refused_errno(error: &RequestError) -> i32 {
    match error {
        RequestError::Weight(_) | RequestError::Thresholds { .. } => libc::ERANGE,
        _ => libc::EINVAL,
    }
}

/// `ipvs_strerror(errno)` with `function` the libipvs call that ran last
/// (as an IPVS command).
pub fn error_message(function: IpvsCommand, errno: i32) -> String {
    match (function, errno) {
        // libipvs has no ERANGE row: strerror (the ipvs crate adds one).
        (_, libc::ERANGE) => ipvs::Errno(errno).description(),
        // ipvs_get_dests' row, which the ipvs crate's table lacks.
        (IpvsCommand::GetDestination, libc::ESRCH) => "No such service".to_owned(),
        _ => ipvs::kernel_error_message(function, errno)
            .map(str::to_owned)
            .unwrap_or_else(|| ipvs::Errno(errno).description()),
    }
}

/// What a `-L --json` line's options add to a service listing: unlike the
/// text formats, `--stats` and `--rate` both count; `--thresholds`,
/// `--persistent-conn` and `--tun-info` add nothing, their fields being
/// always there.
pub fn json_options(options: u64) -> json::ServiceOptions {
    let has = |column: Column| options & column.bit() != 0;
    json::ServiceOptions {
        statistics: has(Column::Stats),
        rates: has(Column::Rate),
        sort: !has(Column::NoSort),
    }
}

/// The listing format from the options of a `-L` line (§5.2 precedence:
/// stats, rate, thresholds, persistent-conn, tun-info).
pub fn list_options(options: u64) -> ListOptions {
    let has = |column: Column| options & column.bit() != 0;
    let kind = if has(Column::Stats) {
        ListKind::Stats
    } else if has(Column::Rate) {
        ListKind::Rate
    } else if has(Column::Thresholds) {
        ListKind::Thresholds
    } else if has(Column::PersistentConn) {
        ListKind::PersistentConnections
    } else if has(Column::TunInfo) {
        ListKind::TunnelInfo
    } else {
        ListKind::Default
    };
    ListOptions {
        kind,
        numeric: has(Column::Numeric),
        exact: has(Column::Exact),
        sort: !has(Column::NoSort),
    }
}

struct Runner<'io> {
    client: Client,
    /// From the start of the program, as ipvsadm's `ipvs_info`.
    info: Info,
    program: Vec<u8>,
    input: &'io mut dyn BufRead,
    out: &'io mut dyn Write,
    err: &'io mut dyn Write,
    /// libipvs's `ipvs_func`: the last call that set it, which picks the
    /// error messages (a flush or a service dump leaves it as it was).
    function: IpvsCommand,
}

impl Runner<'_> {
    fn print(&mut self, text: &[u8]) {
        let _ = self.out.write_all(text);
    }

    fn complain(&mut self, text: &[u8]) {
        let _ = self.err.write_all(text);
    }

    fn complain_errno(&mut self, errno: i32) {
        let message = error_message(self.function, errno);
        let _ = writeln!(self.err, "{message}");
    }

    /// `process_options`: Ok(0) or Ok(-1) is its return value.
    fn process_options(&mut self, argv: &[Vec<u8>], reading_stdin: bool) -> Result<i32, Exit> {
        let line = match cli::parse_command_line(argv, reading_stdin) {
            Ok(Parsed::Help) => {
                let text = cli::help_text(argv.first().map(Vec::as_slice).unwrap_or_default());
                self.print(&text);
                return Err(Exit(0));
            }
            Ok(Parsed::Version) => {
                self.print(cli::VERSION_LINE.as_bytes());
                return Err(Exit(0));
            }
            Ok(Parsed::Command(line)) => line,
            Err(error) => {
                self.complain(&error.message);
                return match error.kind {
                    ErrorKind::Popt => Ok(-1),
                    ErrorKind::TryHelp | ErrorKind::Fail => Err(Exit(error.status())),
                };
            }
        };
        match line.command {
            Command::List => {
                self.list(&line)?;
                Ok(0)
            }
            Command::Save => {
                let options = list_options(line.options);
                self.list_all(true, &options)?;
                Ok(0)
            }
            Command::Restore if line.atomic => self.restore_atomic(),
            Command::Restore => self.restore(),
            _ => {
                let (operation, function) = operation(&line);
                Ok(self.change(operation, function))
            }
        }
    }

    /// One change; its refusal printed. 0 or -1.
    fn change(&mut self, operation: Operation, function: Option<IpvsCommand>) -> i32 {
        if let Some(function) = function {
            self.function = function;
        }
        match self.client.apply(std::slice::from_ref(&operation)) {
            Ok(()) => 0,
            Err(batch) => {
                let errno = batch
                    .interrupted
                    .as_ref()
                    .or(batch.failures.first())
                    .map(|(_, error)| errno_of(error))
                    .unwrap_or(libc::EINVAL);
                self.complain_errno(errno);
                -1
            }
        }
    }

    /// The `-L` dispatch (§5).
    fn list(&mut self, line: &CommandLine) -> Result<(), Exit> {
        if line.json {
            return self.list_json(line);
        }
        let options = list_options(line.options);
        if line.has(Column::Connection) {
            self.list_connections(line.has(Column::Numeric), line.has(Column::PersistentConn))
        } else if line.has(Column::Service) {
            self.list_service(&service_key(&line.service), &options)
        } else if line.has(Column::Timeout) {
            self.function = IpvsCommand::GetConfig;
            let timeouts = self.client.timeouts().map_err(|_| Exit(1))?;
            let mut text = String::new();
            format::timeouts(&timeouts, &mut text);
            self.print(text.as_bytes());
            Ok(())
        } else if line.has(Column::Daemon) {
            self.function = IpvsCommand::GetDaemon;
            let daemons = self.client.daemons().map_err(|_| Exit(1))?;
            let mut text = String::new();
            format::daemons(&daemons, &mut text);
            self.print(text.as_bytes());
            Ok(())
        } else {
            self.list_all(false, &options)
        }
    }

    /// `-L --json`: the same dispatch, the same kernel requests, messages
    /// and exit statuses as the text listings, but the document is printed
    /// only once everything has been fetched, so a failure leaves nothing on
    /// stdout (never half a document).
    fn list_json(&mut self, line: &CommandLine) -> Result<(), Exit> {
        let document = if line.has(Column::Connection) {
            let Ok(bytes) = std::fs::read(format::CONNECTIONS_FILE) else {
                self.complain(format!("{}\n", format::CANNOT_OPEN_CONNECTIONS).as_bytes());
                return Err(Exit(1));
            };
            match json::connections(&bytes) {
                Ok(document) => document,
                Err(error) => {
                    self.complain(format!("{error}\n").as_bytes());
                    return Err(Exit(1));
                }
            }
        } else if line.has(Column::Service) {
            self.function = IpvsCommand::GetService;
            let service = self
                .client
                .service(&service_key(&line.service))
                .map_err(|error| self.fail_with(&error))?;
            let destinations = self.destinations(&service.key)?;
            json::services(
                &self.info,
                &[(service, destinations)],
                &json_options(line.options),
            )
        } else if line.has(Column::Timeout) {
            self.function = IpvsCommand::GetConfig;
            json::timeouts(&self.client.timeouts().map_err(|_| Exit(1))?)
        } else if line.has(Column::Daemon) {
            self.function = IpvsCommand::GetDaemon;
            json::daemons(&self.client.daemons().map_err(|_| Exit(1))?)
        } else {
            let services = self
                .client
                .services()
                .map_err(|error| self.fail_with(&error))?;
            let mut table = Vec::with_capacity(services.len());
            for service in services {
                let destinations = self.destinations(&service.key)?;
                table.push((service, destinations));
            }
            json::services(&self.info, &table, &json_options(line.options))
        };
        self.print(document.as_bytes());
        Ok(())
    }

    /// A service's destinations, or the failure printed as ipvsadm would.
    fn destinations(&mut self, key: &ServiceKey) -> Result<Vec<Destination>, Exit> {
        self.function = IpvsCommand::GetDestination;
        self.client
            .destinations(key)
            .map_err(|error| self.fail_with(&error))
    }

    /// A failed listing request: libipvs's message, exit 1.
    fn fail_with(&mut self, error: &ipvs::Error) -> Exit {
        self.complain_errno(errno_of(error));
        Exit(1)
    }

    /// `list_all`: the whole table, as a listing or (`save`) as `-S` rules,
    /// printed service by service as the destinations are fetched, so a
    /// failed dump leaves what ipvsadm would have printed (§5.1, §7).
    fn list_all(&mut self, save: bool, options: &ListOptions) -> Result<(), Exit> {
        let resolver = format::SystemResolver;
        let mut text = String::new();
        if !save {
            format::version(&self.info, &mut text);
            self.print(text.as_bytes());
        }
        let mut services = match self.client.services() {
            Ok(services) => services,
            Err(error) => {
                self.complain_errno(errno_of(&error));
                return Err(Exit(1));
            }
        };
        if save || options.sort {
            format::sort_services(&mut services);
        }
        if !save {
            text.clear();
            format::title(options.kind, &mut text);
            self.print(text.as_bytes());
        }
        // The plain listing prints nothing of a destination that the
        // kernel's text listing lacks: there, one read replaces a dump per
        // service. A service the text does not show for certain (changed
        // between the two reads, or a firewall mark both families use) is
        // dumped as before, and so is every one if the text cannot be read.
        let mut listed = if !save && options.kind == ListKind::Default {
            match self.client.listing() {
                Ok(listing) => ipvs::listing::match_services(&services, listing),
                Err(_) => Vec::new(),
            }
        } else {
            Vec::new()
        };
        listed.resize_with(services.len(), || None);
        // The rest fetched and formatted by several threads for a large
        // table, then printed in order up to the first service whose
        // destinations could not be read: what ipvsadm, printing as it goes,
        // would have left.
        self.function = IpvsCommand::GetDestination;
        let (listed_indexes, dumped_indexes): (Vec<usize>, Vec<usize>) =
            (0..services.len()).partition(|&index| listed[index].is_some());
        let keys: Vec<ServiceKey> = dumped_indexes
            .iter()
            .map(|&index| services[index].key)
            .collect();
        let format_entry = |index: usize, destinations: &[Destination]| {
            let service = &services[index];
            let mut text = String::new();
            if save {
                format::save_entry(service, destinations, options.numeric, &resolver, &mut text);
            } else {
                format::service_entry(service, destinations, options, &resolver, &mut text);
            }
            text
        };
        let dumped = self
            .client
            .map_destinations(&keys, |position, destinations| {
                let destinations = destinations.map_err(|error| errno_of(&error))?;
                Ok(format_entry(dumped_indexes[position], &destinations))
            });
        let listed_entries = in_parallel(&listed_indexes, |&index| {
            let destinations: Vec<Destination> = listed[index]
                .as_deref()
                .unwrap_or_default()
                .iter()
                // The plain listing prints nothing the text lacks
                // (thresholds, tunnel parameters, persistent connections,
                // statistics). The kernel names forwarding methods 4 to 7
                // `Masq` there, so they print as `Masq` where ipvsadm prints
                // `(null)` (docs/ipvsadm-compat.md).
                .map(ipvs::listing::ListedDestination::to_destination)
                .collect();
            format_entry(index, &destinations)
        });
        let mut entries: Vec<Option<Result<String, i32>>> = Vec::new();
        entries.resize_with(services.len(), || None);
        for (index, entry) in listed_indexes.iter().zip(listed_entries) {
            entries[*index] = Some(Ok(entry));
        }
        for (index, entry) in dumped_indexes.iter().zip(dumped) {
            entries[*index] = Some(entry);
        }
        for entry in entries.into_iter().flatten() {
            match entry {
                Ok(text) => self.print(text.as_bytes()),
                Err(errno) => {
                    self.complain_errno(errno);
                    return Err(Exit(1));
                }
            }
        }
        Ok(())
    }

    /// `list_service` (§5.7): no version line.
    fn list_service(&mut self, key: &ServiceKey, options: &ListOptions) -> Result<(), Exit> {
        self.function = IpvsCommand::GetService;
        let service = match self.client.service(key) {
            Ok(service) => service,
            Err(error) => {
                self.complain_errno(errno_of(&error));
                return Err(Exit(1));
            }
        };
        let mut text = String::new();
        format::title(options.kind, &mut text);
        self.print(text.as_bytes());
        self.function = IpvsCommand::GetDestination;
        let destinations = match self.client.destinations(&service.key) {
            Ok(destinations) => destinations,
            Err(error) => {
                self.complain_errno(errno_of(&error));
                return Err(Exit(1));
            }
        };
        text.clear();
        format::service_entry(
            &service,
            &destinations,
            options,
            &format::SystemResolver,
            &mut text,
        );
        self.print(text.as_bytes());
        Ok(())
    }

    /// `list_conn` (§5.10).
    fn list_connections(&mut self, numeric: bool, persistent: bool) -> Result<(), Exit> {
        let Ok(bytes) = std::fs::read(format::CONNECTIONS_FILE) else {
            self.complain(format!("{}\n", format::CANNOT_OPEN_CONNECTIONS).as_bytes());
            return Err(Exit(1));
        };
        let mut out = String::new();
        let result = format::connections(&bytes, numeric, persistent, &mut out);
        self.print(out.as_bytes());
        if let Err(error) = result {
            if let Some(message) = error.message() {
                self.complain(format!("{message}\n").as_bytes());
            }
            return Err(Exit(1));
        }
        Ok(())
    }

    /// `restore_table` (§8). ipvsadm runs each line as it reads it, one
    /// exchange with the kernel per line. Here each run of consecutive
    /// changes is read, checked and built into requests by this thread
    /// while another sends them in pipelined chunks, up to a line that is
    /// not a change (a listing, a line that does not parse, ...) or the end
    /// of the input. Refusals are then reported in line order, in
    /// libipvs's words for each line: the same output and exit status as
    /// ipvsadm's.
    fn restore(&mut self) -> Result<i32, Exit> {
        let mut result = 0;
        loop {
            let (outcomes, stopped_at) = self.restore_changes();
            if !outcomes.is_empty() {
                result = self.report(outcomes);
            }
            match stopped_at {
                Some(argv) => result = self.process_options(&argv, true)?,
                None => return Ok(result),
            }
        }
    }

    /// Reads and applies changes until a line that is not one (returned)
    /// or the end of the input: each change's libipvs call and errno.
    fn restore_changes(&mut self) -> (Vec<Outcome>, Option<Vec<Vec<u8>>>) {
        let Runner {
            client,
            input,
            program,
            ..
        } = self;
        std::thread::scope(|scope| {
            let (sender, receiver) = std::sync::mpsc::sync_channel::<Vec<Change>>(4);
            let applier = scope.spawn(move || {
                let mut outcomes = Vec::new();
                for chunk in receiver {
                    apply_chunk(client, chunk, &mut outcomes);
                }
                outcomes
            });
            // Small at first, so that the kernel starts working early.
            let mut chunk_size = FIRST_RESTORE_CHUNK;
            let mut chunk = Vec::with_capacity(chunk_size);
            let mut stopped_at = None;
            while let Some(words) = read_restore_line(*input) {
                if words.is_empty() {
                    continue;
                }
                let mut argv = Vec::with_capacity(words.len() + 1);
                argv.push(program.clone());
                argv.extend(words);
                if let Ok(Parsed::Command(line)) = cli::parse_command_line(&argv, true)
                    && !matches!(
                        line.command,
                        Command::List | Command::Save | Command::Restore
                    )
                {
                    let (operation, function) = operation(&line);
                    chunk.push(Change {
                        request: operation.request().map_err(|error| refused_errno(&error)),
                        function,
                    });
                    if chunk.len() == chunk_size {
                        chunk_size = RESTORE_CHUNK;
                        let full = std::mem::replace(&mut chunk, Vec::with_capacity(chunk_size));
                        if sender.send(full).is_err() {
                            break;
                        }
                    }
                    continue;
                }
                stopped_at = Some(argv);
                break;
            }
            if !chunk.is_empty() {
                let _ = sender.send(chunk);
            }
            drop(sender);
            let outcomes = applier
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (outcomes, stopped_at)
        })
    }

    /// Reports each change's refusal in order, as if each had been applied
    /// alone; the status of the last (0 or -1).
    fn report(&mut self, outcomes: Vec<Outcome>) -> i32 {
        let mut status = 0;
        for outcome in outcomes {
            if let Some(function) = outcome.function {
                self.function = function;
            }
            status = 0;
            if let Some(errno) = outcome.errno {
                self.complain_errno(errno);
                status = -1;
            }
        }
        status
    }

    /// `-R --atomic` (ipvsctl only): every line parsed and checked first;
    /// if one is wrong, it is named with why and nothing is applied. Only
    /// changes are allowed. Then all are sent as one batch; each refusal
    /// is printed as `-R` would, and the status is 255 if any.
    fn restore_atomic(&mut self) -> Result<i32, Exit> {
        let mut requests = Vec::new();
        let mut functions = Vec::new();
        let mut number = 0;
        while let Some(words) = read_restore_line(self.input) {
            number += 1;
            if words.is_empty() {
                continue;
            }
            let mut argv = Vec::with_capacity(words.len() + 1);
            argv.push(self.program.clone());
            argv.extend(words);
            let why = match cli::parse_command_line(&argv, true) {
                Ok(Parsed::Command(line)) => match line.command {
                    Command::List | Command::Save | Command::Restore => {
                        Err(format!("-{}: not a change", line.command.name()))
                    }
                    _ => {
                        let (operation, function) = operation(&line);
                        match operation.request() {
                            Ok(request) => {
                                requests.push(request);
                                functions.push(function);
                                Ok(())
                            }
                            Err(error) => Err(error.to_string()),
                        }
                    }
                },
                Ok(Parsed::Help | Parsed::Version) => Err("-h and -v are not changes".to_owned()),
                Err(error) => Err(error.to_string()),
            };
            if let Err(why) = why {
                let _ = writeln!(self.err, "line {number}: {why}; nothing was applied");
                return Err(Exit(2));
            }
        }
        if requests.is_empty() {
            return Ok(0);
        }
        match self.client.apply_requests(&requests) {
            Ok(()) => Ok(0),
            Err(batch) => {
                for (index, error) in batch.failures.iter().chain(batch.interrupted.iter()) {
                    if let Some(function) = functions[*index] {
                        self.function = function;
                    }
                    self.complain_errno(errno_of(error));
                }
                Ok(-1)
            }
        }
    }
}

/// How many changes `-R` sends per exchange while it reads on: enough to
/// fill datagrams, few enough that sending starts early.
const RESTORE_CHUNK: usize = 1024;
/// The first chunk of a run of changes.
const FIRST_RESTORE_CHUNK: usize = 64;

/// A change read by `-R`: its request, or the errno the kernel would have
/// refused it with (the library refuses it before sending), with the
/// libipvs call whose words report a refusal.
struct Change {
    request: Result<ipvs::Request, i32>,
    function: Option<IpvsCommand>,
}

/// What became of a change.
struct Outcome {
    function: Option<IpvsCommand>,
    errno: Option<i32>,
}

/// Sends a chunk's requests as one pipelined batch and appends each
/// change's outcome. A change refused before sending does not split the
/// batch: it would not have reached the kernel anyway.
fn apply_chunk(client: &mut Client, chunk: Vec<Change>, outcomes: &mut Vec<Outcome>) {
    let mut requests = Vec::with_capacity(chunk.len());
    let mut positions = Vec::with_capacity(chunk.len());
    for change in chunk {
        let errno = match change.request {
            Ok(request) => {
                positions.push(outcomes.len());
                requests.push(request);
                None
            }
            Err(errno) => Some(errno),
        };
        outcomes.push(Outcome {
            function: change.function,
            errno,
        });
    }
    if requests.is_empty() {
        return;
    }
    if let Err(batch) = client.apply_requests(&requests) {
        for (index, error) in &batch.failures {
            outcomes[positions[*index]].errno = Some(errno_of(error));
        }
        // An exchange that broke midway: what happened to the changes from
        // there on is unknown, so each is reported as failed.
        if let Some((from, error)) = &batch.interrupted {
            for position in &positions[*from..] {
                outcomes[*position].errno = Some(errno_of(error));
            }
        }
    }
}

/// `config_stream_read` (§8): the next line's words, `ipvsadm` words
/// dropped; `None` at the end of the input.
pub fn read_restore_line(input: &mut dyn BufRead) -> Option<Vec<Vec<u8>>> {
    const WORD_MAX: usize = 4096;
    let mut line = Vec::new();
    match input.read_until(b'\n', &mut line) {
        Ok(0) | Err(_) => return None,
        Ok(_) => {}
    }
    let words = line
        .split(|byte| matches!(byte, b' ' | b'\t' | b'\n' | b'\r'))
        .filter(|word| !word.is_empty())
        .flat_map(|word| word.chunks(WORD_MAX))
        .map(|word| {
            // A C string ends at its first NUL.
            let end = word
                .iter()
                .position(|byte| *byte == 0)
                .unwrap_or(word.len());
            word[..end].to_vec()
        })
        .filter(|word| word != b"ipvsadm")
        .collect();
    Some(words)
}

fn family(af: u16) -> Family {
    if af == cli::AF_INET6 {
        Family::Inet6
    } else {
        Family::Inet
    }
}

/// The service key as libipvs sends it: the fwmark if set, else protocol,
/// address and port.
pub fn service_key(service: &cli::ServiceArgs) -> ServiceKey {
    if service.fwmark != 0 {
        ServiceKey::Fwmark {
            family: family(service.af),
            mark: service.fwmark,
        }
    } else {
        ServiceKey::Address {
            protocol: Protocol::from_raw(service.protocol),
            address: service.address(),
            port: service.port,
        }
    }
}

/// The whole service, for `-A` and `-E` (which replaces every field).
pub fn service(args: &cli::ServiceArgs) -> Service {
    let key = service_key(args);
    let family = key.family();
    Service {
        key,
        scheduler: String::from_utf8_lossy(&args.scheduler).into_owned(),
        flags: ServiceFlags::from_bits(args.flags),
        timeout: args.timeout,
        netmask: Netmask::from_raw(args.netmask, family).unwrap_or(Netmask::full(family)),
        persistence_engine: (!args.pe_name.is_empty())
            .then(|| String::from_utf8_lossy(&args.pe_name).into_owned()),
        statistics: None,
    }
}

/// The destination, for `-a` and `-e` (which replaces every field).
pub fn destination(args: &cli::DestArgs) -> Destination {
    let tunnel = Tunnel {
        kind: TunnelKind::from_raw(args.tun_type),
        port: args.tun_port,
        checksum: TunnelChecksum::from_raw(args.tun_flags),
    };
    Destination {
        address: args.address(),
        port: args.port,
        forwarding: Forwarding::from_method(args.conn_flags, tunnel),
        weight: args.weight,
        upper_threshold: args.u_threshold,
        lower_threshold: args.l_threshold,
        counters: None,
        statistics: None,
    }
}

/// The change a command line asks for, and the libipvs function that
/// would send it (`None` for flush, which does not record itself).
pub fn operation(line: &CommandLine) -> (Operation, Option<IpvsCommand>) {
    let key = || service_key(&line.service);
    match line.command {
        Command::Add => (
            Operation::CreateService(service(&line.service)),
            Some(IpvsCommand::NewService),
        ),
        Command::Edit => (
            Operation::UpdateService(service(&line.service)),
            Some(IpvsCommand::SetService),
        ),
        Command::Delete => (
            Operation::DeleteService(key()),
            Some(IpvsCommand::DeleteService),
        ),
        Command::Zero => {
            // libipvs zeroes everything when no fwmark, address or port is
            // set: no service given, or `-t 0.0.0.0:0`.
            let service = &line.service;
            let zero = if service.fwmark == 0 && service.addr == [0; 16] && service.port == 0 {
                Operation::ZeroAll
            } else {
                Operation::ZeroService(key())
            };
            (zero, Some(IpvsCommand::Zero))
        }
        Command::AddServer => (
            Operation::CreateDestination(key(), destination(&line.dest)),
            Some(IpvsCommand::NewDestination),
        ),
        Command::EditServer => (
            Operation::UpdateDestination(key(), destination(&line.dest)),
            Some(IpvsCommand::SetDestination),
        ),
        Command::DeleteServer => (
            Operation::DeleteDestination(
                key(),
                SocketAddr::new(line.dest.address(), line.dest.port),
            ),
            Some(IpvsCommand::DeleteDestination),
        ),
        Command::Set => {
            let [tcp, tcp_fin, udp] = line.timeouts;
            (
                Operation::SetTimeouts(Timeouts { tcp, tcp_fin, udp }),
                Some(IpvsCommand::SetConfig),
            )
        }
        Command::StartDaemon => {
            let daemon = &line.daemon;
            let mut sync = SyncDaemon::new(
                sync_state(daemon.state),
                String::from_utf8_lossy(&daemon.mcast_ifn).into_owned(),
                daemon.syncid,
            );
            sync.max_length = (daemon.sync_maxlen != 0).then_some(daemon.sync_maxlen);
            sync.port = (daemon.mcast_port != 0).then_some(daemon.mcast_port);
            sync.ttl = (daemon.mcast_ttl != 0).then_some(daemon.mcast_ttl);
            sync.group = daemon.mcast_group;
            (Operation::StartDaemon(sync), Some(IpvsCommand::NewDaemon))
        }
        Command::StopDaemon => (
            Operation::StopDaemon(sync_state(line.daemon.state)),
            Some(IpvsCommand::DeleteDaemon),
        ),
        Command::Flush | Command::List | Command::Save | Command::Restore => {
            (Operation::Flush, None)
        }
    }
}

fn sync_state(state: u32) -> SyncState {
    if state == cli::STATE_BACKUP {
        SyncState::Backup
    } else {
        SyncState::Master
    }
}

/// `each` of `items`, in order, computed by up to four threads for many
/// items: formatting a large listing costs more than reading it.
fn in_parallel<T: Sync, R: Send>(items: &[T], each: impl Fn(&T) -> R + Sync) -> Vec<R> {
    /// Fewer items than this per thread and a thread costs more than it saves.
    const ITEMS_PER_THREAD: usize = 64;
    let threads = std::thread::available_parallelism()
        .map_or(1, |count| count.get())
        .min(4)
        .min(items.len() / ITEMS_PER_THREAD)
        .max(1);
    if threads == 1 {
        return items.iter().map(&each).collect();
    }
    let each = &each;
    std::thread::scope(|scope| {
        let mut chunks = items.chunks(items.len().div_ceil(threads));
        let first = chunks.next().unwrap_or_default();
        let others: Vec<_> = chunks
            .map(|chunk| scope.spawn(move || chunk.iter().map(each).collect::<Vec<R>>()))
            .collect();
        let mut results: Vec<R> = first.iter().map(each).collect();
        for handle in others {
            results.extend(
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            );
        }
        results
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(input: &str) -> Vec<Option<Vec<String>>> {
        let mut reader = input.as_bytes();
        let mut lines = Vec::new();
        loop {
            let line = read_restore_line(&mut reader);
            let done = line.is_none();
            lines.push(line.map(|words| {
                words
                    .into_iter()
                    .map(|word| String::from_utf8(word).unwrap())
                    .collect()
            }));
            if done {
                return lines;
            }
        }
    }

    fn strings(items: &[&str]) -> Option<Vec<String>> {
        Some(items.iter().map(|item| item.to_string()).collect())
    }

    #[test]
    fn restore_lines_split_on_blanks_and_drop_ipvsadm_words() {
        assert_eq!(
            words("ipvsadm -A -t 10.0.0.1:80\r\n\n  \t\n-C ipvsadm\n# comment here\n-Z"),
            vec![
                strings(&["-A", "-t", "10.0.0.1:80"]),
                strings(&[]),
                strings(&[]),
                strings(&["-C"]),
                strings(&["#", "comment", "here"]),
                strings(&["-Z"]),
                None,
            ]
        );
    }

    #[test]
    fn restore_lines_have_no_quoting() {
        assert_eq!(
            words("-A -t \"10.0.0.1:80\"\n"),
            vec![strings(&["-A", "-t", "\"10.0.0.1:80\""]), None]
        );
    }

    #[test]
    fn restore_words_longer_than_4096_bytes_are_split() {
        let long = "a".repeat(5000);
        let lines = words(&format!("-s {long}\n"));
        let first = lines[0].as_ref().unwrap();
        assert_eq!(first.len(), 3);
        assert_eq!(first[1].len(), 4096);
        assert_eq!(first[2].len(), 904);
    }

    #[test]
    fn error_messages_follow_libipvs() {
        assert_eq!(
            error_message(IpvsCommand::NewService, libc::EEXIST),
            "Service already exists"
        );
        assert_eq!(
            error_message(IpvsCommand::SetService, libc::EEXIST),
            "File exists"
        );
        assert_eq!(
            error_message(IpvsCommand::GetDestination, libc::ESRCH),
            "No such service"
        );
        assert_eq!(
            error_message(IpvsCommand::GetInfo, libc::ESRCH),
            "No such process"
        );
        assert_eq!(
            error_message(IpvsCommand::NewDestination, libc::ERANGE),
            "Numerical result out of range"
        );
        assert_eq!(
            error_message(IpvsCommand::GetInfo, libc::ENOPROTOOPT),
            "Protocol not available"
        );
    }

    fn line(args: &[&str]) -> CommandLine {
        let mut argv = vec![b"ipvsadm".to_vec()];
        argv.extend(args.iter().map(|arg| arg.as_bytes().to_vec()));
        match cli::parse_command_line(&argv, false).unwrap() {
            Parsed::Command(line) => *line,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn edit_service_resets_what_is_not_given() {
        let (operation, _) = operation(&line(&["-E", "-t", "10.0.0.1:80"]));
        let Operation::UpdateService(service) = operation else {
            panic!("{operation:?}")
        };
        assert_eq!(service.scheduler, "wlc");
        assert_eq!(service.flags, ServiceFlags::empty());
        assert_eq!(service.netmask, Netmask::full(Family::Inet));
        assert_eq!(service.persistence_engine, None);
    }

    #[test]
    fn edit_server_resets_weight_and_method() {
        let (operation, _) = operation(&line(&["-e", "-t", "10.0.0.1:80", "-r", "10.0.0.2:8080"]));
        let Operation::UpdateDestination(_, destination) = operation else {
            panic!("{operation:?}")
        };
        assert_eq!(destination.weight, 1);
        assert_eq!(destination.forwarding, Forwarding::Route);
        assert_eq!(destination.port, 80, "DR forces the service port");
        assert_eq!(
            (destination.upper_threshold, destination.lower_threshold),
            (0, 0)
        );
    }

    #[test]
    fn masquerading_keeps_the_port_and_delete_never_forces_it() {
        let (operation, _) = operation(&line(&[
            "-a",
            "-t",
            "10.0.0.1:80",
            "-r",
            "10.0.0.2:8080",
            "-m",
        ]));
        let Operation::CreateDestination(_, destination) = operation else {
            panic!("{operation:?}")
        };
        assert_eq!(destination.port, 8080);
        let (operation, _) = operation_of(&["-d", "-t", "10.0.0.1:80", "-r", "10.0.0.2:8080"]);
        assert_eq!(
            operation,
            Operation::DeleteDestination(
                ServiceKey::Address {
                    protocol: Protocol::Tcp,
                    address: "10.0.0.1".parse().unwrap(),
                    port: 80
                },
                "10.0.0.2:8080".parse().unwrap()
            )
        );
    }

    fn operation_of(args: &[&str]) -> (Operation, Option<IpvsCommand>) {
        operation(&line(args))
    }

    #[test]
    fn zero_without_a_service_or_with_the_any_address_zeroes_all() {
        assert_eq!(operation_of(&["-Z"]).0, Operation::ZeroAll);
        assert_eq!(
            operation_of(&["-Z", "-t", "0.0.0.0:0"]).0,
            Operation::ZeroAll
        );
        assert!(matches!(
            operation_of(&["-Z", "-t", "0.0.0.0:80"]).0,
            Operation::ZeroService(_)
        ));
        assert_eq!(
            operation_of(&["-Z", "-f", "7", "-6"]).0,
            Operation::ZeroService(ServiceKey::Fwmark {
                family: Family::Inet6,
                mark: 7
            })
        );
    }

    #[test]
    fn start_daemon_defaults() {
        let (operation, _) = operation_of(&["--start-daemon", "backup"]);
        assert_eq!(
            operation,
            Operation::StartDaemon(SyncDaemon::new(SyncState::Backup, "eth0", 0))
        );
        let (operation, _) = operation_of(&[
            "--start-daemon",
            "master",
            "--mcast-interface",
            "eth1",
            "--syncid",
            "7",
            "--mcast-group",
            "224.0.0.82",
            "--mcast-port",
            "8849",
            "--mcast-ttl",
            "2",
            "--sync-maxlen",
            "1400",
        ]);
        let mut expected = SyncDaemon::new(SyncState::Master, "eth1", 7);
        expected.group = Some("224.0.0.82".parse().unwrap());
        expected.port = Some(8849);
        expected.ttl = Some(2);
        expected.max_length = Some(1400);
        assert_eq!(operation, Operation::StartDaemon(expected));
    }

    #[test]
    fn services_carry_persistence_netmask_and_flags() {
        let (operation, _) = operation_of(&[
            "-A",
            "-u",
            "10.0.0.1:53",
            "-s",
            "sh",
            "-p",
            "-M",
            "255.255.255.0",
            "-o",
            "-b",
            "sh-port",
            "--pe",
            "sip",
        ]);
        let Operation::CreateService(service) = operation else {
            panic!("{operation:?}")
        };
        assert_eq!(service.scheduler, "sh");
        assert_eq!(service.timeout, 360);
        assert_eq!(
            service.netmask,
            Netmask::Ipv4("255.255.255.0".parse().unwrap())
        );
        assert_eq!(service.flags.bits(), 0x1 | 0x4 | 0x10);
        assert_eq!(service.persistence_engine.as_deref(), Some("sip"));
        let (operation, _) = operation_of(&["-A", "-f", "1", "-6", "-M", "64"]);
        let Operation::CreateService(service) = operation else {
            panic!("{operation:?}")
        };
        assert_eq!(service.netmask, Netmask::Ipv6(64));
    }

    #[test]
    fn tunnel_destinations() {
        let (operation, _) = operation_of(&[
            "-a",
            "-t",
            "[2001:db8::1]:443",
            "-r",
            "192.168.2.1",
            "-i",
            "--tun-type",
            "gue",
            "--tun-port",
            "6080",
            "--tun-csum",
            "-w",
            "3",
        ]);
        let Operation::CreateDestination(_, destination) = operation else {
            panic!("{operation:?}")
        };
        assert_eq!(destination.port, 443);
        assert_eq!(destination.weight, 3);
        assert_eq!(
            destination.forwarding,
            Forwarding::Tunnel(Tunnel {
                kind: TunnelKind::Gue,
                port: 6080,
                checksum: TunnelChecksum::Checksum
            })
        );
    }

    #[test]
    fn json_options_add_statistics_and_rates_together() {
        let options = json_options(Column::Rate.bit() | Column::Stats.bit());
        assert!(options.statistics && options.rates && options.sort);
        let options = json_options(
            Column::Thresholds.bit()
                | Column::PersistentConn.bit()
                | Column::TunInfo.bit()
                | Column::Exact.bit()
                | Column::Numeric.bit()
                | Column::NoSort.bit(),
        );
        assert_eq!(
            options,
            json::ServiceOptions {
                statistics: false,
                rates: false,
                sort: false
            }
        );
    }

    #[test]
    fn list_format_precedence() {
        let options = list_options(Column::Rate.bit() | Column::Stats.bit());
        assert!(matches!(options.kind, ListKind::Stats));
        let options = list_options(
            Column::TunInfo.bit() | Column::PersistentConn.bit() | Column::NoSort.bit(),
        );
        assert!(matches!(options.kind, ListKind::PersistentConnections));
        assert!(!options.sort);
    }
}

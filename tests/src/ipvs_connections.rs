//! The kernel's IPVS connection table of a namespace, as `ipvsadm -Lcn`
//! shows it: the generic netlink family has no connection dump, so it is
//! read from /proc/net/ip_vs_conn (from a thread, no process).

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use anyhow::{Context, Result, bail};

use crate::Namespace;

/// One IPv4 entry of /proc/net/ip_vs_conn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpvsConnection {
    /// TCP, UDP, SCTP... as the kernel writes it.
    pub protocol: String,
    pub client: SocketAddr,
    pub virtual_address: SocketAddr,
    pub destination: SocketAddr,
    /// ESTABLISHED, SYN_RECV... as the kernel writes it.
    pub state: String,
}

/// The IPv4 connections of `namespace`'s IPVS table; none when IPVS is not
/// loaded.
pub fn ipvs_connections(namespace: &Namespace) -> Result<Vec<IpvsConnection>> {
    namespace
        .run(ipvs_connections_here)?
        .with_context(|| format!("in {}", namespace.name()))
}

/// The IPv4 connections of the calling thread's namespace's IPVS table
/// (a thread that entered one); none when IPVS is not loaded.
pub fn ipvs_connections_here() -> Result<Vec<IpvsConnection>> {
    let text = match std::fs::read_to_string("/proc/thread-self/net/ip_vs_conn") {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error).context("cannot read ip_vs_conn"),
    };
    // "Pro FromIP FPrt ToIP TPrt DestIP DPrt State Expires PEName PEData",
    // addresses and ports in hexadecimal (IPv6 ones are written in colon
    // form and skipped here).
    text.lines()
        .skip(1)
        .filter(|line| !line.contains(':'))
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 8 {
                bail!("an ip_vs_conn line of {} fields: {line:?}", fields.len());
            }
            let endpoint = |address: &str, port: &str| -> Result<SocketAddr> {
                Ok(SocketAddr::V4(SocketAddrV4::new(
                    Ipv4Addr::from(u32::from_str_radix(address, 16)?),
                    u16::from_str_radix(port, 16)?,
                )))
            };
            Ok(IpvsConnection {
                protocol: fields[0].to_owned(),
                client: endpoint(fields[1], fields[2])?,
                virtual_address: endpoint(fields[3], fields[4])?,
                destination: endpoint(fields[5], fields[6])?,
                state: fields[7].to_owned(),
            })
        })
        .collect()
}

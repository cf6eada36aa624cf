//! Global connection timeouts (GET_CONFIG / SET_CONFIG).

use crate::{IpvsAttribute, IpvsCommand, IpvsMessage, ParseError};

/// Connection timeouts, in seconds, of the states ipvsadm exposes.
///
/// When setting, 0 leaves a timeout unchanged: the kernel starts from the
/// current values and only applies non-zero ones. It rejects values above
/// `INT_MAX / HZ`. A reply omits the TCP (resp. UDP) values when the kernel
/// was built without IPVS TCP (resp. UDP) support; they read as 0 here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Timeouts {
    /// Established TCP connections.
    pub tcp: u32,
    /// TCP connections after the FIN.
    pub tcp_fin: u32,
    pub udp: u32,
}

impl Timeouts {
    /// Top-level attributes for SET_CONFIG. All three are sent, zeros
    /// included, like ipvsadm.
    pub fn to_attributes(&self) -> Vec<IpvsAttribute> {
        vec![
            IpvsAttribute::TimeoutTcp(self.tcp),
            IpvsAttribute::TimeoutTcpFin(self.tcp_fin),
            IpvsAttribute::TimeoutUdp(self.udp),
        ]
    }

    pub fn from_attributes(attributes: &[IpvsAttribute]) -> Self {
        let mut timeouts = Timeouts::default();
        for attribute in attributes {
            match attribute {
                IpvsAttribute::TimeoutTcp(v) => timeouts.tcp = *v,
                IpvsAttribute::TimeoutTcpFin(v) => timeouts.tcp_fin = *v,
                IpvsAttribute::TimeoutUdp(v) => timeouts.udp = *v,
                _ => {}
            }
        }
        timeouts
    }

    /// Parse the GET_CONFIG reply (command SET_CONFIG).
    pub fn from_reply(message: &IpvsMessage) -> Result<Self, ParseError> {
        message.expect_command(IpvsCommand::SetConfig)?;
        Ok(Self::from_attributes(&message.attributes))
    }
}

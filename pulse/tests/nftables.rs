//! The nftables firewall's messages against bytes captured from keepalived
//! 2.2.7 and the kernel: for now the capture itself (see capture.rs).

#[path = "nftables/capture.rs"]
mod capture;

const CAPTURE_DIRECTORY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/captured/nftables");

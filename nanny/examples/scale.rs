//! A scale sanity check on loopback: N real servers (distinct 127.x.y.z
//! addresses, one listener on all of them) with TCP_CHECK every second,
//! for a few seconds; prints the connections the listener accepted per
//! second and the process's processor time and memory.
//!
//! `cargo run -p nanny --example scale -- [REAL_SERVERS] [SECONDS]`
//! (default 10000 for 10 s). Not the benchmark against keepalived (that
//! belongs to the lab); a quick look at whether one process keeps up.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nanny::scheduler::{Handle, Start};
use nanny::spec::Plan;

fn main() -> anyhow::Result<()> {
    let mut arguments = std::env::args().skip(1);
    let real_servers: u32 = arguments
        .next()
        .map(|text| text.parse())
        .transpose()?
        .unwrap_or(10_000);
    let seconds: u64 = arguments
        .next()
        .map(|text| text.parse())
        .transpose()?
        .unwrap_or(10);

    nanny::raise_open_file_limit()?;
    // The listener runs on its own runtime thread, so that accepting does
    // not compete with the scheduler's runtime.
    let accepted = Arc::new(AtomicU64::new(0));
    let listener = std::net::TcpListener::bind("0.0.0.0:0")?;
    let port = listener.local_addr()?.port();
    listener.set_nonblocking(true)?;
    {
        let accepted = accepted.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                while let Ok((stream, _)) = listener.accept().await {
                    accepted.fetch_add(1, Ordering::Relaxed);
                    drop(stream);
                }
            });
        });
    }

    let mut text =
        String::from("virtual_server 192.0.2.1 80 {\n    protocol TCP\n    delay_loop 1\n");
    for index in 0..real_servers {
        let address = [
            127,
            1 + (index >> 16) as u8,
            (index >> 8) as u8,
            index as u8,
        ];
        text.push_str(&format!(
            "    real_server {}.{}.{}.{} {port} {{\n        TCP_CHECK {{\n            connect_timeout 3\n        }}\n    }}\n",
            address[0], address[1], address[2], address[3]
        ));
    }
    text.push_str("}\n");
    let loaded = fulcrum_config::load_str("scale.conf", &text, &Default::default());
    let plan = Plan::from_config(&loaded.config);
    println!(
        "{} real servers, {} checks",
        plan.slots.len(),
        plan.checks.len()
    );

    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async move {
        let mut handle = Handle::spawn(plan, Start::Warmup);
        let started = Instant::now();
        let mut initial = 0u64;
        let mut down = 0u64;
        let mut last = 0u64;
        let mut ticker = tokio::time::interval(Duration::from_secs(1));
        ticker.tick().await;
        while started.elapsed() < Duration::from_secs(seconds) {
            tokio::select! {
                change = handle.events.recv() => {
                    let Some(change) = change else { break };
                    initial += u64::from(change.initial);
                    down += u64::from(!change.up);
                }
                _ = ticker.tick() => {
                    let now = accepted.load(Ordering::Relaxed);
                    println!(
                        "{:>3} s: {} connections/s, {initial} real servers reported, {down} down reports",
                        started.elapsed().as_secs(),
                        now - last
                    );
                    last = now;
                }
            }
        }
        handle.shutdown().await;
    });
    // SAFETY: getrusage fills the structure it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    println!(
        "processor time: {:.2} s user, {:.2} s system; peak memory {} MiB (listener included)",
        usage.ru_utime.tv_sec as f64 + usage.ru_utime.tv_usec as f64 / 1e6,
        usage.ru_stime.tv_sec as f64 + usage.ru_stime.tv_usec as f64 / 1e6,
        usage.ru_maxrss / 1024
    );
    Ok(())
}

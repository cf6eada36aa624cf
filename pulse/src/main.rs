//! `pulse`: see the library for what it does.

fn main() -> anyhow::Result<()> {
    let status = pulse::run(
        std::env::args_os().skip(1),
        // Not locked: the daemon's threads log to stderr while run() runs.
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    )?;
    std::process::exit(status)
}

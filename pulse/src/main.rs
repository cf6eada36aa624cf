//! `pulse`: see the library for what it does.

fn main() -> anyhow::Result<()> {
    let status = pulse::run(
        std::env::args_os().skip(1),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    )?;
    std::process::exit(status)
}

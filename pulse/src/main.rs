//! `pulse`: see the library for what it does.

use std::io::{self, Write};

/// A standard stream whose reader may go away (`pulse --dump-config |
/// head`): from then on what is written is dropped, so that pulse ends
/// quietly with the status it was going to exit with (the verdict of `-t`
/// is decided before the dump is written) instead of "Broken pipe".
/// Rust ignores SIGPIPE, so the write fails with EPIPE instead of killing
/// the process as it would kill a C program.
struct UntilClosed<W> {
    inner: W,
    closed: bool,
}

impl<W: Write> UntilClosed<W> {
    fn new(inner: W) -> Self {
        UntilClosed {
            inner,
            closed: false,
        }
    }

    fn outcome(&mut self, result: io::Result<()>) -> io::Result<()> {
        match result {
            Err(error) if error.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            result => result,
        }
    }
}

impl<W: Write> Write for UntilClosed<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if !self.closed {
            let result = self.inner.write_all(data);
            self.outcome(result)?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let result = self.inner.flush();
        self.outcome(result)
    }
}

fn main() -> anyhow::Result<()> {
    let status = pulse::run(
        std::env::args_os().skip(1),
        // Not locked: the daemon's threads log to stderr while run() runs.
        &mut UntilClosed::new(io::stdout()),
        &mut UntilClosed::new(io::stderr()),
    )?;
    std::process::exit(status)
}

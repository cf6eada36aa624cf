//! `ipvsctl`: a drop-in replacement for `ipvsadm` 1.31.

use std::io::Write;
use std::os::unix::ffi::OsStringExt;

/// stdout the way glibc's stdio buffers it: line by line on a terminal,
/// in 4096-byte blocks otherwise, so that output interleaves with stderr
/// (unbuffered) as ipvsadm's does when both go to one file.
struct Stdout {
    buffer: Vec<u8>,
    line_buffered: bool,
    inner: std::io::Stdout,
}

const BLOCK: usize = 4096;

impl Write for Stdout {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(data);
        if self.line_buffered {
            if data.contains(&b'\n') {
                self.flush()?;
            }
        } else {
            let full = self.buffer.len() / BLOCK * BLOCK;
            if full > 0 {
                let mut inner = self.inner.lock();
                inner.write_all(&self.buffer[..full])?;
                inner.flush()?;
                self.buffer.drain(..full);
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let mut inner = self.inner.lock();
        inner.write_all(&self.buffer)?;
        self.buffer.clear();
        inner.flush()
    }
}

fn main() {
    // SAFETY: restores the default SIGPIPE action (Rust ignores it), so
    // that `ipvsctl -L | head -1` ends like ipvsadm does.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let args: Vec<Vec<u8>> = std::env::args_os().map(OsStringExt::into_vec).collect();
    let mut out = Stdout {
        buffer: Vec::with_capacity(BLOCK),
        // SAFETY: isatty on a descriptor number has no memory effects.
        line_buffered: unsafe { libc::isatty(libc::STDOUT_FILENO) } == 1,
        inner: std::io::stdout(),
    };
    let mut err = std::io::stderr();
    let mut input = std::io::stdin().lock();
    let status = ipvsctl::run::run(&args, &mut input, &mut out, &mut err);
    let _ = out.flush();
    std::process::exit(status);
}

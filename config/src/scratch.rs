//! A folder of a test's own for the configuration files it writes,
//! removed when dropped (tests only).

use std::path::PathBuf;

pub(crate) struct Scratch(PathBuf);

impl Scratch {
    /// `name` tells the test's folder from the others' (tests run at once).
    pub(crate) fn new(name: &str) -> Scratch {
        let directory =
            std::env::temp_dir().join(format!("fulcrum-config-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        Scratch(directory)
    }

    /// The configuration file in it.
    pub(crate) fn file(&self) -> PathBuf {
        self.path("keepalived.conf")
    }

    /// Another file in it.
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

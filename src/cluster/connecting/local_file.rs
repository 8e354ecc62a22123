//! Local files the plugin reads besides its own arguments (a kubeconfig that is not a regular
//! file, a `tokenFile`), bounded in size and in time and read on a thread of their own, never
//! on the runtime's: `/dev/zero` stops at the bound, a FIFO that nobody writes to is given up
//! after [`READ_TIME`] (its thread is left blocked; it ends with the process), and either is
//! one error that names the file. kubectl reads both whole, unbounded: `/dev/zero` grows it
//! until memory runs out, and a FIFO holds it for ever.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::size;

/// A `tokenFile`: a token is a few kilobytes at most (a service account's JWT is about one).
pub const TOKEN_FILE_LIMIT: u64 = 1 << 20;

/// A kubeconfig: one of 300 contexts, each with its certificates inline, is about 2 MB.
pub const KUBECONFIG_LIMIT: u64 = 16 << 20;

/// How long a read may take: a local file is read in milliseconds; a FIFO that a process
/// substitution (`--kubeconfig <(...)`) writes to has its writer already.
pub const READ_TIME: Duration = Duration::from_secs(10);

/// Why a local file could not be read.
#[derive(Debug)]
pub enum Unread {
    Failed(std::io::Error),
    /// Past this many bytes.
    TooLarge(u64),
    /// Not done within [`READ_TIME`].
    Slow,
    /// No thread to read it on.
    NoThread(std::io::Error),
}

impl Unread {
    /// Why, without the file's name: for an error that names it already.
    pub fn cause(&self, what: &str) -> String {
        match self {
            Unread::Failed(e) | Unread::NoThread(e) => e.to_string(),
            Unread::TooLarge(limit) => format!("larger than {}, the bound on a {what}", size(*limit)),
            Unread::Slow => format!(
                "reading it did not end within {} (a FIFO that nothing writes to?)",
                crate::core::duration::go_duration(READ_TIME)
            ),
        }
    }

    /// Why, naming the file as client-go names a token file it cannot read.
    pub fn text(&self, path: &Path, what: &str) -> String {
        format!("failed to read {what} {:?}: {}", path.display(), self.cause(what))
    }
}

/// `path`'s bytes, at most `limit` of them, read on a thread of its own within [`READ_TIME`].
pub fn read(path: &Path, limit: u64) -> Result<Vec<u8>, Unread> {
    let (tx, rx) = std::sync::mpsc::channel();
    spawn(path.to_path_buf(), limit, move |r| drop(tx.send(r)))?;
    rx.recv_timeout(READ_TIME).unwrap_or(Err(Unread::Slow))
}

/// [`read`], awaited without blocking the runtime.
pub async fn read_async(path: &Path, limit: u64) -> Result<Vec<u8>, Unread> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    spawn(path.to_path_buf(), limit, move |r| drop(tx.send(r)))?;
    match tokio::time::timeout(READ_TIME, rx).await {
        Ok(Ok(read)) => read,
        _ => Err(Unread::Slow),
    }
}

fn spawn(path: PathBuf, limit: u64, done: impl FnOnce(Result<Vec<u8>, Unread>) + Send + 'static) -> Result<(), Unread> {
    std::thread::Builder::new()
        .name("read-local-file".into())
        .spawn(move || done(read_now(&path, limit)))
        .map(drop)
        .map_err(Unread::NoThread)
}

fn read_now(path: &Path, limit: u64) -> Result<Vec<u8>, Unread> {
    let file = std::fs::File::open(path).map_err(Unread::Failed)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(Unread::Failed)?;
    if bytes.len() as u64 > limit {
        return Err(Unread::TooLarge(limit));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_file_stops_at_the_bound_and_a_small_one_reads() {
        let e = read(Path::new("/dev/zero"), TOKEN_FILE_LIMIT).unwrap_err().text(Path::new("/dev/zero"), "token file");
        assert_eq!(e, "failed to read token file \"/dev/zero\": larger than 1 MiB, the bound on a token file");
        let dir = std::env::temp_dir().join(format!("dispatch-local-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let small = dir.join("token");
        std::fs::write(&small, "abc\n").unwrap();
        assert_eq!(read(&small, TOKEN_FILE_LIMIT).unwrap(), b"abc\n");
        assert!(matches!(read(&dir.join("none"), TOKEN_FILE_LIMIT), Err(Unread::Failed(_))));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_fifo_nobody_writes_to_is_given_up_after_its_time() {
        let dir = std::env::temp_dir().join(format!("dispatch-local-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        tokio::time::pause();
        let e = read_async(&fifo, TOKEN_FILE_LIMIT).await.unwrap_err().cause("token file");
        assert_eq!(e, "reading it did not end within 10s (a FIFO that nothing writes to?)");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

//! Reading a file that holds a secret (a signing key, a secret access key): through one open
//! file, its mode checked on that file rather than looked up again by name, its text read into
//! memory that is wiped when dropped (`read_to_string` reserves the file's size at once, so no
//! reallocation leaves a copy behind). A file others than its owner may read is reported, for
//! the reader to warn of in its own words, not refused.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use zeroize::Zeroizing;

/// A secret file's text, and whether others than its owner may read the file.
pub struct SecretFile {
    /// The text, wiped when dropped.
    pub text: Zeroizing<String>,
    /// Its group or others may read it (any of the mode's `0o077` bits).
    pub open_to_others: bool,
}

/// The secret file `path`.
///
/// # Errors
/// It cannot be opened or read, or is not UTF-8.
pub fn read(path: &Path) -> std::io::Result<SecretFile> {
    let mut file = std::fs::File::open(path)?;
    let open_to_others = file.metadata()?.permissions().mode() & 0o077 != 0;
    let mut text = Zeroizing::new(String::new());
    file.read_to_string(&mut text)?;
    Ok(SecretFile { text, open_to_others })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::OpenOptionsExt;

    #[test]
    fn reads_the_text_and_reports_a_mode_open_to_others() {
        let dir = std::env::temp_dir().join(format!("drbgd-secret-file-{}", std::process::id()));
        // A run that failed earlier under the same process id may have left its files.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, mode, open) in [("own", 0o600, false), ("group", 0o640, true), ("world", 0o604, true)] {
            let path = dir.join(name);
            let mut file =
                std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(&path).unwrap();
            std::io::Write::write_all(&mut file, b"secret\n").unwrap();
            // The process's umask may have narrowed the mode asked for.
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let read = read(&path).unwrap();
            assert_eq!((read.text.as_str(), read.open_to_others), ("secret\n", open), "{name}");
        }
        assert!(read(&dir.join("absent")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! What is in a directory, for tests that check a command left it as it was.

/// The names in `dir`, sorted.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("b"), "").unwrap();
/// std::fs::write(dir.path().join("a"), "").unwrap();
/// assert_eq!(test_support::files::listing(dir.path()), ["a", "b"]);
/// ```
///
/// # Panics
/// When `dir` cannot be read (a test's own directory).
#[allow(clippy::unwrap_used)] // test support: a directory the test made
pub fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

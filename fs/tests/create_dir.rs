//! `create_dir_all` below a file: the error names the file, which is what
//! is wrong, rather than "File exists" for the folder asked for.

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[test]
fn a_folder_below_a_file_is_refused_naming_the_file() -> TestResult {
    let tmp = tempfile::tempdir()?;
    let file = tmp.path().join("notes.txt");
    std::fs::write(&file, "a file")?;
    for wanted in [file.clone(), file.join("store"), file.join("store").join("family")] {
        let err = cellar_fs::create_dir_all(&wanted).err().ok_or("created below a file")?;
        assert_eq!(err.kind(), std::io::ErrorKind::NotADirectory, "{}", wanted.display());
        assert_eq!(err.to_string(), format!("{} is a file, not a folder", file.display()));
    }
    assert_eq!(std::fs::read_to_string(&file)?, "a file");
    Ok(())
}

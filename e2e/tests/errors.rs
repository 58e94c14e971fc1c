//! CLI errors print each cause once: the message says what failed, the source says why, and
//! the chain is printed once (`ctop_core::Chain`, anyhow's `{:#}`).

use std::process::{Command, Output};

use ctop_e2e::binary;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The last ERROR line of `out`.
fn error_line(out: &Output) -> String {
    stderr(out).lines().rev().find(|l| l.contains("ERROR")).unwrap_or_default().to_owned()
}

#[test]
fn an_unreadable_certificate_names_the_file_and_the_os_error_once() {
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/myapp");
    let out = Command::new(binary::ctop())
        .args(["webhook", "serve"])
        .arg(&example)
        .args(["--tls-cert", "/nonexistent/c.pem", "--tls-key", "/nonexistent/k.pem", "--port", "0"])
        .output()
        .expect("ctop runs");
    assert!(!out.status.success());
    let line = error_line(&out);
    assert!(
        line.ends_with("cannot read /nonexistent/c.pem: No such file or directory (os error 2)"),
        "{line}"
    );
    assert_eq!(line.matches("No such file").count(), 1, "{line}");
}

/// `ctop run --bundle` and `ctop webhook serve --bundle` on a bundle whose gzip body is
/// corrupt: the line says the script could not be loaded, that the bundle is not valid gzip
/// (with the hint), and the decoder's error, each once.
#[test]
fn a_corrupt_bundle_names_the_gzip_error_once() {
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/myapp");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let bundle = dir.path().join("bundle.js.gz");
    let out = Command::new(binary::ctop())
        .arg("bundle")
        .arg(&example)
        .arg("-o")
        .arg(&bundle)
        .output()
        .expect("ctop runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let mut bytes = std::fs::read(&bundle).expect("the bundle");
    // The gzip header is 10 bytes; the deflate stream after it is garbled.
    for b in &mut bytes[12..60] {
        *b ^= 0xa5;
    }
    std::fs::write(&bundle, &bytes).expect("the corrupt bundle");

    for command in [&["run"][..], &["webhook", "serve", "--port", "0"][..]] {
        let out = Command::new(binary::ctop())
            .args(command)
            .arg(&example)
            .arg("--bundle")
            .arg(&bundle)
            .output()
            .expect("ctop runs");
        assert!(!out.status.success(), "{command:?}");
        let line = error_line(&out);
        assert!(line.contains("the script could not be loaded"), "{command:?}: {line}");
        assert_eq!(line.matches("not valid gzip").count(), 1, "{command:?}: {line}");
        assert_eq!(line.matches("rebuild it with").count(), 1, "{command:?}: {line}");
        // The decoder's error ends the line, once.
        let cause = line.rsplit(": ").next().expect("a cause");
        assert!(!cause.contains("not valid gzip"), "{command:?}: {line}");
        assert_eq!(line.matches(cause).count(), 1, "{command:?}: {line}");
    }
}

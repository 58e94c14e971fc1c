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

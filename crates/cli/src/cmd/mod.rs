//! One module per subcommand.

pub mod bundle;
pub mod dev;
pub mod init;
pub mod manifests;
pub mod run;
pub mod sim;
pub mod webhook;

/// Resolves on Ctrl-C or SIGTERM: when a serving command should stop.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

/// The values file's text: `values`, or `DIR/values.yaml` when it exists, else empty.
pub fn values_text(dir: &std::path::Path, values: Option<&std::path::Path>) -> anyhow::Result<String> {
    use anyhow::Context as _;
    let (path, required) = match values {
        Some(p) => (p.to_path_buf(), true),
        None => (dir.join("values.yaml"), false),
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(text),
        Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e).with_context(|| format!("cannot read the values file {}", path.display())),
    }
}

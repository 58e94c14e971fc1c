//! One module per subcommand.

pub mod bundle;
pub mod init;
pub mod manifests;
pub mod sim;

//! One module per subcommand.

pub mod bundle;
pub mod dev;
pub mod init;
pub mod manifests;
pub mod run;
pub mod sim;

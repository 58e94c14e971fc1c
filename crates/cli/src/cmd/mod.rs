//! One module per subcommand.

pub mod bundle;
pub mod sim;

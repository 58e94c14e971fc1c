//! Who may do what: authentication ([`authn`]: client certificates, bearer tokens,
//! anonymous), RBAC authorization ([`authz`]) and the TLS identity the server and its
//! clients use ([`tls`]).

pub(crate) mod authn;
pub(crate) mod authz;
pub(crate) mod tls;

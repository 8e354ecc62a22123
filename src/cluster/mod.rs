//! The imperative shell's cluster side: connecting the way kubectl does, and reading the facts
//! the core judges. It only ever sends get, list and watch.
//!
//! - [`connecting`]: a client as kubectl builds one: kubeconfig and flags, proxy, TLS,
//!   credentials (exec plugins), and the time bounds and retries of each request.
//! - [`reading`]: one-shot reads of the facts, and what a failed read means.
//! - [`watching`]: the facts followed live, as streams.
//!
//! Each part imports only the parts above it in this list.

pub mod connecting;
pub mod reading;
pub mod watching;

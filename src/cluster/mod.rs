//! The imperative shell's cluster side: connecting the way kubectl does, and reading the facts
//! the core judges. It only ever sends get, list and watch.

pub mod client;
pub mod connect;
pub mod credentials;
pub mod deadline;
pub mod exec;
pub mod failure;
pub mod fetch;
pub mod holder;
pub mod kubeconfig;
pub mod proxy;
pub mod retry;
pub mod review;
pub mod server_clock;
pub mod tls;
pub mod watch;
pub mod wire;
pub mod workload;

//! Connecting the way kubectl does: the kubeconfig and kubectl's connection flags, in-cluster
//! config, the proxy, TLS, exec credential plugins, and each request's bound and retries.

pub mod bounds;
pub mod client;
pub mod connect;
pub mod credentials;
pub mod deadline;
pub mod exec;
pub mod headers;
pub mod kubeconfig;
pub mod local_file;
pub mod proxy;
pub mod retry;
pub mod server_clock;
pub mod tls;

//! Builds a client the way kubectl would: the kubeconfig and kubectl's connection flags
//! ([`super::kubeconfig`]), else in-cluster; the proxy by kubectl's rules ([`super::proxy`]);
//! an exec credential plugin run once up front, within its bound ([`super::exec`]).
//! Credentials never leave the config: nothing here logs or prints them.

use std::time::Duration;

use http::header::{HeaderValue, USER_AGENT};
use kube::config::{ExecAuthCluster, KubeConfigOptions, KubeconfigError};
use kube::{Client, Config};

use super::client::{self, Route};
use super::exec::ExecPlugin;
use super::kubeconfig::{self, OwnCredential};
use super::server_clock::ServerClock;
use crate::error::{Error, first_line};
use crate::invocation::ConnectionSettings;

/// The user agent on every request; the audit-log test finds our requests by its prefix.
pub const AGENT: &str = concat!("kubectl-dispatch/", env!("CARGO_PKG_VERSION"));

/// A client and where it points.
#[derive(Clone)]
pub struct Connection {
    pub client: Client,
    /// The server URL, for messages.
    pub server: String,
    /// The proxy on the way, for messages (without its credentials).
    pub proxy: Option<String>,
    /// `-n`, else the context's namespace, else `default`.
    pub namespace: String,
    pub context: Option<String>,
    /// The API server's clock, from the `Date` header of the latest response.
    pub server_clock: ServerClock,
    /// `--request-timeout`, which bounds each request (the live modes' confirming read too).
    pub request_timeout: Option<Duration>,
}

/// How this run may connect.
#[derive(Debug, Clone, Copy)]
pub struct ConnectOptions {
    /// `--request-timeout`: a bound on each request; `None` for none.
    pub request_timeout: Option<Duration>,
    /// Whether an exec credential plugin may have the terminal (one-shot commands only).
    pub interactive: bool,
    /// Whether an exec credential plugin's stderr reaches ours (not with several contexts, nor
    /// in completion).
    pub pass_stderr: bool,
}

pub async fn connect(
    args: &ConnectionSettings,
    connect_options: ConnectOptions,
    log: &crate::log::Log,
) -> Result<Connection, Error> {
    let (mut config, context, exec) = match kubeconfig::choose(args)? {
        Some(mut chosen) => {
            // kube would run a plugin left in the config itself, unbounded: take it out always,
            // and run it here only where kubectl would.
            let uses_exec = kubeconfig::own_credential(&chosen.user) == OwnCredential::ExecPlugin;
            let exec = chosen.user.exec.take().filter(|_| uses_exec).map(|config| ExecPlugin {
                cluster: config.provide_cluster_info.then(|| ExecAuthCluster::try_from(&chosen.cluster).ok()).flatten(),
                config,
                user: chosen.user_name.clone(),
                may_interact: connect_options.interactive,
                stderr: connect_options.pass_stderr.then(|| log.stderr()),
                bound: connect_options.request_timeout,
            });
            // The environment's proxy is chosen below, by kubectl's rules, not by kube's loader.
            let config = Config::from_custom_kubeconfig(chosen.to_kubeconfig(), &KubeConfigOptions::default())
                .await
                .map_err(|e| match e {
                    KubeconfigError::LoadClusterOfContext(name) => {
                        Error::Kubeconfig(format!("cluster {name:?} not found in the kubeconfig"))
                    }
                    // kube's loader parses HTTPS_PROXY itself (its choice is replaced below).
                    KubeconfigError::ParseProxyUrl(e) => {
                        Error::Kubeconfig(format!("HTTPS_PROXY is not a URL: {}", first_line(&e.to_string())))
                    }
                    other => Error::Kubeconfig(first_line(&other.to_string())),
                })?;
            let proxy_url = chosen.cluster.proxy_url.clone();
            (with_proxy(config, proxy_url.as_deref())?, chosen.context, exec)
        }
        None => (in_cluster(args)?, None, None),
    };
    config.headers.push((USER_AGENT, HeaderValue::from_static(AGENT)));
    // Every message names the server by this text: a password in the URL never shows.
    let server = crate::error::redact_url(config.cluster_url.to_string().trim_end_matches('/'));
    let proxy = config.proxy_url.take();
    log.info(
        1,
        &format!(
            "context {}, server {server}{}, namespace {}",
            context.as_deref().unwrap_or("<in-cluster>"),
            proxy.as_ref().map(|p| format!(" through proxy {}", client::display_proxy(p))).unwrap_or_default(),
            config.default_namespace
        ),
    );
    let exec = match exec {
        Some(plugin) => {
            let first = plugin.run().await?;
            log.info(6, &format!("exec credential plugin {:?} ran", plugin.config.command.as_deref().unwrap_or("")));
            Some((plugin, first))
        }
        None => None,
    };
    let namespace = config.default_namespace.clone();
    let proxy_text = proxy.as_ref().map(client::display_proxy);
    let server_clock = ServerClock::default();
    let route =
        Route { proxy, request_timeout: connect_options.request_timeout, exec, server_clock: server_clock.clone() };
    let client = client::build(config, route)?;
    let request_timeout = connect_options.request_timeout;
    Ok(Connection { client, server, proxy: proxy_text, namespace, context, server_clock, request_timeout })
}

/// Sets the proxy kubectl would use for this server: the kubeconfig's `proxy-url`, else the
/// environment's by Go's rules.
fn with_proxy(mut config: Config, kubeconfig_proxy: Option<&str>) -> Result<Config, Error> {
    let env = |name: &str| std::env::var(name).ok();
    config.proxy_url = super::proxy::choose(kubeconfig_proxy, &config.cluster_url, &env).map_err(Error::Kubeconfig)?;
    Ok(config)
}

fn in_cluster(args: &ConnectionSettings) -> Result<Config, Error> {
    if args.context.is_some() {
        return Err(Error::NoKubeconfig);
    }
    let has_env = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
    if !has_env {
        return Err(Error::NoKubeconfig);
    }
    let config = Config::incluster()
        .map_err(|e| Error::Kubeconfig(format!("in-cluster config: {}", first_line(&e.to_string()))))?;
    let mut config = with_proxy(config, None)?;
    if let Ok(ns) = std::env::var("POD_NAMESPACE") {
        config.default_namespace = ns;
    }
    if let Some(ns) = &args.namespace {
        config.default_namespace = ns.clone();
    }
    let auth = &mut config.auth_info;
    if let Some(token) = &args.token {
        auth.token = Some(token.0.clone().into());
    }
    auth.impersonate = args.impersonate.clone().or(auth.impersonate.take());
    auth.impersonate_uid = args.impersonate_uid.clone().or(auth.impersonate_uid.take());
    if !args.impersonate_groups.is_empty() {
        auth.impersonate_groups = Some(args.impersonate_groups.clone());
    }
    Ok(config)
}

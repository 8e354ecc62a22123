//! Builds a client the way kubectl would: `--kubeconfig`, else `KUBECONFIG` merged, else
//! `~/.kube/config`, else in-cluster; then `--context/--cluster/--user`, `--as/--as-group` and
//! `-n`. Credentials never leave kube's config: nothing here logs or prints them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use http::header::{HeaderValue, USER_AGENT};
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::{Client, Config};

use crate::cli::ConnectionArgs;
use crate::error::Error;

/// The user agent on every request; the audit-log test finds our requests by its prefix.
pub const AGENT: &str = concat!("kubectl-dispatch/", env!("CARGO_PKG_VERSION"));

/// A client and where it points.
#[derive(Clone)]
pub struct Connection {
    pub client: Client,
    /// The server URL, for messages.
    pub server: String,
    /// `-n`, else the context's namespace, else `default`.
    pub namespace: String,
    pub context: Option<String>,
}

pub async fn connect(
    args: &ConnectionArgs,
    timeout: Option<Duration>,
    live: bool,
    log: &crate::log::Log,
) -> Result<Connection, Error> {
    let (mut config, context) = load_config(args).await?;
    if let Some(ns) = &args.namespace {
        config.default_namespace = ns.clone();
    }
    if let Some(user) = &args.impersonate {
        config.auth_info.impersonate = Some(user.clone());
    }
    if !args.impersonate_groups.is_empty() {
        config.auth_info.impersonate_groups = Some(args.impersonate_groups.clone());
    }
    // The whole command is bounded by `timeout` (commands::bounded); the client's own timers sit
    // just beyond it so that the bound, with its clearer message, fires first.
    if let Some(t) = timeout {
        let margin = t + std::time::Duration::from_secs(1);
        config.connect_timeout = Some(margin.min(config.connect_timeout.unwrap_or(margin)));
        // A watch may be quiet for minutes (a Lease nobody renews sends nothing): no read
        // timeout there; kube's watcher restarts quiet watches itself.
        config.read_timeout = (!live).then_some(margin);
    }
    config.headers.push((USER_AGENT, HeaderValue::from_static(AGENT)));
    let server = config.cluster_url.to_string().trim_end_matches('/').to_string();
    log.info(
        1,
        &format!(
            "context {}, server {server}, namespace {}",
            context.as_deref().unwrap_or("<in-cluster>"),
            config.default_namespace
        ),
    );
    let namespace = config.default_namespace.clone();
    let client = super::client::build(config)?;
    Ok(Connection { client, server, namespace, context })
}

async fn load_config(args: &ConnectionArgs) -> Result<(Config, Option<String>), Error> {
    let options =
        KubeConfigOptions { context: args.context.clone(), cluster: args.cluster.clone(), user: args.user.clone() };
    let kubeconfig = match &args.kubeconfig {
        Some(path) => Some(read_file(path)?),
        None => read_default()?,
    };
    let Some(kubeconfig) = kubeconfig else {
        return in_cluster(args).map(|c| (c, None));
    };
    let context = options.context.clone().or_else(|| kubeconfig.current_context.clone());
    let config = Config::from_custom_kubeconfig(kubeconfig, &options).await.map_err(|e| match e {
        KubeconfigError::CurrentContextNotSet => Error::NoCurrentContext,
        KubeconfigError::LoadContext(name) => Error::UnknownContext(name),
        KubeconfigError::LoadClusterOfContext(name) => {
            Error::Kubeconfig(format!("cluster {name:?} not found in the kubeconfig"))
        }
        other => Error::Kubeconfig(first_line(&other.to_string())),
    })?;
    Ok((config, context))
}

pub(crate) fn read_file(path: &Path) -> Result<Kubeconfig, Error> {
    Kubeconfig::read_from(path).map_err(|e| match e {
        KubeconfigError::ReadConfig(io, _) => Error::ReadKubeconfig { path: path.to_path_buf(), cause: io.to_string() },
        other => Error::ReadKubeconfig { path: path.to_path_buf(), cause: first_line(&other.to_string()) },
    })
}

/// `KUBECONFIG` as kubectl reads it: split on the OS list separator, empty entries and
/// duplicates dropped, missing files ignored, the rest merged with the first to set a key
/// winning. Without it, `~/.kube/config` if it exists. `None` means there is no kubeconfig.
pub(crate) fn read_default() -> Result<Option<Kubeconfig>, Error> {
    let paths: Vec<PathBuf> = match std::env::var_os("KUBECONFIG") {
        Some(list) if !list.is_empty() => {
            let mut seen = Vec::<PathBuf>::new();
            for p in std::env::split_paths(&list).filter(|p| !p.as_os_str().is_empty()) {
                if !seen.contains(&p) {
                    seen.push(p);
                }
            }
            seen
        }
        _ => home_config().into_iter().collect(),
    };
    let mut merged: Option<Kubeconfig> = None;
    for path in paths.iter().filter(|p| p.exists()) {
        let next = read_file(path)?;
        merged = Some(match merged {
            None => next,
            Some(m) => m.merge(next).map_err(|e| Error::Kubeconfig(e.to_string()))?,
        });
    }
    Ok(merged)
}

fn home_config() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE"))?;
    Some(PathBuf::from(home).join(".kube").join("config"))
}

fn in_cluster(args: &ConnectionArgs) -> Result<Config, Error> {
    if args.context.is_some() {
        return Err(Error::NoKubeconfig);
    }
    let has_env = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
    if !has_env {
        return Err(Error::NoKubeconfig);
    }
    let mut config = Config::incluster()
        .map_err(|e| Error::Kubeconfig(format!("in-cluster config: {}", first_line(&e.to_string()))))?;
    if let Ok(ns) = std::env::var("POD_NAMESPACE") {
        config.default_namespace = ns;
    }
    Ok(config)
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().to_string()
}

/// The names of the kubeconfig's contexts, in file order, for `--all-contexts`.
pub fn context_names(args: &ConnectionArgs) -> Result<Vec<String>, Error> {
    let kubeconfig = match &args.kubeconfig {
        Some(path) => Some(read_file(path)?),
        None => read_default()?,
    };
    let names: Vec<String> = kubeconfig.ok_or(Error::NoKubeconfig)?.contexts.into_iter().map(|c| c.name).collect();
    if names.is_empty() {
        return Err(Error::Kubeconfig("the kubeconfig has no contexts".into()));
    }
    Ok(names)
}

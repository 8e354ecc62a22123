//! A kubeconfig, read as `--kubeconfig` and chosen from as kubectl chooses (context, cluster,
//! user, the flags laid over them), then taken as far as `connect` takes it before the
//! network: the exec plugin's settings validated as before running it (the plugin is never
//! run here), kube's config built from it, the proxy chosen (`proxy-url`, then the
//! environment's by Go's rules), the TLS settings made from its certificates, and the client
//! built from it as `connect` builds it (its auth layers, the token and impersonation headers,
//! a token file read, the auth-provider checked; no request is sent, so no network). The first
//! byte picks which connection flags are given. A value or an error, never a panic: a token
//! that is not a valid header value aborted the process in kube's bearer layer before the
//! client refused it.
//!
//! Inputs naming `/dev`, `/proc` or `/sys` are skipped: a certificate path there (`/dev/zero`)
//! is read as kubectl reads it, without end, which is no parser's answer.

#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use kube::client::ConfigExt;
use kube::config::{ExecAuthCluster, KubeConfigOptions};
use kubectl_dispatch::cluster::connecting::exec::ExecPlugin;
use kubectl_dispatch::cluster::connecting::server_clock::ServerClock;
use kubectl_dispatch::cluster::connecting::{client, kubeconfig, proxy};
use kubectl_dispatch::invocation::{ConnectionSettings, Secret};
use libfuzzer_sys::fuzz_target;

static RUNTIME: LazyLock<tokio::runtime::Runtime> =
    LazyLock::new(|| tokio::runtime::Builder::new_current_thread().build().unwrap());

static FILE: LazyLock<PathBuf> = LazyLock::new(|| {
    let dir = std::env::temp_dir().join(format!("dispatch-fuzz-kubeconfig-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("config")
});

fuzz_target!(|data: &[u8]| {
    let Some((&flags, text)) = data.split_first() else { return };
    if [&b"/dev"[..], b"/proc", b"/sys"].iter().any(|p| text.windows(p.len()).any(|w| w == *p)) {
        return;
    }
    std::fs::write(&*FILE, text).unwrap();
    let bit = |n: u8| flags & (1 << n) != 0;
    let mut args = ConnectionSettings { kubeconfig: Some(FILE.clone()), ..ConnectionSettings::default() };
    if bit(0) {
        args.context = Some("prod".into());
    }
    if bit(1) {
        args.server = Some(if bit(7) { "10.0.0.1:6443".into() } else { "https://10.0.0.1:6443".into() });
    }
    if bit(2) {
        args.token = Some(Secret("flag-token".into()));
    }
    if bit(3) {
        args.namespace = Some("team-a".into());
    }
    if bit(4) {
        args.insecure_skip_tls_verify = Some(true);
        args.tls_server_name = Some("api.example.com".into());
    }
    if bit(5) {
        args.user = Some("admin".into());
        args.cluster = Some("prod".into());
    }
    if bit(6) {
        args.impersonate = Some("alice".into());
        args.impersonate_groups = vec!["dev".into()];
        args.impersonate_uid = Some("1234".into());
    }
    let _ = kubeconfig::context_names(&args);
    let Ok(Some(mut chosen)) = kubeconfig::choose(&args) else { return };
    let uses_exec = kubeconfig::own_credential(&chosen.user) == kubeconfig::OwnCredential::ExecPlugin;
    if let Some(config) = chosen.user.exec.take().filter(|_| uses_exec) {
        let plugin = ExecPlugin {
            cluster: config.provide_cluster_info.then(|| ExecAuthCluster::try_from(&chosen.cluster).ok()).flatten(),
            config,
            user: chosen.user_name.clone(),
            may_interact: false,
            stderr: None,
            bound: None,
        };
        let _ = plugin.validate();
        let _ = plugin.command();
    }
    // The auth-provider is kept: the client refuses gcp and azure (gcp's cmd-path is a command
    // kube would run) before kube's layers see them.
    let loaded =
        RUNTIME.block_on(kube::Config::from_custom_kubeconfig(chosen.to_kubeconfig(), &KubeConfigOptions::default()));
    let Ok(config) = loaded else { return };
    let env = |name: &str| match name {
        "HTTPS_PROXY" => Some("http://user:p%40ss@proxy.example.com:3128".to_string()),
        "NO_PROXY" => Some("10.0.0.0/8,.svc,localhost".to_string()),
        _ => None,
    };
    let chosen_proxy = proxy::choose(chosen.cluster.proxy_url.as_deref(), &config.cluster_url, &env);
    let _ = config.rustls_client_config();
    // kube's Client starts its buffer's worker on the runtime: built inside it, and dropped
    // before the next input (no request is ever sent).
    let route = client::Route {
        proxy: chosen_proxy.ok().flatten(),
        request_timeout: None,
        exec: None,
        server_clock: ServerClock::default(),
    };
    RUNTIME.block_on(async move {
        let _ = client::build(config, route);
    });
});

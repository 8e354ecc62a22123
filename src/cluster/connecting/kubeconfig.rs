//! The kubeconfig as kubectl reads it: `--kubeconfig`, else `KUBECONFIG` merged, else
//! `~/.kube/config`; then the context, cluster and user chosen by `--context/--cluster/--user`,
//! with kubectl's connection flags laid over them by client-go's rules (`clientcmd`'s
//! `DirectClientConfig`). The result is one cluster, one user and one namespace.

use std::path::{Path, PathBuf};

use kube::config::{AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext};

use super::local_file;
use crate::error::{Error, first_line};
use crate::invocation::ConnectionSettings;

/// The chosen context, after the flags.
#[derive(Debug, Clone)]
pub struct Chosen {
    /// The context's name, for messages (none when only `--server` names the cluster).
    pub context: Option<String>,
    pub user_name: String,
    pub cluster: Cluster,
    pub user: AuthInfo,
    pub namespace: Option<String>,
}

impl Chosen {
    /// A kubeconfig holding just this, for kube's loader.
    pub fn to_kubeconfig(&self) -> Kubeconfig {
        const NAME: &str = "kubectl-dispatch";
        Kubeconfig {
            clusters: vec![NamedCluster {
                name: NAME.into(),
                cluster: Some(self.cluster.clone()),
                ..Default::default()
            }],
            auth_infos: vec![NamedAuthInfo {
                name: NAME.into(),
                auth_info: Some(self.user.clone()),
                ..Default::default()
            }],
            contexts: vec![NamedContext {
                name: NAME.into(),
                context: Some(Context {
                    cluster: NAME.into(),
                    user: Some(NAME.into()),
                    namespace: self.namespace.clone(),
                    ..Context::default()
                }),
                ..Default::default()
            }],
            current_context: Some(NAME.into()),
            ..Kubeconfig::default()
        }
    }
}

/// The context to use, or `None` when there is no kubeconfig and no `--server` (in-cluster).
pub fn choose(args: &ConnectionSettings) -> Result<Option<Chosen>, Error> {
    let kubeconfig = match load(args)? {
        Some(k) => k,
        None if args.server.is_some() => Kubeconfig::default(),
        None => return Ok(None),
    };
    let context_name =
        args.context.clone().or_else(|| kubeconfig.current_context.clone()).filter(|name| !name.is_empty());
    let context = match &context_name {
        Some(name) => Some(
            kubeconfig
                .contexts
                .iter()
                .find(|c| &c.name == name)
                .map(|c| c.context.clone().unwrap_or_default())
                .ok_or_else(|| Error::UnknownContext(name.clone()))?,
        ),
        None if args.server.is_none() && args.cluster.is_none() => return Err(Error::NoCurrentContext),
        None => None,
    };
    let context = context.unwrap_or_default();
    let cluster_name = args.cluster.clone().or_else(|| Some(context.cluster.clone()).filter(|c| !c.is_empty()));
    let mut cluster = match &cluster_name {
        Some(name) => match kubeconfig.clusters.iter().find(|c| &c.name == name) {
            Some(named) => named.cluster.clone().unwrap_or_default(),
            None if args.server.is_some() && args.cluster.is_none() => Cluster::default(),
            None => return Err(Error::Kubeconfig(format!("cluster {name:?} not found in the kubeconfig"))),
        },
        None => Cluster::default(),
    };
    let user_name = args.user.clone().or_else(|| context.user.clone()).unwrap_or_default();
    let mut user = match kubeconfig.auth_infos.iter().find(|u| u.name == user_name) {
        Some(named) => named.auth_info.clone().unwrap_or_default(),
        None if user_name.is_empty() => AuthInfo::default(),
        None => return Err(Error::Kubeconfig(format!("user {user_name:?} not found in the kubeconfig"))),
    };
    lay_over_cluster(&mut cluster, args);
    lay_over_user(&mut user, args);
    cluster.server = cluster.server.map(with_scheme);
    validate(&cluster, &user, &user_name)?;
    if !is_tls(cluster.server.as_deref()) {
        drop_credentials(&mut user);
    }
    Ok(Some(Chosen {
        context: context_name,
        user_name,
        cluster,
        user,
        namespace: args.namespace.clone().or(context.namespace),
    }))
}

/// `--server`, `--certificate-authority`, `--insecure-skip-tls-verify`, `--tls-server-name`,
/// `--disable-compression`, as client-go lays them over the kubeconfig's cluster.
fn lay_over_cluster(cluster: &mut Cluster, args: &ConnectionSettings) {
    if let Some(server) = &args.server {
        cluster.server = Some(server.clone());
    }
    // A CA flag, or an insecure one, replaces the kubeconfig's whole trust setting.
    let insecure = args.insecure_skip_tls_verify == Some(true);
    if insecure || args.certificate_authority.is_some() {
        cluster.insecure_skip_tls_verify = Some(insecure);
        cluster.certificate_authority = args.certificate_authority.as_ref().map(|p| p.display().to_string());
        cluster.certificate_authority_data = None;
    }
    // A new --server drops the kubeconfig's tls-server-name unless the flag gives one too.
    if args.tls_server_name.is_some() || args.server.is_some() {
        cluster.tls_server_name = args.tls_server_name.clone();
    }
    if args.disable_compression == Some(true) {
        cluster.disable_compression = Some(true);
    }
}

/// `--token`, `--client-certificate`, `--client-key`, `--as`, `--as-group`, `--as-uid`.
fn lay_over_user(user: &mut AuthInfo, args: &ConnectionSettings) {
    if let Some(token) = &args.token {
        user.token = Some(token.0.clone().into());
    }
    if let Some(path) = &args.client_certificate {
        user.client_certificate = Some(path.display().to_string());
    }
    if let Some(path) = &args.client_key {
        user.client_key = Some(path.display().to_string());
    }
    if let Some(name) = &args.impersonate {
        user.impersonate = Some(name.clone());
    }
    if !args.impersonate_groups.is_empty() {
        user.impersonate_groups = Some(args.impersonate_groups.clone());
    }
    if let Some(uid) = &args.impersonate_uid {
        user.impersonate_uid = Some(uid.clone());
    }
}

/// A server without a scheme, as kubectl reads one: plain http (kubectl does so even with a
/// CA or client certificate given).
fn with_scheme(server: String) -> String {
    if server.contains("://") || server.is_empty() { server } else { format!("http://{server}") }
}

/// Whether client-go's `IsConfigTransportTLS` holds for this server: its URL is https. It is
/// judged on the server alone (client-go asks before it reads the CA or client certificate, so
/// a scheme-less `host:port` is http even with them), and a server that is not a URL is not.
fn is_tls(server: Option<&str>) -> bool {
    server.and_then(|s| s.split_once("://")).is_some_and(|(scheme, _)| scheme.eq_ignore_ascii_case("https"))
}

/// What client-go leaves out of the connection to a server that is not TLS ("only try to read
/// the auth information if we are secure", `clientcmd`'s `DirectClientConfig.ClientConfig`):
/// every credential (token, token file, user name and password, client certificate and key,
/// auth-provider, exec plugin, which is then never run), so none crosses the network, or an
/// `HTTP_PROXY`, in the clear. Impersonation is read before that check and stays, as in client-go.
fn drop_credentials(user: &mut AuthInfo) {
    user.token = None;
    user.token_file = None;
    user.username = None;
    user.password = None;
    user.client_certificate = None;
    user.client_certificate_data = None;
    user.client_key = None;
    user.client_key_data = None;
    user.auth_provider = None;
    user.exec = None;
}

/// What `clientcmd` refuses before connecting.
fn validate(cluster: &Cluster, user: &AuthInfo, user_name: &str) -> Result<(), Error> {
    let has_ca = cluster.certificate_authority.as_deref().is_some_and(|s| !s.is_empty())
        || cluster.certificate_authority_data.as_deref().is_some_and(|s| !s.is_empty());
    if cluster.insecure_skip_tls_verify == Some(true) && has_ca {
        return Err(Error::Kubeconfig(
            "specifying a root certificates file with the insecure flag is not allowed".into(),
        ));
    }
    // kubectl refuses a file beside embedded data (from the kubeconfig, or a flag over it).
    let set = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.is_empty());
    if set(&user.client_certificate) && set(&user.client_certificate_data) {
        return Err(Error::Kubeconfig(format!(
            "client-cert-data and client-cert are both specified for {user_name}. client-cert-data will override."
        )));
    }
    if set(&user.client_key) && user.client_key_data.is_some() {
        return Err(Error::Kubeconfig(format!(
            "client-key-data and client-key are both specified for {user_name}; client-key-data will override"
        )));
    }
    // kubectl opens the certificate and key files before it looks at the server (so over http
    // too, where it then does not use them).
    for (what, path) in [("client-cert", &user.client_certificate), ("client-key", &user.client_key)] {
        if let Some(path) = path.as_deref().filter(|p| !p.is_empty())
            && let Err(e) = std::fs::File::open(path)
        {
            return Err(Error::Kubeconfig(format!(
                "unable to read {what} {path} for {user_name} due to open {path}: {e}"
            )));
        }
    }
    let impersonates_more =
        user.impersonate_uid.is_some() || user.impersonate_groups.as_ref().is_some_and(|g| !g.is_empty());
    if impersonates_more && user.impersonate.as_deref().is_none_or(str::is_empty) {
        return Err(Error::Kubeconfig(format!(
            "requesting uid, groups or user-extra for {user_name} without impersonating a user"
        )));
    }
    Ok(())
}

/// The credential of a user that kubectl-dispatch handles itself instead of leaving it to kube's
/// auth layer. Which credential wins is decided here, once, for the connection
/// (`connect.rs`: whether the exec plugin runs) and the HTTP stack (`client.rs`: whether the
/// token file is read as client-go reads it).
#[derive(Debug, PartialEq, Eq)]
pub enum OwnCredential {
    /// The exec plugin runs, as kubectl would run it.
    ExecPlugin,
    /// The token file is read, trimmed and re-read as client-go does (`credentials.rs`).
    TokenFile,
    /// Nothing: kube's layers send what the user has, if anything.
    Neither,
}

pub fn own_credential(user: &AuthInfo) -> OwnCredential {
    let set = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.is_empty());
    let cert = set(&user.client_certificate) || set(&user.client_certificate_data);
    let key = set(&user.client_key) || user.client_key_data.is_some();
    // client-go's `HasTokenAuth`, `HasBasicAuth` (a user name) and `HasCertAuth` (a certificate
    // and its key): with any of them kubectl sends that and never runs the plugin.
    let other = user.token.is_some() || set(&user.token_file) || set(&user.username) || (cert && key);
    if user.exec.is_some() && !other {
        return OwnCredential::ExecPlugin;
    }
    // kube's order of credentials: an auth-provider, basic auth (a user name and a password)
    // and a token all come before a token file.
    let before_file =
        user.auth_provider.is_some() || user.token.is_some() || (user.username.is_some() && user.password.is_some());
    if user.token_file.is_some() && !before_file { OwnCredential::TokenFile } else { OwnCredential::Neither }
}

/// The kubeconfig files merged, as kubectl reads them; `None` when there are none.
pub(crate) fn load(args: &ConnectionSettings) -> Result<Option<Kubeconfig>, Error> {
    match &args.kubeconfig {
        Some(path) => read_file(path).map(Some),
        None => read_default(),
    }
}

/// One kubeconfig file, read once per run: its bytes read once, bounded
/// ([`local_file::KUBECONFIG_LIMIT`]) and on a thread of their own, whatever the file is (a
/// regular file, a FIFO, a device); what they held is kept for the rest of the run, so a
/// fleet's contexts, or a second look at the same file, read it no more. A file changed since
/// (another inode, size or time; in-process tests rewrite theirs) is read anew.
pub(crate) fn read_file(path: &Path) -> Result<Kubeconfig, Error> {
    static READ: std::sync::Mutex<Vec<(PathBuf, Identity, Kubeconfig)>> = std::sync::Mutex::new(Vec::new());
    let identity = Identity::of(path);
    let mut read = READ.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, _, config)) = read.iter().find(|(p, i, _)| p == path && identity.as_ref() == Some(i)) {
        return Ok(config.clone());
    }
    let config = read_once(path)?;
    if let Some(identity) = identity {
        read.retain(|(p, _, _)| p != path);
        read.push((path.to_path_buf(), identity, config.clone()));
    }
    Ok(config)
}

/// What tells a file from the same file changed. A FIFO's or a device's times move as it is
/// written or read, so they are known by their inode alone.
#[derive(PartialEq, Eq)]
struct Identity {
    device: u64,
    inode: u64,
    /// A regular file's size and modification time.
    content: Option<(u64, std::time::SystemTime)>,
}

impl Identity {
    fn of(path: &Path) -> Option<Identity> {
        let m = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let (device, inode) = {
            use std::os::unix::fs::MetadataExt;
            (m.dev(), m.ino())
        };
        #[cfg(not(unix))]
        let (device, inode) = (0, 0);
        let content = m.is_file().then(|| m.modified().ok().map(|t| (m.len(), t))).flatten();
        if m.is_file() && content.is_none() {
            return None;
        }
        Some(Identity { device, inode, content })
    }
}

/// Reads one kubeconfig file: its bytes decoded as kube decodes a file (a UTF-16 or UTF-8
/// byte-order mark), its relative paths made absolute against the file's directory as kube's
/// `Kubeconfig::read_from` makes them (but a FIFO's or a device's: a pipe has no directory of
/// its own, so they stay relative to the working directory).
fn read_once(path: &Path) -> Result<Kubeconfig, Error> {
    let refused = |cause: String| Error::ReadKubeconfig { path: path.to_path_buf(), cause };
    let regular = match std::fs::metadata(path) {
        // Refused before it is read.
        Ok(m) if m.is_file() && m.len() > local_file::KUBECONFIG_LIMIT => {
            return Err(refused(local_file::Unread::TooLarge(local_file::KUBECONFIG_LIMIT).cause("kubeconfig")));
        }
        Ok(m) => m.is_file(),
        Err(_) => true,
    };
    let bytes = local_file::read(path, local_file::KUBECONFIG_LIMIT).map_err(|e| refused(e.cause("kubeconfig")))?;
    let mut config = from_bytes(&bytes).map_err(refused)?;
    if let Some(dir) = path.parent().filter(|_| regular) {
        anchor(&mut config, dir);
    }
    Ok(config)
}

/// The file paths a kubeconfig names, relative ones made absolute against `dir`, as kube's
/// `Kubeconfig::read_from` does (an exec command only when it holds a path separator, as
/// client-go's `GetAuthInfoFileReferences`: a bare name is looked up on `PATH`).
fn anchor(config: &mut Kubeconfig, dir: &Path) {
    let absolute = |file: &mut Option<String>| {
        if let Some(f) = file.as_deref().filter(|f| Path::new(f).is_relative())
            && let Some(joined) = dir.join(f).to_str()
        {
            *file = Some(joined.to_string());
        }
    };
    for cluster in config.clusters.iter_mut().filter_map(|c| c.cluster.as_mut()) {
        absolute(&mut cluster.certificate_authority);
    }
    for user in config.auth_infos.iter_mut().filter_map(|u| u.auth_info.as_mut()) {
        absolute(&mut user.client_certificate);
        absolute(&mut user.client_key);
        absolute(&mut user.token_file);
        if let Some(exec) = user.exec.as_mut().filter(|e| e.command.as_deref().is_some_and(|c| c.contains('/'))) {
            absolute(&mut exec.command);
        }
    }
}

/// A kubeconfig from its bytes, decoded as kube decodes a file (a UTF-16 or UTF-8 byte-order
/// mark), with kube's words for bytes it cannot decode. kube's own reader (kube-client 5.0's
/// `read_path`) decodes UTF-16 two bytes at a time and panics on an odd byte left over (found
/// by `fuzz/`'s kubeconfig target): that is refused here, in kube's words for UTF-16 it cannot
/// decode.
fn from_bytes(bytes: &[u8]) -> Result<Kubeconfig, String> {
    let utf16 = |rest: &[u8], le: bool| -> Result<String, String> {
        if rest.len() % 2 == 1 {
            return Err(format!("Invalid UTF-16 {}", if le { "LE" } else { "BE" }));
        }
        let units: Vec<u16> = rest
            .chunks(2)
            .map(|c| if le { u16::from_le_bytes([c[0], c[1]]) } else { u16::from_be_bytes([c[0], c[1]]) })
            .collect();
        String::from_utf16(&units).map_err(|_| format!("Invalid UTF-16 {}", if le { "LE" } else { "BE" }))
    };
    let text = match bytes {
        [0xFF, 0xFE, rest @ ..] => utf16(rest, true)?,
        [0xFE, 0xFF, rest @ ..] => utf16(rest, false)?,
        [0xEF, 0xBB, 0xBF, rest @ ..] => {
            String::from_utf8(rest.to_vec()).map_err(|_| "Invalid UTF-8 BOM".to_string())?
        }
        _ => String::from_utf8(bytes.to_vec()).map_err(|_| "Invalid UTF-8".to_string())?,
    };
    Kubeconfig::from_yaml(&text).map_err(|e| first_line(&e.to_string()))
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

/// The names of the kubeconfig's contexts, in file order, for `--all-contexts`.
pub fn context_names(args: &ConnectionSettings) -> Result<Vec<String>, Error> {
    let names: Vec<String> = load(args)?.ok_or(Error::NoKubeconfig)?.contexts.into_iter().map(|c| c.name).collect();
    if names.is_empty() {
        return Err(Error::Kubeconfig("the kubeconfig has no contexts".into()));
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_utf16_kubeconfig_with_an_odd_byte_is_refused_not_a_panic() {
        let dir = std::env::temp_dir().join(format!("dispatch-utf16-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (bom, order) in [([0xFF, 0xFE], "LE"), ([0xFE, 0xFF], "BE")] {
            let path = dir.join(order);
            // The fuzzer's input (fuzz/corpus/kubeconfig/utf16-odd-byte), which panicked in kube.
            std::fs::write(&path, [&bom[..], b"\xff\xffapiVersion: v"].concat()).unwrap();
            match read_file(&path) {
                Err(Error::ReadKubeconfig { cause, .. }) => assert_eq!(cause, format!("Invalid UTF-16 {order}")),
                other => panic!("{order}: {other:?}"),
            }
            // Whole UTF-16 is still decoded by kube.
            let text = "apiVersion: v1\nkind: Config\ncurrent-context: x\n".encode_utf16();
            let bytes: Vec<u8> =
                text.flat_map(|u| if order == "LE" { u.to_le_bytes() } else { u.to_be_bytes() }).collect();
            std::fs::write(&path, [&bom[..], &bytes].concat()).unwrap();
            assert_eq!(read_file(&path).unwrap().current_context.as_deref(), Some("x"), "{order}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_kubeconfig_is_read_once_a_run_even_a_fifo_that_can_be_read_once() {
        let dir = std::env::temp_dir().join(format!("dispatch-read-once-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let text = "apiVersion: v1\nkind: Config\ncurrent-context: a\nclusters:\n- name: c\n  cluster:\n    server: https://k:6443\n\
                    contexts:\n- name: a\n  context:\n    cluster: c\n- name: b\n  context:\n    cluster: c\n";
        // The writer writes once: a second read of the FIFO would wait for a writer that never comes.
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(&fifo, text).unwrap())
        };
        let settings = ConnectionSettings { kubeconfig: Some(fifo.clone()), ..args() };
        let started = std::time::Instant::now();
        assert_eq!(context_names(&settings).unwrap(), ["a", "b"]);
        writer.join().unwrap();
        for context in ["a", "b"] {
            let chosen = choose(&ConnectionSettings { context: Some(context.into()), ..settings.clone() }).unwrap();
            assert_eq!(chosen.unwrap().cluster.server.as_deref(), Some("https://k:6443"));
        }
        assert!(started.elapsed() < local_file::READ_TIME, "read again: {:?}", started.elapsed());
        // A regular file changed since it was read is read anew.
        let file = dir.join("config");
        std::fs::write(&file, text).unwrap();
        assert_eq!(read_file(&file).unwrap().current_context.as_deref(), Some("a"));
        std::fs::write(&file, text.replace("current-context: a", "current-context: bb")).unwrap();
        assert_eq!(read_file(&file).unwrap().current_context.as_deref(), Some("bb"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn relative_paths_are_made_absolute_as_kube_makes_them() {
        let dir = std::env::temp_dir().join(format!("dispatch-anchor-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config");
        let text = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://k\n    certificate-authority: ca.crt\n\
                    users:\n- name: u\n  user:\n    client-certificate: sub/u.crt\n    client-key: /abs/u.key\n    tokenFile: t\n\
                    \x20   exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ./bin/get-token\n\
                    - name: v\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n";
        std::fs::write(&path, text).unwrap();
        let ours = read_file(&path).unwrap();
        let kubes = Kubeconfig::read_from(&path).unwrap();
        assert_eq!(format!("{:?}", ours.clusters), format!("{:?}", kubes.clusters));
        assert_eq!(format!("{:?}", ours.auth_infos), format!("{:?}", kubes.auth_infos));
        let ca = ours.clusters[0].cluster.as_ref().unwrap().certificate_authority.clone().unwrap();
        assert_eq!(ca, dir.join("ca.crt").to_str().unwrap());
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn args() -> ConnectionSettings {
        ConnectionSettings::default()
    }

    fn with_ca() -> Cluster {
        Cluster {
            server: Some("https://a:6443".into()),
            certificate_authority_data: Some("Q0E=".into()),
            tls_server_name: Some("kube".into()),
            ..Cluster::default()
        }
    }

    #[test]
    fn a_ca_or_insecure_flag_replaces_the_trust_setting() {
        let mut c = with_ca();
        lay_over_cluster(&mut c, &ConnectionSettings { insecure_skip_tls_verify: Some(true), ..args() });
        assert_eq!((c.insecure_skip_tls_verify, c.certificate_authority_data), (Some(true), None));
        let mut c = with_ca();
        lay_over_cluster(&mut c, &ConnectionSettings { certificate_authority: Some("ca.crt".into()), ..args() });
        assert_eq!(c.certificate_authority.as_deref(), Some("ca.crt"));
        assert_eq!((c.insecure_skip_tls_verify, c.certificate_authority_data), (Some(false), None));
        // --insecure-skip-tls-verify=false is Go's zero value: it changes nothing
        let mut c = with_ca();
        lay_over_cluster(&mut c, &ConnectionSettings { insecure_skip_tls_verify: Some(false), ..args() });
        assert_eq!(c.certificate_authority_data.as_deref(), Some("Q0E="));
    }

    #[test]
    fn a_new_server_drops_the_kubeconfigs_tls_server_name() {
        let mut c = with_ca();
        lay_over_cluster(&mut c, &ConnectionSettings { server: Some("https://b".into()), ..args() });
        assert_eq!((c.server.as_deref(), c.tls_server_name), (Some("https://b"), None));
        let mut c = with_ca();
        lay_over_cluster(&mut c, &ConnectionSettings { tls_server_name: Some("other".into()), ..args() });
        assert_eq!(c.tls_server_name.as_deref(), Some("other"));
        let mut c = with_ca();
        lay_over_cluster(&mut c, &args());
        assert_eq!(c.tls_server_name.as_deref(), Some("kube"));
    }

    #[test]
    fn insecure_with_a_ca_is_refused_and_uid_needs_a_user() {
        let c = Cluster { insecure_skip_tls_verify: Some(true), ..with_ca() };
        assert!(validate(&c, &AuthInfo::default(), "u").is_err());
        let u = AuthInfo { impersonate_uid: Some("1".into()), ..AuthInfo::default() };
        assert!(validate(&Cluster::default(), &u, "u").unwrap_err().to_string().contains("without impersonating"));
        let u = AuthInfo { impersonate: Some("x".into()), ..u };
        assert!(validate(&Cluster::default(), &u, "u").is_ok());
    }

    #[test]
    fn a_token_or_certificate_keeps_exec_from_running() {
        let uses_exec = |u: &AuthInfo| own_credential(u) == OwnCredential::ExecPlugin;
        let exec = Some(kube::config::ExecConfig::default());
        assert!(uses_exec(&AuthInfo { exec: exec.clone(), ..AuthInfo::default() }));
        assert!(!uses_exec(&AuthInfo {
            exec: exec.clone(),
            token: Some("t".to_string().into()),
            ..AuthInfo::default()
        }));
        let cert_only = AuthInfo { exec: exec.clone(), client_certificate: Some("c".into()), ..AuthInfo::default() };
        assert!(uses_exec(&cert_only), "a certificate without a key is not cert auth");
        assert!(!uses_exec(&AuthInfo { client_key: Some("k".into()), ..cert_only }));
        assert!(!uses_exec(&AuthInfo { exec, username: Some("u".into()), ..AuthInfo::default() }));
    }

    #[test]
    fn a_token_file_is_read_here_unless_a_credential_before_it_in_kubes_order_is_there() {
        let file = AuthInfo { token_file: Some("/t".into()), ..AuthInfo::default() };
        assert_eq!(own_credential(&file), OwnCredential::TokenFile);
        let exec = AuthInfo { exec: Some(kube::config::ExecConfig::default()), ..file.clone() };
        assert_eq!(own_credential(&exec), OwnCredential::TokenFile, "a token file keeps the plugin from running");
        let token = AuthInfo { token: Some("t".to_string().into()), ..file.clone() };
        assert_eq!(own_credential(&token), OwnCredential::Neither);
        let name_only = AuthInfo { username: Some("u".into()), ..file.clone() };
        assert_eq!(own_credential(&name_only), OwnCredential::TokenFile);
        let basic = AuthInfo { password: Some("p".to_string().into()), ..name_only };
        assert_eq!(own_credential(&basic), OwnCredential::Neither);
        assert_eq!(own_credential(&AuthInfo::default()), OwnCredential::Neither);
    }

    #[test]
    fn credentials_go_only_to_an_https_server() {
        let path = std::env::temp_dir().join(format!("dispatch-unit-{}-tls.kubeconfig", std::process::id()));
        let user = "    token: kubeconfig-token\n    username: u\n    password: p\n    client-certificate: /dev/null\n    client-key: /dev/null\n    auth-provider:\n      name: oidc\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: never-run\n    as: someone\n";
        for (server, flag_token, sent) in [
            ("http://h:8080", None, false),
            ("h:8080", None, false),
            ("HTTP://h", Some("flag-token"), false),
            ("https://h", None, true),
            ("HTTPS://h", Some("flag-token"), true),
        ] {
            let text = format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: x\ncontexts:\n- name: x\n  context: {{cluster: x, user: x}}\nclusters:\n- name: x\n  cluster:\n    server: {server}\nusers:\n- name: x\n  user:\n{user}"
            );
            std::fs::write(&path, text).unwrap();
            let args = ConnectionSettings {
                kubeconfig: Some(path.clone()),
                token: flag_token.map(|t| crate::invocation::Secret(t.to_string())),
                ..args()
            };
            let chosen = choose(&args).unwrap().unwrap();
            let u = &chosen.user;
            let has = [
                u.token.is_some(),
                u.username.is_some(),
                u.password.is_some(),
                u.client_certificate.is_some(),
                u.client_key.is_some(),
                u.auth_provider.is_some(),
                u.exec.is_some(),
            ];
            assert_eq!(has, [sent; 7], "{server}");
            assert_eq!(u.impersonate.as_deref(), Some("someone"), "impersonation stays, as in client-go: {server}");
        }
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_server_without_a_scheme_is_plain_http_as_kubectl_reads_it() {
        assert_eq!(with_scheme("h:6443".into()), "http://h:6443");
        assert_eq!(with_scheme("https://h".into()), "https://h");
    }
}

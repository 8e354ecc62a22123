//! Credentials that cannot be sent are refused before the client is built, as errors: a token
//! or an impersonation value that no HTTP header can carry (a line break, another control
//! character), and the gcp and azure auth-providers that kubectl 1.26 and later removed.
//!
//! Go's `net/http` refuses such a header value at the request ("net/http: invalid header field
//! value for \"Authorization\"", exit 1); the layers kube builds from the config would instead
//! abort the process (tower-http's bearer layer `expect`s a valid value). The values are
//! checked as they would be sent, untrimmed: client-go trims a `tokenFile`'s content (that is
//! credentials.rs's), never a kubeconfig `token:` or `--token`.

use http::HeaderValue;
use kube::config::AuthInfo;
use secrecy::ExposeSecret;

use crate::error::Error;

/// Checks every header value the user's credentials and impersonation would put on a request.
pub fn check(auth: &AuthInfo) -> Result<(), Error> {
    if let Some(token) = &auth.token {
        sendable("Authorization", "the token", &format!("Bearer {}", token.expose_secret()))?;
    }
    if let Some(provider) = &auth.auth_provider {
        removed_provider(&provider.name)?;
        if let Some(token) = provider.config.get("id-token") {
            sendable("Authorization", "the auth-provider's id-token", &format!("Bearer {token}"))?;
        }
    }
    if let Some(user) = &auth.impersonate {
        sendable("Impersonate-User", "--as", user)?;
    }
    if let Some(uid) = &auth.impersonate_uid {
        sendable("Impersonate-Uid", "--as-uid", uid)?;
    }
    for group in auth.impersonate_groups.iter().flatten() {
        sendable("Impersonate-Group", "--as-group", group)?;
    }
    for (key, values) in auth.impersonate_user_extra.iter().flatten() {
        for value in values {
            sendable(&format!("Impersonate-Extra-{key}"), "the impersonation extra", value)?;
        }
    }
    Ok(())
}

/// A token from an exec credential plugin, checked when the plugin hands it out.
pub fn token_sendable(token: &str) -> Result<(), String> {
    match HeaderValue::from_str(&format!("Bearer {token}")) {
        Ok(_) => Ok(()),
        Err(_) => Err(format!("its token {}", UNSENDABLE)),
    }
}

const UNSENDABLE: &str = "holds a line break or another control character, which an HTTP header cannot carry";

/// The rule of Go's `httpguts.ValidHeaderFieldValue` and of `http::HeaderValue`: no control
/// character but TAB.
fn sendable(header: &str, what: &str, value: &str) -> Result<(), Error> {
    if HeaderValue::from_str(value).is_ok() {
        return Ok(());
    }
    Err(Error::Header { header: header.to_string(), cause: format!("{what} {UNSENDABLE}") })
}

/// kubectl 1.26 and later refuse the gcp and azure auth-providers with these words (client-go's
/// `plugin/pkg/client/auth/gcp` and `.../azure`); kube would run gcp's `cmd-path` itself, on
/// the runtime's thread and without a time limit.
fn removed_provider(name: &str) -> Result<(), Error> {
    let (plugin, see) = match name {
        "gcp" => (
            "\"gke-gcloud-auth-plugin\"",
            "https://cloud.google.com/blog/products/containers-kubernetes/kubectl-auth-changes-in-gke",
        ),
        "azure" => (
            "https://github.com/Azure/kubelogin",
            "https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins",
        ),
        _ => return Ok(()),
    };
    Err(Error::AuthProviderRemoved {
        name: name.to_string(),
        hint: format!(
            "Please use the {plugin} kubectl/client-go credential plugin instead. See {see} for further details"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(yaml: &str) -> AuthInfo {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn a_token_with_a_line_break_is_an_error_not_an_abort() {
        let e = check(&auth("token: |\n  abc\n")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "net/http: invalid header field value for \"Authorization\": the token holds a line break or another \
             control character, which an HTTP header cannot carry"
        );
        assert!(check(&auth("token: abc")).is_ok());
        // Not trimmed, as client-go does not trim it: a space at the end is a valid value.
        assert!(check(&auth("token: 'abc '")).is_ok());
        assert!(check(&auth("token: \"a\\tb\"")).is_ok(), "TAB is allowed, as in Go");
        assert!(check(&auth("token: \"a\\u007fb\"")).is_err(), "DEL is not");
    }

    #[test]
    fn impersonation_values_are_checked_too() {
        for (yaml, header) in [
            ("as: \"a\\nb\"", "Impersonate-User"),
            ("as-uid: \"a\\rb\"", "Impersonate-Uid"),
            ("as-groups: [ok, \"a\\nb\"]", "Impersonate-Group"),
        ] {
            let e = check(&auth(yaml)).unwrap_err();
            assert!(e.to_string().contains(&format!("{header:?}")), "{yaml}: {e}");
        }
    }

    #[test]
    fn the_removed_auth_providers_and_oidc_tokens_are_checked_before_the_client() {
        let e = check(&auth("auth-provider: {name: gcp, config: {cmd-path: /bin/sleep}}")).unwrap_err();
        assert_eq!(e.to_string(), "The gcp auth plugin has been removed.");
        assert!(e.hint().unwrap().starts_with("Please use the \"gke-gcloud-auth-plugin\" kubectl/client-go"));
        let e = check(&auth("auth-provider: {name: azure}")).unwrap_err();
        assert_eq!(e.to_string(), "The azure auth plugin has been removed.");
        assert!(check(&auth("auth-provider: {name: oidc, config: {id-token: abc}}")).is_ok());
        assert!(check(&auth("auth-provider: {name: oidc, config: {id-token: \"a\\nb\"}}")).is_err());
    }
}

//! The extra reads behind a hint, made only on the path that needs them: the Leases of a
//! namespace when the one named is not there (and the one of that name in dispatch's
//! namespace), the Workloads of every namespace when none wait in the one shown. A read that
//! fails gives no hint, never an error.

use kube::api::{Api, ListParams};

use crate::cluster::connecting::connect::Connection;
use crate::core::lease::LeaseRef;

/// `Lease <ns>/<name> does not exist; did you mean ...? (Leases in <ns>: ...)`, when the
/// Leases of the namespace may be listed; else `None`.
pub async fn missing_lease(conn: &Connection, lease: &LeaseRef) -> Option<String> {
    let api: Api<k8s_openapi::api::coordination::v1::Lease> = Api::namespaced(conn.client.clone(), &lease.namespace);
    let list = api.list_metadata(&ListParams::default().limit(500)).await.ok()?;
    let names: Vec<String> = list.items.into_iter().filter_map(|l| l.metadata.name).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let plural = format!("Leases in namespace {}", lease.namespace);
    let mut text = crate::core::hint::not_found("Lease", &plural, &lease.name, &names);
    text.insert_str("Lease ".len(), &format!("{}/", lease.namespace));
    Some(text)
}

/// `namespace`, when a Lease of `lease`'s name exists there and `lease` is in another: `lease
/// NAME` looked in the context's namespace, and dispatch's Lease is in dispatch's.
pub async fn in_namespace(conn: &Connection, lease: &LeaseRef, namespace: &str) -> Option<String> {
    if lease.namespace == namespace {
        return None;
    }
    let api: Api<k8s_openapi::api::coordination::v1::Lease> = Api::namespaced(conn.client.clone(), namespace);
    api.get_metadata_opt(&lease.name).await.ok()?.map(|_| namespace.to_string())
}

//! The read that confirms a stale Lease ([`crate::core::confirm`]): one get of the Lease, on a
//! new connection (the one a watch holds may be the dead one, and HTTP/2 would send the get
//! over it), within a short bound.

use std::time::Duration;

use kube::api::{Api, GetParams};

use crate::cluster::connecting::connect::Connection;
use crate::cluster::connecting::credentials::FreshConnection;
use crate::cluster::reading::wire::{self, WireLease};
use crate::core::confirm::{self, Confirmed};
use crate::core::fetched::{Denied, Fetched};
use crate::core::lease::{LeaseFacts, LeaseRef};

/// Reads `lease` once on a new connection, giving up after [`confirm::bound`] (`left`: the
/// time to `--timeout`).
pub async fn read(conn: &Connection, lease: &LeaseRef, duration: Option<i32>, left: Option<Duration>) -> Confirmed {
    let bound = confirm::bound(duration, conn.request_timeout, left);
    let api: Api<WireLease> = Api::namespaced_with(conn.client.clone(), &lease.namespace, &wire::lease_resource());
    let request = match kube::core::Request::new(api.resource_url()).get(&lease.name, &GetParams::default()) {
        Ok(mut r) => {
            r.extensions_mut().insert("get");
            r.extensions_mut().insert(FreshConnection);
            r
        }
        Err(e) => return Confirmed::NoAnswer(crate::error::first_line(&e.to_string())),
    };
    let client = conn.client.clone();
    match tokio::time::timeout(bound, client.request::<WireLease>(request)).await {
        Err(_) => Confirmed::NoAnswer(format!(
            "no answer within {} (the API server did not answer in time)",
            crate::core::duration::go_duration(bound)
        )),
        Ok(Ok(l)) => Confirmed::Read(Fetched::Found(LeaseFacts::from(&l))),
        Ok(Err(e)) => match super::reflector::code(&e) {
            Some(404) => Confirmed::Read(Fetched::Missing),
            Some(403) => Confirmed::Read(Fetched::Forbidden(Denied { rule: String::new() })),
            _ => Confirmed::NoAnswer(super::reflector::plain_cause(&e)),
        },
    }
}

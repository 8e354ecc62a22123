//! `doctor`'s reads: who the caller is (SelfSubjectReview), what it may do
//! (SelfSubjectAccessReview), and whether a namespace exists. The two reviews are creates, the
//! only requests of the plugin that are not get, list or watch: the API server answers them
//! from its authorizer and stores nothing.

use std::time::Instant;

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};

use super::failure::{Failure, classify};
use crate::cluster::connecting::connect::Connection;
use crate::core::doctor::{Access, Answer, Identity};
use crate::core::fetched::{Denied, Fetched};
use crate::error::Error;
use crate::log::Log;

fn code<T>(r: &Result<T, kube::Error>) -> String {
    match r {
        Ok(_) => "201".into(),
        Err(kube::Error::Api(s)) => s.code.to_string(),
        Err(_) => "failed".into(),
    }
}

/// The caller as the API server sees it (`--as` included). `None` when SelfSubjectReview is
/// forbidden or not served.
pub async fn identity(conn: &Connection, log: &Log) -> Result<Option<Identity>, Error> {
    let api: Api<SelfSubjectReview> = Api::all(conn.client.clone());
    let started = Instant::now();
    let result = api.create(&PostParams::default(), &SelfSubjectReview::default()).await;
    log.info(6, &format!("POST {} {} in {}ms", api.resource_url(), code(&result), started.elapsed().as_millis()));
    match result {
        Ok(review) => {
            let user = review.status.and_then(|s| s.user_info).unwrap_or_default();
            Ok(Some(Identity { username: user.username.unwrap_or_default(), groups: user.groups.unwrap_or_default() }))
        }
        Err(e) => match classify(e, conn, "a SelfSubjectReview") {
            Failure::NotFound | Failure::Forbidden(_) => Ok(None),
            Failure::Conversion(cause) => Err(Error::Api { action: "review who we are".into(), message: cause }),
            Failure::Stop(e) => Err(e),
        },
    }
}

/// Asks whether the caller may do `access`.
pub async fn access(conn: &Connection, access: &Access, log: &Log) -> Result<Answer, Error> {
    let api: Api<SelfSubjectAccessReview> = Api::all(conn.client.clone());
    // RBAC writes a subresource as `resource/sub`; a review takes the two apart.
    let (resource, subresource) = match access.resource.split_once('/') {
        Some((r, sub)) => (r, Some(sub.to_string())),
        None => (access.resource, None),
    };
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(access.verb.into()),
                group: Some(access.group.into()),
                resource: Some(resource.into()),
                subresource,
                namespace: access.namespace.clone(),
                name: access.name.clone(),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let started = Instant::now();
    let result = api.create(&PostParams::default(), &review).await;
    log.info(
        6,
        &format!(
            "POST {} ({}) {} in {}ms",
            api.resource_url(),
            access.rule(),
            code(&result),
            started.elapsed().as_millis()
        ),
    );
    match result {
        Ok(review) => {
            let status = review.status.unwrap_or_default();
            if status.allowed {
                Ok(Answer::Allowed)
            } else {
                Ok(Answer::Denied(status.reason.or(status.evaluation_error).filter(|r| !r.is_empty())))
            }
        }
        Err(e) => match classify(e, conn, "a SelfSubjectAccessReview") {
            Failure::Forbidden(_) => {
                Ok(Answer::Unanswered("may not create selfsubjectaccessreviews.authorization.k8s.io".into()))
            }
            Failure::NotFound => Ok(Answer::Unanswered("SelfSubjectAccessReview is not served".into())),
            Failure::Conversion(cause) => Ok(Answer::Unanswered(cause)),
            Failure::Stop(e) => Err(e),
        },
    }
}

/// GETs a Namespace: found, missing, or forbidden.
pub async fn namespace(conn: &Connection, name: &str, log: &Log) -> Result<Fetched<()>, Error> {
    let api: Api<Namespace> = Api::all(conn.client.clone());
    match super::fetch::get_logged(&api, name, log).await {
        Ok(_) => Ok(Fetched::Found(())),
        Err(e) => match classify(e, conn, &format!("namespace {name}")) {
            Failure::NotFound => Ok(Fetched::Missing),
            Failure::Forbidden(_) => Ok(Fetched::Forbidden(Denied { rule: format!("get namespaces {name:?}") })),
            Failure::Conversion(cause) => {
                Err(Error::Api { action: format!("return namespace {name}"), message: cause })
            }
            Failure::Stop(e) => Err(e),
        },
    }
}

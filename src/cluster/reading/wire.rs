//! Kueue's objects on the wire: lenient serde types holding only what the core reads, so a
//! page of Workloads is parsed without building their pod templates. They read both API
//! versions; unknown fields are skipped. Their metadata is read leniently too ([`WireObject`]):
//! the plugin reads no time there, so an odd one (a `creationTimestamp` past year 9999, a
//! managedFields time that is no time) never makes an object, or the list it came in,
//! unreadable.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::object::NotUsed;
use kube::core::{ApiResource, DynamicResourceScope};
use serde::Deserialize;

use k8s_openapi::jiff::Timestamp;

use crate::core::kueue::{AdmissionCheck, CheckRule, CheckState, ClusterQueue, Condition, LocalQueue, Workload};
use crate::core::lease::LeaseFacts;
use crate::core::workload::{CheckDetail, PodSetUpdate, WorkloadFacts};

/// A Kubernetes object as the plugin reads it: kube's `Object` (its spec and status as the
/// types below read them), with metadata read leniently: only the names, labels, annotations,
/// UID, generation and resourceVersion are kept, so no time in the metadata is parsed (kube's
/// `ObjectMeta` parses `creationTimestamp`, `deletionTimestamp` and every managedFields
/// `time` strictly, and one that jiff cannot hold fails the whole list it came in).
#[derive(Debug, Clone, Deserialize)]
pub struct WireObject<P, U> {
    #[serde(deserialize_with = "lenient_meta")]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: P,
    #[serde(default = "none")]
    pub status: Option<U>,
}

fn none<U>() -> Option<U> {
    None
}

/// The metadata fields the plugin (and kube's watcher) read; the others are skipped unread.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct LenientMeta {
    name: Option<String>,
    generate_name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    generation: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<BTreeMap<String, String>>,
}

fn lenient_meta<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    let m = Option::<LenientMeta>::deserialize(d)?.unwrap_or_default();
    Ok(ObjectMeta {
        name: m.name,
        generate_name: m.generate_name,
        namespace: m.namespace,
        uid: m.uid,
        resource_version: m.resource_version,
        generation: m.generation,
        labels: m.labels,
        annotations: m.annotations,
        ..ObjectMeta::default()
    })
}

impl<P: Clone, U: Clone> kube::Resource for WireObject<P, U> {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

pub type WireClusterQueue = WireObject<ClusterQueueSpec, ClusterQueueStatus>;
pub type WireAdmissionCheck = WireObject<AdmissionCheckSpec, AdmissionCheckStatus>;
pub type WireLocalQueue = WireObject<LocalQueueSpec, NotUsed>;
pub type WireWorkload = WireObject<WorkloadSpec, WorkloadStatus>;
/// A Lease as the plugin reads it: k8s-openapi's fields, with times that may lie past the last
/// instant jiff holds (`9999-12-30T22:00:00Z`), which the apiserver stores and serves (the
/// Kueue types' condition and check times are read the same way).
pub type WireLease = WireObject<LeaseSpec, NotUsed>;

/// Leases, for `Api::namespaced_with`.
pub fn lease_resource() -> kube::core::ApiResource {
    kube::core::ApiResource::erase::<k8s_openapi::api::coordination::v1::Lease>(&())
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct LeaseSpec {
    holder_identity: Option<String>,
    lease_duration_seconds: Option<i32>,
    #[serde(deserialize_with = "lenient_time")]
    acquire_time: Option<Timestamp>,
    #[serde(deserialize_with = "lenient_time")]
    renew_time: Option<Timestamp>,
    lease_transitions: Option<i32>,
}

impl From<&WireLease> for LeaseFacts {
    fn from(lease: &WireLease) -> Self {
        let spec = &lease.spec;
        LeaseFacts {
            holder: spec.holder_identity.clone(),
            renew_time: spec.renew_time,
            acquire_time: spec.acquire_time,
            duration_seconds: spec.lease_duration_seconds,
            transitions: spec.lease_transitions,
        }
    }
}

pub use crate::core::time::parse_time;

fn lenient_time<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
    match Option::<String>::deserialize(d)? {
        None => Ok(None),
        Some(text) => parse_time(&text).map(Some).map_err(serde::de::Error::custom),
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ClusterQueueSpec {
    /// v1beta1 only.
    admission_checks: Vec<String>,
    admission_checks_strategy: Option<Strategy>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Strategy {
    admission_checks: Vec<StrategyRule>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct StrategyRule {
    name: String,
    on_flavors: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ClusterQueueStatus {
    conditions: Vec<WireCondition>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AdmissionCheckSpec {
    controller_name: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct AdmissionCheckStatus {
    conditions: Vec<WireCondition>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct WireCondition {
    #[serde(rename = "type")]
    type_: String,
    status: String,
    reason: Option<String>,
    message: Option<String>,
    #[serde(deserialize_with = "lenient_time")]
    last_transition_time: Option<Timestamp>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct LocalQueueSpec {
    cluster_queue: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WorkloadSpec {
    queue_name: Option<String>,
    /// `false` once Kueue (or someone) deactivated it; absent means true.
    active: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WorkloadStatus {
    conditions: Vec<WireCondition>,
    admission: Option<Admission>,
    admission_checks: Vec<WireCheckState>,
    /// MultiKueue: the worker cluster that admitted it.
    cluster_name: Option<String>,
    /// MultiKueue: the worker clusters it was nominated to.
    nominated_cluster_names: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Admission {
    cluster_queue: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct WireCheckState {
    name: String,
    state: String,
    message: String,
    #[serde(deserialize_with = "lenient_time")]
    last_transition_time: Option<Timestamp>,
    retry_count: Option<i32>,
    requeue_after_seconds: Option<i32>,
    pod_set_updates: Vec<WirePodSetUpdate>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct WirePodSetUpdate {
    name: String,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    node_selector: BTreeMap<String, String>,
    tolerations: Vec<WireToleration>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct WireToleration {
    key: Option<String>,
    operator: Option<String>,
    value: Option<String>,
    effect: Option<String>,
}

impl WireToleration {
    /// kubectl describe's way: `key=value:Effect`, `key:Effect` (Exists), `:Effect` for any key.
    fn text(&self) -> String {
        let key = self.key.as_deref().unwrap_or("");
        let value = match (self.operator.as_deref(), self.value.as_deref()) {
            (Some("Exists"), _) | (_, None | Some("")) => String::new(),
            (_, Some(v)) => format!("={v}"),
        };
        let effect = self.effect.as_deref().filter(|e| !e.is_empty()).map(|e| format!(":{e}")).unwrap_or_default();
        let text = format!("{key}{value}{effect}");
        if text.is_empty() { "(any)".into() } else { text }
    }
}

fn name_of<P: Clone, U: Clone>(o: &WireObject<P, U>) -> String {
    o.metadata.name.clone().unwrap_or_default()
}

fn namespace_of<P: Clone, U: Clone>(o: &WireObject<P, U>) -> String {
    o.metadata.namespace.clone().unwrap_or_default()
}

impl From<&WireCondition> for Condition {
    fn from(c: &WireCondition) -> Self {
        Condition {
            status: c.status.clone(),
            reason: c.reason.clone(),
            message: c.message.clone(),
            last_transition: c.last_transition_time,
        }
    }
}

pub fn cluster_queue(o: &WireClusterQueue) -> ClusterQueue {
    let mut checks: Vec<CheckRule> =
        o.spec.admission_checks.iter().map(|name| CheckRule { name: name.clone(), on_flavors: Vec::new() }).collect();
    if let Some(s) = &o.spec.admission_checks_strategy {
        checks.extend(
            s.admission_checks.iter().map(|r| CheckRule { name: r.name.clone(), on_flavors: r.on_flavors.clone() }),
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    checks.retain(|c| seen.insert(c.name.clone()));
    let active = o.status.as_ref().and_then(|s| active(&s.conditions));
    ClusterQueue { name: name_of(o), admission_checks: checks, active }
}

fn active(conditions: &[WireCondition]) -> Option<Condition> {
    conditions.iter().find(|c| c.type_ == "Active").map(Condition::from)
}

pub fn admission_check(o: &WireAdmissionCheck) -> AdmissionCheck {
    let active = o.status.as_ref().and_then(|s| active(&s.conditions));
    AdmissionCheck { name: name_of(o), controller_name: o.spec.controller_name.clone(), active }
}

pub fn local_queue(o: &WireLocalQueue) -> LocalQueue {
    LocalQueue { namespace: namespace_of(o), name: name_of(o), cluster_queue: o.spec.cluster_queue.clone() }
}

pub fn workload(o: &WireWorkload) -> Workload {
    let status = o.status.clone().unwrap_or_default();
    Workload {
        namespace: namespace_of(o),
        name: name_of(o),
        queue_name: o.spec.queue_name.clone(),
        admitted_in: status.admission.and_then(|a| a.cluster_queue),
        quota_reserved: status.conditions.iter().any(|c| c.type_ == "QuotaReserved" && c.status == "True"),
        checks: status
            .admission_checks
            .iter()
            .map(|c| CheckState {
                name: c.name.clone(),
                state: c.state.clone(),
                message: c.message.clone(),
                last_transition: c.last_transition_time,
            })
            .collect(),
    }
}

/// Kueue's annotation that holds a Workload back before quota (Kueue v0.17 alpha, v0.19 beta):
/// a comma-separated list of the controllers that must remove themselves first.
const ADMISSION_GATED_BY: &str = "kueue.x-k8s.io/admission-gated-by";

/// The whole Workload, as `workload` explains it.
pub fn workload_facts(o: &WireWorkload) -> WorkloadFacts {
    let status = o.status.clone().unwrap_or_default();
    WorkloadFacts {
        namespace: namespace_of(o),
        name: name_of(o),
        queue_name: o.spec.queue_name.clone().filter(|q| !q.is_empty()),
        active: o.spec.active.unwrap_or(true),
        admitted_in: status.admission.and_then(|a| a.cluster_queue),
        admission_gated_by: o
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ADMISSION_GATED_BY))
            .filter(|v| !v.trim().is_empty())
            .cloned(),
        cluster_name: status.cluster_name.clone().filter(|c| !c.is_empty()),
        nominated_cluster_names: status.nominated_cluster_names.clone(),
        conditions: status.conditions.iter().map(|c| (c.type_.clone(), Condition::from(c))).collect(),
        checks: status
            .admission_checks
            .iter()
            .map(|c| CheckDetail {
                name: c.name.clone(),
                state: c.state.clone(),
                message: c.message.clone(),
                last_transition: c.last_transition_time,
                retry_count: c.retry_count,
                requeue_after_seconds: c.requeue_after_seconds,
                pod_set_updates: c
                    .pod_set_updates
                    .iter()
                    .map(|u| PodSetUpdate {
                        name: u.name.clone(),
                        labels: u.labels.clone(),
                        annotations: u.annotations.clone(),
                        node_selector: u.node_selector.clone(),
                        tolerations: u.tolerations.iter().map(WireToleration::text).collect(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_in_the_last_day_of_year_9999_is_read_as_the_last_instant() {
        let page = r#"{"metadata":{"name":"l","namespace":"n"},"spec":{"holderIdentity":"h","leaseDurationSeconds":15,
            "renewTime":"9999-12-31T23:59:59.999999Z","acquireTime":"2026-11-30T12:00:00.000000Z","leaseTransitions":2}}"#;
        let lease: WireLease = serde_json::from_str(page).unwrap();
        let facts = LeaseFacts::from(&lease);
        assert_eq!(facts.renew_time, Some(Timestamp::MAX));
        assert_eq!(facts.acquire_time, Some("2026-11-30T12:00:00Z".parse().unwrap()));
        assert_eq!(
            (facts.holder.as_deref(), facts.duration_seconds, facts.transitions),
            (Some("h"), Some(15), Some(2))
        );
        // what is not a time stays an error
        assert!(parse_time("9999-13-01T00:00:00Z").is_err());
        assert!(parse_time("yesterday").is_err());
        let empty: WireLease = serde_json::from_str(r#"{"metadata":{},"spec":{}}"#).unwrap();
        assert_eq!(LeaseFacts::from(&empty), LeaseFacts::default());
        let bare: WireLease = serde_json::from_str(r#"{"metadata":{"name":"l"}}"#).unwrap();
        assert_eq!(LeaseFacts::from(&bare), LeaseFacts::default());
        assert_eq!(LeaseFacts::from(&empty), LeaseFacts::default());
    }

    #[test]
    fn odd_times_in_metadata_leave_the_object_and_its_list_readable() {
        let odd = r#"{"metadata":{"name":"w","namespace":"ns","uid":"u","resourceVersion":"7",
            "annotations":{"a":"b"},"labels":{"l":"v"},
            "creationTimestamp":"9999-12-31T23:59:59Z","deletionTimestamp":"yesterday",
            "managedFields":[{"manager":"m","operation":"Update","time":"10000-01-01T00:00:00Z"}]},
            "spec":{"queueName":"lq"},"status":{"conditions":[]}}"#;
        // kube's ObjectMeta refuses it: one such Workload failed the whole list.
        assert!(serde_json::from_str::<kube::core::object::Object<WorkloadSpec, WorkloadStatus>>(odd).is_err());
        let page = format!(r#"{{"apiVersion":"v1","kind":"List","metadata":{{}},"items":[{odd},{odd}]}}"#);
        let list: kube::core::ObjectList<WireWorkload> = serde_json::from_str(&page).unwrap();
        assert_eq!(list.items.len(), 2);
        let w = &list.items[0];
        assert_eq!((w.metadata.name.as_deref(), w.metadata.namespace.as_deref()), (Some("w"), Some("ns")));
        assert_eq!(w.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(w.metadata.annotations.as_ref().and_then(|a| a.get("a")).map(String::as_str), Some("b"));
        assert_eq!(w.metadata.creation_timestamp, None);
        assert_eq!(workload(w).queue_name.as_deref(), Some("lq"));
    }
}

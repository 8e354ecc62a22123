//! `doctor`'s run and its JSON/YAML document (kind DoctorReport).

use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use super::SCHEMA;
use crate::core::doctor::{Answer, DoctorReport, Finding, Level};

/// One `doctor` run.
#[derive(Debug, Clone)]
pub struct DoctorRun {
    pub report: DoctorReport,
    pub context: Option<String>,
    pub now: Timestamp,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DoctorDocument {
    pub schema: &'static str,
    pub kind: &'static str,
    pub evaluated_at: String,
    pub context: Option<String>,
    /// ok, fail (something would stop the gate or the plugin) or unknown (cannot tell).
    pub result: &'static str,
    /// From a SelfSubjectReview; `null` when the caller may not make one.
    pub identity: Option<IdentityDoc>,
    pub findings: Vec<FindingDoc>,
    /// The reads denied, as rules.
    pub missing_rbac: Vec<String>,
    /// RBAC objects granting what is missing, as YAML for `kubectl apply -f -`; `null` when
    /// nothing is.
    pub rbac: Option<String>,
    /// The command an admin runs to apply `rbac` for this caller (`kubectl dispatch doctor
    /// --as <caller> --rbac | kubectl apply -f -`); `null` when nothing is missing.
    pub grant_command: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct IdentityDoc {
    pub username: String,
    pub groups: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FindingDoc {
    /// identity, access, kueue, namespace, lease, holder pod.
    pub area: &'static str,
    pub check: String,
    /// ok, warning, fail or unknown.
    pub result: &'static str,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<AccessDoc>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessDoc {
    pub verb: &'static str,
    pub group: &'static str,
    pub resource: &'static str,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub needed_by: &'static str,
    /// Without it the gate or the plugin stops (else only a note is lost).
    pub required: bool,
    /// allowed, denied, or unanswered (the review itself could not be made).
    pub answer: &'static str,
    pub reason: Option<String>,
}

fn finding_doc(f: &Finding) -> FindingDoc {
    FindingDoc {
        area: f.area,
        check: f.check.clone(),
        result: f.level.label(),
        detail: f.detail.clone(),
        access: f.access.as_ref().map(|(a, answer)| {
            let (word, reason) = match answer {
                Answer::Allowed => ("allowed", None),
                Answer::Denied(r) => ("denied", r.clone()),
                Answer::Unanswered(r) => ("unanswered", Some(r.clone())),
            };
            AccessDoc {
                verb: a.verb,
                group: a.group,
                resource: a.resource,
                namespace: a.namespace.clone(),
                name: a.name.clone(),
                needed_by: a.needed_by,
                required: a.required,
                answer: word,
                reason,
            }
        }),
    }
}

impl DoctorRun {
    pub fn document(&self) -> DoctorDocument {
        let r = &self.report;
        DoctorDocument {
            schema: SCHEMA,
            kind: "DoctorReport",
            evaluated_at: self.now.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
            context: self.context.clone(),
            result: match r.overall {
                Level::Ok | Level::Warning => "ok",
                Level::Fail => "fail",
                Level::Unknown => "unknown",
            },
            identity: r
                .identity
                .as_ref()
                .map(|i| IdentityDoc { username: i.username.clone(), groups: i.groups.clone() }),
            findings: r.findings.iter().map(finding_doc).collect(),
            missing_rbac: r.missing.iter().map(|a| a.rule()).collect(),
            rbac: r.rbac.as_ref().map(super::rbac::manifest),
            grant_command: r.grant.clone(),
        }
    }
}

//! `lease --watch -o json|yaml`: one document per change (kind LeaseChange), and one per
//! change of what Kueue's manager's Lease says (kind KueueLeaseChange).

use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use super::{KueueLeaseDoc, LeaseDoc, SCHEMA, kueue_lease_doc, lease_doc};
use crate::core::heartbeat::{Change, ChangeKind};
use crate::core::lease::LeaseAssessment;

/// One change as one JSON line.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangeDoc {
    pub schema: &'static str,
    pub kind: &'static str,
    pub time: String,
    pub event: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gap_seconds: Option<i64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub slow: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_holder: Option<String>,
    pub detail: String,
    pub lease: LeaseDoc,
    /// Kueue's manager's Lease at the same moment, as context, once it was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kueue_lease: Option<KueueLeaseDoc>,
}

/// What Kueue's manager's Lease says changed: no manager leads any more, one leads again, or
/// the Lease was deleted or created.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KueueChangeDoc {
    pub schema: &'static str,
    pub kind: &'static str,
    pub time: String,
    /// The line the table says (`Kueue's manager: ...`).
    pub detail: String,
    pub kueue_lease: KueueLeaseDoc,
}

pub fn kueue_change_doc(a: &LeaseAssessment, at: Timestamp, detail: String) -> KueueChangeDoc {
    KueueChangeDoc {
        schema: SCHEMA,
        kind: "KueueLeaseChange",
        time: stamp(at),
        detail,
        kueue_lease: kueue_lease_doc(a),
    }
}

fn stamp(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

pub fn change_doc(change: &Change, detail: String, kueue: Option<&LeaseAssessment>) -> ChangeDoc {
    let (gap, slow, previous) = match &change.kind {
        ChangeKind::Renewed { gap, slow } => (gap.map(|g| g.as_secs()), *slow, None),
        ChangeKind::Fresh { gap } => (gap.map(|g| g.as_secs()), false, None),
        ChangeKind::Takeover { from, gap, .. } => (gap.map(|g| g.as_secs()), false, Some(from.clone())),
        _ => (None, false, None),
    };
    ChangeDoc {
        schema: SCHEMA,
        kind: "LeaseChange",
        time: stamp(change.at),
        event: change.kind.event(),
        gap_seconds: gap,
        slow,
        previous_holder: previous,
        detail,
        lease: lease_doc(&change.assessment),
        kueue_lease: kueue.map(kueue_lease_doc),
    }
}

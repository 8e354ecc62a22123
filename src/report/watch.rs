//! `lease --watch -o json|yaml`: one document per change (kind LeaseChange).

use serde::Serialize;

use super::{LeaseDoc, SCHEMA, lease_doc};
use crate::core::heartbeat::{Change, ChangeKind};

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
}

pub fn change_doc(change: &Change, detail: String) -> ChangeDoc {
    let (gap, slow, previous) = match &change.kind {
        ChangeKind::Renewed { gap, slow } => (gap.map(|g| g.as_secs()), *slow, None),
        ChangeKind::Takeover { from, gap, .. } => (gap.map(|g| g.as_secs()), false, Some(from.clone())),
        _ => (None, false, None),
    };
    ChangeDoc {
        schema: SCHEMA,
        kind: "LeaseChange",
        time: change.at.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
        event: change.kind.event(),
        gap_seconds: gap,
        slow,
        previous_holder: previous,
        detail,
        lease: lease_doc(&change.assessment),
    }
}

//! `gate` on several contexts: the JSON/YAML document (kind FleetReport).

use serde::Serialize;

use super::{GateDocument, GateRun, SCHEMA};

/// One context's gate, or why it could not be judged.
pub struct ContextResult {
    pub context: String,
    pub outcome: Result<GateRun, String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FleetDocument {
    pub schema: &'static str,
    pub kind: &'static str,
    pub contexts: Vec<ContextDoc>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextDoc {
    pub context: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<GateDocument>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl FleetDocument {
    pub fn of(results: &[ContextResult]) -> FleetDocument {
        FleetDocument {
            schema: SCHEMA,
            kind: "FleetReport",
            contexts: results
                .iter()
                .map(|r| ContextDoc {
                    context: r.context.clone(),
                    report: r.outcome.as_ref().ok().map(GateRun::document),
                    error: r.outcome.as_ref().err().cloned(),
                })
                .collect(),
        }
    }
}

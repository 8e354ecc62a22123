//! "Did you mean": when a name given on the command line matches nothing, the names that do
//! exist, the closest first, so a typo reads as a typo and not as a dead controller.

use super::gate::{GateFacts, GateSettings};

/// The names within reach of `given` by Jaro-Winkler similarity (clap's measure for flags and
/// verbs, over 0.7), the closest first.
pub fn closest<'a>(given: &str, names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut near: Vec<(f64, &str)> = names
        .into_iter()
        .map(|n| (strsim::jaro_winkler(given, n), n))
        .filter(|(score, n)| *score > 0.7 && *n != given)
        .collect();
    near.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    near.into_iter().map(|(_, n)| n).collect()
}

/// `<what> <given> does not exist; did you mean team-a? (<plural>: team-a, team-c)`, or with
/// nothing close, the names there are, or that there are none.
pub fn not_found(what: &str, plural: &str, given: &str, names: &[&str]) -> String {
    let mut text = format!("{what} {given} does not exist");
    if let Some(best) = closest(given, names.iter().copied()).first() {
        text.push_str(&format!("; did you mean {best}?"));
    }
    const SHOWN: usize = 10;
    match names.len() {
        0 => text.push_str(&format!(" (there are no {plural})")),
        n if n <= SHOWN => text.push_str(&format!(" ({plural}: {})", names.join(", "))),
        n => text.push_str(&format!(" ({plural}: {}, and {} more)", names[..SHOWN].join(", "), n - SHOWN)),
    }
    text
}

/// What a name given on the command line (`--cluster-queue`, `--admission-check`) matched
/// nothing of, said with the names there are. Only lists that were read count: a forbidden
/// list proves nothing missing.
pub fn gate_names(settings: &GateSettings, facts: &GateFacts) -> Vec<String> {
    let mut hints = Vec::new();
    if let Some(queues) = facts.cluster_queues.found() {
        let names: Vec<&str> = queues.iter().map(|q| q.name.as_str()).collect();
        for given in settings.cluster_queues.iter().filter(|g| !names.contains(&g.as_str())) {
            hints.push(not_found("ClusterQueue", "ClusterQueues", given, &names));
        }
    }
    if let (Some(given), Some(checks)) = (&settings.admission_check, facts.admission_checks.found()) {
        let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
        if !names.contains(&given.as_str()) {
            hints.push(not_found("AdmissionCheck", "AdmissionChecks", given, &names));
        }
    }
    hints
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_gets_the_closest_name() {
        assert_eq!(
            not_found("ClusterQueue", "ClusterQueues", "team-b", &["team-a", "other"]),
            "ClusterQueue team-b does not exist; did you mean team-a? (ClusterQueues: team-a, other)"
        );
    }

    #[test]
    fn nothing_close_lists_what_is_there() {
        assert_eq!(
            not_found("Lease", "Leases in dispatch-system", "nope", &["dispatch-admission"]),
            "Lease nope does not exist (Leases in dispatch-system: dispatch-admission)"
        );
        assert_eq!(
            not_found("AdmissionCheck", "AdmissionChecks", "x", &[]),
            "AdmissionCheck x does not exist (there are no AdmissionChecks)"
        );
    }

    #[test]
    fn closest_first() {
        assert_eq!(
            closest("dispatch-admision", ["kube-scheduler", "dispatch-admission", "dispatch"]),
            ["dispatch-admission", "dispatch"]
        );
    }
}

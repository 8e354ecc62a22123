//! A different controllerName found: when no AdmissionCheck names dispatch's controller, the
//! AdmissionChecks that plainly are dispatch's all the same (their controllerName is dispatch's
//! with a domain in front, or a typo of it; or their name is), each with the flag that would
//! select it and the Workloads that wait at it. The adapter's verdict and reason stay as they
//! are: these are said beside them, so that "no workloads wait" is never said while some wait
//! at a check that is dispatch's under another name.

use std::collections::BTreeSet;

use super::fetched::Fetched;
use super::kueue::AdmissionCheck;
use super::waiting::Waiting;

/// An AdmissionCheck close to dispatch's that names another controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookalike {
    pub check: String,
    /// Its controllerName, as written (`""` when it has none).
    pub controller: String,
    /// The Workloads read that wait at it (as the gate counts them at dispatch's check).
    pub waiting: usize,
}

impl Lookalike {
    /// The flag that selects it: `--controller-name example.com/dispatch-admission`.
    pub fn flag(&self) -> String {
        format!("--controller-name {}", shell_word(&self.controller))
    }

    /// `AdmissionCheck dispatch names controller "example.com/dispatch-admission", not
    /// dispatch-admission: to judge it, add --controller-name example.com/dispatch-admission`.
    pub fn warning(&self, controller: &str) -> String {
        format!(
            "AdmissionCheck {} names controller {:?}, not {controller}: to judge it, add {}",
            self.check,
            self.controller,
            self.flag()
        )
    }

    /// `2 workloads wait at AdmissionCheck dispatch (controller example.com/dispatch-admission)`.
    pub fn waiting_sentence(&self) -> String {
        let noun = if self.waiting == 1 { "workload waits" } else { "workloads wait" };
        format!("{} {noun} at AdmissionCheck {} (controller {})", self.waiting, self.check, self.controller)
    }
}

/// What names dispatch's check: its controllerName, and `--admission-check` when given (then
/// that check is judged, and no lookalike is looked for).
#[derive(Debug, Clone, Copy)]
pub struct Wanted<'a> {
    pub controller_name: &'a str,
    pub admission_check: Option<&'a str>,
}

/// The lookalikes among the AdmissionChecks read, by name, each with the Workloads of
/// `waiting` that wait at it. None when a check names dispatch's controller, when
/// `--admission-check` names the check to judge, or when the list was not read.
pub fn find(
    wanted: Wanted<'_>,
    admission_checks: &Fetched<Vec<AdmissionCheck>>,
    waiting: &[Waiting],
) -> Vec<Lookalike> {
    let mut found: Vec<Lookalike> = candidates(wanted, admission_checks)
        .into_iter()
        .map(|ac| Lookalike {
            check: ac.name.clone(),
            controller: ac.controller_name.clone().unwrap_or_default(),
            waiting: waiting.iter().filter(|w| w.check == ac.name && w.is_stalled()).count(),
        })
        .collect();
    found.sort_by(|a, b| a.check.cmp(&b.check));
    found
}

/// The names of the lookalikes: what the Workload list keeps beside dispatch's own checks.
pub fn names(wanted: Wanted<'_>, admission_checks: &Fetched<Vec<AdmissionCheck>>) -> BTreeSet<String> {
    candidates(wanted, admission_checks).into_iter().map(|ac| ac.name.clone()).collect()
}

/// Waiting rows split in two: those at `dispatch`'s checks, and the rest (at lookalikes).
pub fn split(rows: Vec<Waiting>, dispatch: &BTreeSet<String>) -> (Vec<Waiting>, Vec<Waiting>) {
    rows.into_iter().partition(|w| dispatch.contains(&w.check))
}

fn candidates<'a>(wanted: Wanted<'_>, admission_checks: &'a Fetched<Vec<AdmissionCheck>>) -> Vec<&'a AdmissionCheck> {
    let Some(acs) = admission_checks.found() else { return Vec::new() };
    let ours = wanted.controller_name;
    if wanted.admission_check.is_some() || acs.iter().any(|ac| ac.controller_name.as_deref() == Some(ours)) {
        return Vec::new();
    }
    // A check without a controllerName is no one's: no flag could select it.
    acs.iter()
        .filter(|ac| ac.controller_name.as_deref().is_some_and(|c| !c.is_empty()))
        .filter(|ac| {
            let controller = ac.controller_name.as_deref().unwrap_or("");
            close(last_segment(controller), ours) || close(&ac.name, ours) || is_first_word(&ac.name, ours)
        })
        .collect()
}

/// `example.com/dispatch-admission` → `dispatch-admission`.
fn last_segment(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// The same name up to case, `_` for `-`, and two edits (a typo), but not a name that merely
/// begins like it (`dispatch-admission-test` is another controller).
fn close(a: &str, b: &str) -> bool {
    if a.is_empty() || b.is_empty() {
        return false;
    }
    let norm = |s: &str| s.to_lowercase().replace('_', "-");
    strsim::levenshtein(&norm(a), &norm(b)) <= 2
}

/// A check named for the controller's first word: `dispatch` for `dispatch-admission`.
fn is_first_word(name: &str, controller: &str) -> bool {
    !name.is_empty() && controller.strip_prefix(name).is_some_and(|rest| rest.starts_with('-'))
}

/// A flag's value as it can be pasted into a shell: bare when safe, else single-quoted.
pub fn shell_word(s: &str) -> String {
    let safe = !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "./_-:@".contains(c));
    if safe { s.to_string() } else { format!("'{}'", s.replace('\'', r"'\''")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OURS: Wanted<'static> = Wanted { controller_name: "dispatch-admission", admission_check: None };

    fn ac(name: &str, controller: &str) -> AdmissionCheck {
        AdmissionCheck { name: name.into(), controller_name: Some(controller.into()), active: None }
    }

    fn waiting(check: &str, reserved: bool) -> Waiting {
        Waiting {
            namespace: "ml".into(),
            name: format!("w-{check}-{reserved}"),
            cluster_queue: Some("team-a".into()),
            queue_name: None,
            check: check.into(),
            state: "Pending".into(),
            quota_reserved: reserved,
            since: None,
            message: String::new(),
        }
    }

    #[test]
    fn a_domain_qualified_controller_is_found_with_its_flag_and_its_waiting_workloads() {
        let acs = Fetched::Found(vec![
            ac("dispatch", "example.com/dispatch-admission"),
            ac("provisioning", "kueue.x-k8s.io/provisioning-request"),
            ac("dispatch-test", "dispatch-admission-ci-4f2a"),
        ]);
        let rows = [waiting("dispatch", true), waiting("dispatch", true), waiting("dispatch", false)];
        let found = find(OURS, &acs, &rows);
        assert_eq!(
            found,
            [Lookalike { check: "dispatch".into(), controller: "example.com/dispatch-admission".into(), waiting: 2 }]
        );
        assert_eq!(found[0].flag(), "--controller-name example.com/dispatch-admission");
        assert_eq!(
            found[0].warning("dispatch-admission"),
            "AdmissionCheck dispatch names controller \"example.com/dispatch-admission\", not dispatch-admission: to judge it, add --controller-name example.com/dispatch-admission"
        );
        assert_eq!(
            found[0].waiting_sentence(),
            "2 workloads wait at AdmissionCheck dispatch (controller example.com/dispatch-admission)"
        );
    }

    #[test]
    fn a_typo_or_a_name_like_the_controller_counts_and_nothing_does_once_one_is_dispatchs() {
        let acs = Fetched::Found(vec![ac("gpu", "dispatch_admision"), ac("dispatch-admission", "other"), ac("x", "y")]);
        let names = names(OURS, &acs);
        assert_eq!(names.into_iter().collect::<Vec<_>>(), ["dispatch-admission", "gpu"]);
        let with_ours = Fetched::Found(vec![ac("dispatch", "dispatch-admission"), ac("gpu", "dispatch_admision")]);
        assert!(find(OURS, &with_ours, &[]).is_empty());
        let named = Wanted { admission_check: Some("gpu"), ..OURS };
        assert!(find(named, &acs, &[]).is_empty());
    }

    #[test]
    fn an_odd_controller_name_is_quoted_for_the_shell_and_none_is_no_ones() {
        assert!(find(OURS, &Fetched::Found(vec![ac("dispatch", "")]), &[]).is_empty());
        let odd = Lookalike { check: "d".into(), controller: "a b'c".into(), waiting: 0 };
        assert_eq!(odd.flag(), r"--controller-name 'a b'\''c'");
    }
}

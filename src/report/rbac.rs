//! `doctor --rbac`: the RBAC objects that grant what the caller lacks, as YAML that
//! `kubectl apply -f -` reads. The objects are k8s-openapi's own types written by the YAML
//! serializer, so every value is quoted as YAML needs whatever it holds; only the comment
//! lines at the top are written here, each one line, with any foreign text in it escaped (a
//! username or namespace with a line break cannot end the comment and add YAML).

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::core::doctor::{RbacPlan, RbacRule, RbacScope, RbacSubject, qualified};
use crate::text::sanitize::escape;

const GROUP: &str = "rbac.authorization.k8s.io";

/// The plan as a YAML stream: comments, then per scope the role and its binding.
pub fn manifest(plan: &RbacPlan) -> String {
    let mut out = String::new();
    match &plan.caller {
        Some(u) => {
            out += &format!("# What {} lacks for kubectl-dispatch and the adapter; apply as an admin.\n", escape(u))
        }
        None => {
            out += "# What the caller lacks for kubectl-dispatch and the adapter; replace the subject, then apply as an admin.\n"
        }
    }
    for scope in &plan.scopes {
        for rule in &scope.rules {
            out += &format!("# {}: for {}\n", escape(&rule_words(scope, rule)), rule.needed_by.join("; "));
        }
    }
    let mut docs = Vec::new();
    for scope in &plan.scopes {
        let (role, binding) = objects(plan, scope);
        docs.push(role);
        docs.push(binding);
    }
    out + &docs.join("---\n")
}

/// `leases "dispatch-admission" in dispatch-system: get, list, watch`.
fn rule_words(scope: &RbacScope, rule: &RbacRule) -> String {
    let resource = qualified(rule.group, rule.resource);
    let name = rule.name.as_deref().map(|n| format!(" {n:?}")).unwrap_or_default();
    let scope = match &scope.namespace {
        Some(ns) => format!(" in {ns}"),
        None => " cluster-wide".into(),
    };
    format!("{} {resource}{name}{scope}", rule.verbs.join(", "))
}

/// The role and its binding, each as one YAML document.
fn objects(plan: &RbacPlan, scope: &RbacScope) -> (String, String) {
    let metadata =
        ObjectMeta { name: Some(plan.object.clone()), namespace: scope.namespace.clone(), ..ObjectMeta::default() };
    let rules = Some(scope.rules.iter().map(policy_rule).collect());
    let subjects = Some(vec![subject(&plan.subject)]);
    let yaml =
        |doc: Result<String, serde_saphyr::ser_error::Error>| doc.unwrap_or_else(|e| format!("# cannot write: {e}\n"));
    match scope.namespace {
        None => {
            let role_ref =
                RoleRef { api_group: Some(GROUP.into()), kind: "ClusterRole".into(), name: plan.object.clone() };
            let role = ClusterRole { metadata: metadata.clone(), rules, ..ClusterRole::default() };
            let binding = ClusterRoleBinding { metadata, role_ref, subjects };
            (yaml(serde_saphyr::to_string(&role)), yaml(serde_saphyr::to_string(&binding)))
        }
        Some(_) => {
            let role_ref = RoleRef { api_group: Some(GROUP.into()), kind: "Role".into(), name: plan.object.clone() };
            let role = Role { metadata: metadata.clone(), rules };
            let binding = RoleBinding { metadata, role_ref, subjects };
            (yaml(serde_saphyr::to_string(&role)), yaml(serde_saphyr::to_string(&binding)))
        }
    }
}

fn policy_rule(rule: &RbacRule) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![rule.group.to_string()]),
        resources: Some(vec![rule.resource.to_string()]),
        resource_names: rule.name.clone().map(|n| vec![n]),
        verbs: rule.verbs.iter().map(|v| v.to_string()).collect(),
        ..PolicyRule::default()
    }
}

fn subject(s: &RbacSubject) -> Subject {
    match s {
        RbacSubject::ServiceAccount { namespace, name } => Subject {
            kind: "ServiceAccount".into(),
            name: name.clone(),
            namespace: Some(namespace.clone()),
            ..Subject::default()
        },
        RbacSubject::User(name) => {
            Subject { api_group: Some(GROUP.into()), kind: "User".into(), name: name.clone(), ..Subject::default() }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::doctor::{Access, Identity, rbac_plan};

    fn access(verb: &'static str, resource: &'static str, namespace: Option<&str>, name: Option<&str>) -> Access {
        Access {
            verb,
            group: if resource == "pods" { "" } else { "coordination.k8s.io" },
            resource,
            namespace: namespace.map(String::from),
            name: name.map(String::from),
            needed_by: "gate",
            required: true,
        }
    }

    #[test]
    fn a_service_account_caller_is_bound_as_one() {
        let sa = Identity { username: "system:serviceaccount:dispatch-system:adapter".into(), groups: vec![] };
        let yaml = manifest(&rbac_plan(&[access("get", "leases", Some("dispatch-system"), Some("l"))], Some(&sa)));
        let docs: Vec<serde_json::Value> = yaml.split("---\n").map(|d| serde_saphyr::from_str(d).unwrap()).collect();
        assert_eq!(docs[0]["kind"], "Role");
        assert_eq!(
            docs[0]["metadata"]["name"],
            "kubectl-dispatch-doctor-system-serviceaccount-dispatch-system-adapter"
        );
        assert_eq!(docs[0]["rules"][0]["resourceNames"][0], "l");
        assert_eq!(
            docs[1]["subjects"][0],
            serde_json::json!({"kind": "ServiceAccount", "name": "adapter", "namespace": "dispatch-system"})
        );
        assert_eq!(docs[1]["roleRef"]["kind"], "Role");
    }

    #[test]
    fn no_caller_is_a_placeholder_bound_cluster_wide() {
        let yaml = manifest(&rbac_plan(&[access("list", "pods", None, None)], None));
        assert!(yaml.starts_with("# What the caller lacks"), "{yaml}");
        let docs: Vec<serde_json::Value> = yaml.split("---\n").map(|d| serde_saphyr::from_str(d).unwrap()).collect();
        assert_eq!(
            (docs[0]["kind"].as_str(), docs[1]["kind"].as_str()),
            (Some("ClusterRole"), Some("ClusterRoleBinding"))
        );
        assert_eq!(docs[1]["metadata"]["name"], "kubectl-dispatch-doctor-user");
        assert_eq!(docs[1]["subjects"][0]["name"], "REPLACE-WITH-THE-USER");
        assert_eq!(docs[0]["rules"][0]["apiGroups"][0], "");
    }

    /// A username is the server's word: one with line breaks of every kind YAML knows (and
    /// an escape sequence) stays inside its comment line and its quoted value, so what an
    /// admin pipes into `kubectl apply -f -` holds exactly the objects above.
    #[test]
    fn a_hostile_username_adds_no_yaml() {
        let name = "eve\nkind: ClusterRoleBinding\r\u{85}\u{2028}\u{2029}x\u{1b}]0;t\u{7}";
        let who = Identity { username: name.into(), groups: vec![] };
        let yaml = manifest(&rbac_plan(&[access("get", "leases", Some("n\nx: y"), None)], Some(&who)));
        let comments: Vec<&str> = yaml.lines().take_while(|l| l.starts_with('#')).collect();
        assert_eq!(comments.len(), 2, "{yaml}");
        assert!(!yaml.contains('\u{1b}') && !yaml.contains('\u{7}') && !yaml.contains('\r'), "{yaml}");
        let docs: Vec<serde_json::Value> = yaml.split("---\n").map(|d| serde_saphyr::from_str(d).unwrap()).collect();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1]["subjects"][0]["name"], name);
        assert_eq!(docs[0]["metadata"]["namespace"], "n\nx: y");
    }
}

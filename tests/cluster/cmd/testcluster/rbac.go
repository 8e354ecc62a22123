package main

import (
	"os"
	"path/filepath"
)

// testBindings: namespace dispatch-system, then the plugin's ClusterRole bound to viewer,
// token-user (the static-token user, same rights as viewer), no-lease, no-pods and lease-get;
// the Lease Role bound to viewer, token-user and no-pods (no-lease must get a real 403); the
// holder's pod Role bound to viewer and token-user only (no-pods reads the Lease but not its
// holder's pod); for lease-get a Role granting only get on the Leases of dispatch-system, as
// the adapter itself is granted (list and watch answer 403, get 200). nobody is bound to
// nothing at all.
const testBindings = `apiVersion: v1
kind: Namespace
metadata:
  name: dispatch-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: kubectl-dispatch-reader-test
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: kubectl-dispatch-reader
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: viewer
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: token-user
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: no-lease
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: no-pods
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: lease-get
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: lease-get-only-test
  namespace: dispatch-system
rules:
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: lease-get-only-test
  namespace: dispatch-system
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: lease-get-only-test
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: lease-get
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: kubectl-dispatch-lease-reader-test
  namespace: dispatch-system
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: kubectl-dispatch-lease-reader
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: viewer
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: token-user
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: no-pods
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: kubectl-dispatch-holder-reader-test
  namespace: dispatch-system
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: kubectl-dispatch-holder-reader
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: viewer
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: token-user
`

// installRBAC applies the namespace and bindings, then the repository's deploy/rbac.yaml
// (MODULE/../../deploy/rbac.yaml), in one server-side apply.
func installRBAC(dir, moduleDir, kubeconfig string) error {
	bindings := filepath.Join(dir, "test-bindings.yaml")
	if err := os.WriteFile(bindings, []byte(testBindings), 0o600); err != nil {
		return err
	}
	rbac := filepath.Join(moduleDir, "..", "..", "deploy", "rbac.yaml")
	return kubectl(kubeconfig, "apply", "--server-side", "--field-manager=testcluster", "-f", bindings, "-f", rbac)
}

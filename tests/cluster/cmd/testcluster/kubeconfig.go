package main

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"

	"kubectl-dispatch/tests/cluster/internal/adminpki"
)

// writeKubeconfig writes a kubeconfig with one cluster, user and context per client
// user (admin, viewer, no-lease, no-pods, nobody), all with embedded *-data fields, and one named token whose
// user is token-user by its bearer token (`token: ...`); admin is current.
func writeKubeconfig(path, server string, p *pki, token string) error {
	b64 := base64.StdEncoding.EncodeToString
	var s strings.Builder
	s.WriteString("apiVersion: v1\nkind: Config\nclusters:\n")
	for _, u := range clientUsers {
		fmt.Fprintf(&s, "- name: %s\n  cluster:\n    server: %s\n    certificate-authority-data: %s\n",
			u.name, server, b64(p.ca.certPEM))
	}
	fmt.Fprintf(&s, "- name: token\n  cluster:\n    server: %s\n    certificate-authority-data: %s\n", server, b64(p.ca.certPEM))
	s.WriteString("users:\n")
	for _, u := range clientUsers {
		kp := p.clients[u.name]
		fmt.Fprintf(&s, "- name: %s\n  user:\n    client-certificate-data: %s\n    client-key-data: %s\n",
			u.name, b64(kp.certPEM), b64(kp.keyPEM))
	}
	fmt.Fprintf(&s, "- name: token\n  user:\n    token: %s\n", token)
	s.WriteString("contexts:\n")
	for _, u := range clientUsers {
		fmt.Fprintf(&s, "- name: %s\n  context:\n    cluster: %s\n    user: %s\n", u.name, u.name, u.name)
	}
	s.WriteString("- name: token\n  context:\n    cluster: token\n    user: token\n")
	s.WriteString("current-context: admin\n")
	return writeFileAtomic(path, []byte(s.String()), 0o600)
}

// adminClient is an HTTP client that trusts the cluster CA and presents the admin
// certificate (used for /readyz). It reads DIR/pki so start-apiserver can use it too.
func adminClient(pkiDir string) (*http.Client, error) {
	tlsConfig, err := adminpki.TLSConfig(pkiDir)
	if err != nil {
		return nil, err
	}
	return &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   tlsConfig,
			DisableKeepAlives: true,
		},
	}, nil
}

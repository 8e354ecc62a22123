package main

import (
	"net/http"
	"strings"
)

// The gone-list mode: a Lease GET is answered as a real server answers it, but every list of
// Leases, and every watch, answers 410 with the Status kube-apiserver gives for a
// resourceVersion etcd compacted. A client that relists after a 410 relists for ever; the
// test counts how often it asks.

func init() { watchAnswers["gone-list"] = goneList }

func goneList(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// apis coordination.k8s.io v1 namespaces NS leases: a list or a watch; NAME after it: a get.
	if len(parts) == 6 && parts[1] == "coordination.k8s.io" && parts[5] == "leases" {
		status(w, http.StatusGone, "Expired", "too old resource version: 1 (2)")
		return
	}
	leases(w, r)
}

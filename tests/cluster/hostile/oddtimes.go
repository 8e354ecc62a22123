package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// The odd-times mode: a small Kueue API whose objects carry metadata times no real
// kube-apiserver serves (it sets creationTimestamp and resets the managedFields times a client
// writes), kept apart from the other modes. Paths are answered by what they end in.

// OddTime is past the last instant a jiff timestamp holds; NoTime is no time at all.
const (
	OddTime = "9999-12-31T23:59:59Z"
	NoTime  = "10000-01-01T00:00:00Z"
)

func init() { answers["odd-times"] = oddTimes }

func oddMeta(name, namespace string) map[string]any {
	m := map[string]any{
		"name": name, "uid": "uid-" + name, "resourceVersion": "1",
		"creationTimestamp": OddTime,
		"managedFields": []any{map[string]any{
			"manager": "hostile", "operation": "Update", "apiVersion": "v1", "time": NoTime,
			"fieldsType": "FieldsV1", "fieldsV1": map[string]any{},
		}},
	}
	if namespace != "" {
		m["namespace"] = namespace
	}
	return m
}

func active() map[string]any {
	return map[string]any{"conditions": []any{map[string]any{
		"type": "Active", "status": "True", "reason": "Ready", "message": "ready",
		"lastTransitionTime": "2026-01-01T00:00:00Z",
	}}}
}

func list(kind string, items ...any) map[string]any {
	return map[string]any{"kind": kind, "apiVersion": "kueue.x-k8s.io/v1beta2", "metadata": map[string]any{"resourceVersion": "1"}, "items": items}
}

// waitingWorkload waits at dispatch-odd (Pending) after quota; odd metadata times when odd.
func waitingWorkload(name string, odd bool) map[string]any {
	meta := map[string]any{"name": name, "namespace": "team", "uid": "uid-" + name, "resourceVersion": "1", "creationTimestamp": "2026-01-01T00:00:00Z"}
	if odd {
		meta = oddMeta(name, "team")
	}
	return map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": meta,
		"spec": map[string]any{"queueName": "lq-odd"},
		"status": map[string]any{
			"admission": map[string]any{"clusterQueue": "cq-odd"},
			"conditions": []any{map[string]any{
				"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "reserved",
				"lastTransitionTime": "2026-01-01T00:00:00Z",
			}},
			"admissionChecks": []any{map[string]any{
				"name": "dispatch-odd", "state": "Pending", "message": "waiting for dispatch",
				"lastTransitionTime": "2026-01-01T00:00:00Z",
			}},
		},
	}
}

func oddTimes(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	var body any
	switch {
	case path == "/apis/kueue.x-k8s.io" || path == "/apis/kueue.x-k8s.io/":
		gv := map[string]any{"groupVersion": "kueue.x-k8s.io/v1beta2", "version": "v1beta2"}
		body = map[string]any{"kind": "APIGroup", "apiVersion": "v1", "name": "kueue.x-k8s.io", "versions": []any{gv}, "preferredVersion": gv}
	case strings.Contains(path, "/leases/"):
		name := path[strings.LastIndex(path, "/")+1:]
		body = map[string]any{
			"kind": "Lease", "apiVersion": "coordination.k8s.io/v1", "metadata": oddMeta(name, "dispatch-system"),
			"spec": map[string]any{
				"holderIdentity": "dispatch-admission-7d9f_1", "leaseDurationSeconds": 15, "leaseTransitions": 1,
				"renewTime":   time.Now().UTC().Format("2006-01-02T15:04:05.000000Z"),
				"acquireTime": "2026-01-01T00:00:00.000000Z",
			},
		}
	case strings.HasSuffix(path, "/clusterqueues"):
		body = list("ClusterQueueList", map[string]any{
			"metadata": oddMeta("cq-odd", ""),
			"spec":     map[string]any{"admissionChecksStrategy": map[string]any{"admissionChecks": []any{map[string]any{"name": "dispatch-odd"}}}},
			"status":   active(),
		})
	case strings.HasSuffix(path, "/admissionchecks"):
		body = list("AdmissionCheckList", map[string]any{
			"metadata": oddMeta("dispatch-odd", ""), "spec": map[string]any{"controllerName": "dispatch-admission"}, "status": active(),
		})
	case strings.HasSuffix(path, "/localqueues"):
		body = list("LocalQueueList", map[string]any{"metadata": oddMeta("lq-odd", "team"), "spec": map[string]any{"clusterQueue": "cq-odd"}})
	case strings.HasSuffix(path, "/workloads"):
		// A third Workload no client can read (its queueName is no string): left out, and said.
		unreadable := waitingWorkload("w-unreadable", false)
		unreadable["spec"] = map[string]any{"queueName": []any{"not", "text"}}
		body = list("WorkloadList", waitingWorkload("w-odd", true), unreadable, waitingWorkload("w-plain", false))
	default:
		status(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
		return
	}
	text, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(text)
}

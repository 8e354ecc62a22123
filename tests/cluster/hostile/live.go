package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// The live modes' faults only a hostile server shows (issue 34). Each serves Leases under
// /apis/coordination.k8s.io/v1/namespaces/NS/leases[/NAME] with a 2 s leaseDurationSeconds, so
// a Lease not renewed is stale 4 s after its renewTime.
//
//   - foreign-leases: ignores the field selector. The Lease asked for was renewed once, when
//     the server started; lists also hold Lease "other" in the same namespace, and every watch
//     streams renewals of "other" (renewed now) every 500 ms and never of the one asked for.
//   - bad-event: every watch sends one MODIFIED event whose renewTime is not a time, then a
//     valid renewal of the Lease asked for every 500 ms.
//   - kueue-503: the Lease asked for in any namespace but kueue-system was renewed once, when
//     the server started, and its watches stay open and quiet; everything in kueue-system
//     (Kueue's manager's Lease) answers 503.
//   - watch-401: lists and gets answer the Lease (renewed now); every watch is accepted, then
//     sends one ERROR event carrying Status 401 and ends.
//   - watch-bookmark: lists and gets answer the Lease (renewed now); every watch sends one
//     BOOKMARK and ends.
//   - silent-watch: lists and gets answer the Lease (renewed now, lasting 300 s); every watch
//     is accepted and then sends nothing, ever, holding the connection open.
//   - retry-after-go-max: every request answers 429 with Retry-After: 9223372036 (the whole
//     seconds of Go's longest duration).

var started = time.Now().UTC()

func init() {
	watchAnswers["foreign-leases"] = foreignLeases
	watchAnswers["bad-event"] = badEvent
	watchAnswers["kueue-503"] = kueue503
	watchAnswers["watch-401"] = watch401
	watchAnswers["watch-bookmark"] = watchBookmark
	watchAnswers["silent-watch"] = silentWatch
	answers["retry-after-go-max"] = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "9223372036")
		status(w, http.StatusTooManyRequests, "TooManyRequests", "too many requests, please try again later")
	}
}

var resourceVersion atomic.Int64

func nextVersion() string {
	return fmt.Sprint(resourceVersion.Add(1) + 1)
}

func stamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}

// shortLease is a Lease of 2 s renewed at renewed (a string: the bad-event mode sends one that
// is no time).
func shortLease(ns, name string, renewed string) map[string]any {
	return map[string]any{
		"kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
		"metadata": map[string]any{"name": name, "namespace": ns, "resourceVersion": nextVersion(), "uid": "uid-" + name, "creationTimestamp": stamp(started)[:19] + "Z"},
		"spec":     map[string]any{"holderIdentity": "hostile_0001", "leaseDurationSeconds": 2, "acquireTime": stamp(started), "renewTime": renewed, "leaseTransitions": 0},
	}
}

// leasePath splits a Lease path: its namespace, its name ("" for a list or a watch), and
// whether it is one.
func leasePath(r *http.Request) (string, string, bool) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) < 6 || parts[0] != "apis" || parts[1] != "coordination.k8s.io" || parts[3] != "namespaces" || parts[5] != "leases" {
		return "", "", false
	}
	if len(parts) == 7 {
		return parts[4], parts[6], true
	}
	return parts[4], "", true
}

func asked(r *http.Request) string {
	name, _ := strings.CutPrefix(r.URL.Query().Get("fieldSelector"), "metadata.name=")
	return name
}

func leaseList(w http.ResponseWriter, items ...any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"kind": "LeaseList", "apiVersion": "coordination.k8s.io/v1",
		"metadata": map[string]any{"resourceVersion": nextVersion()}, "items": items,
	})
}

// event writes one watch event line and flushes it; false once the client is gone.
func event(w http.ResponseWriter, kind string, object any) bool {
	line, _ := json.Marshal(map[string]any{"type": kind, "object": object})
	if _, err := w.Write(append(line, '\n')); err != nil {
		return false
	}
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	return true
}

// stream answers a watch and calls next every 500 ms until it returns false or the client goes.
func stream(w http.ResponseWriter, r *http.Request, next func() bool) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	for next() {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
	<-r.Context().Done()
}

func foreignLeases(w http.ResponseWriter, r *http.Request) {
	ns, name, ok := leasePath(r)
	switch {
	case !ok:
		status(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
	case name != "":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(shortLease(ns, name, stamp(started)))
	case !isWatch(r):
		leaseList(w, shortLease(ns, asked(r), stamp(started)), shortLease(ns, "other", stamp(time.Now())))
	default:
		stream(w, r, func() bool { return event(w, "MODIFIED", shortLease(ns, "other", stamp(time.Now()))) })
	}
}

func badEvent(w http.ResponseWriter, r *http.Request) {
	ns, name, ok := leasePath(r)
	switch {
	case !ok:
		status(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
	case name != "":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(shortLease(ns, name, stamp(time.Now())))
	case !isWatch(r):
		leaseList(w, shortLease(ns, asked(r), stamp(time.Now())))
	default:
		first := true
		stream(w, r, func() bool {
			renewed := stamp(time.Now())
			if first {
				first, renewed = false, "not a time"
			}
			return event(w, "MODIFIED", shortLease(ns, asked(r), renewed))
		})
	}
}

func kueue503(w http.ResponseWriter, r *http.Request) {
	ns, name, ok := leasePath(r)
	switch {
	case !ok:
		status(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
	case ns == "kueue-system":
		status(w, http.StatusServiceUnavailable, "ServiceUnavailable", "the server is currently unable to handle the request")
	case name != "":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(shortLease(ns, name, stamp(started)))
	case !isWatch(r):
		leaseList(w, shortLease(ns, asked(r), stamp(started)))
	default:
		stream(w, r, func() bool { return false })
	}
}

func watch401(w http.ResponseWriter, r *http.Request) {
	ns, name, ok := leasePath(r)
	if !ok || !isWatch(r) {
		renewedNow(w, r, ns, name, ok)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	event(w, "ERROR", map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Failure", "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
}

func watchBookmark(w http.ResponseWriter, r *http.Request) {
	ns, name, ok := leasePath(r)
	if !ok || !isWatch(r) {
		renewedNow(w, r, ns, name, ok)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	event(w, "BOOKMARK", map[string]any{"kind": "Lease", "apiVersion": "coordination.k8s.io/v1", "metadata": map[string]any{"resourceVersion": nextVersion()}})
}

// renewedNow answers a Lease get or list with the Lease renewed just now.
func renewedNow(w http.ResponseWriter, r *http.Request, ns, name string, ok bool) {
	switch {
	case !ok:
		status(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
	case name != "":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(shortLease(ns, name, stamp(time.Now())))
	default:
		leaseList(w, shortLease(ns, asked(r), stamp(time.Now())))
	}
}

func silentWatch(w http.ResponseWriter, r *http.Request) {
	ns, name, ok := leasePath(r)
	long := func(name string) map[string]any {
		l := shortLease(ns, name, stamp(time.Now()))
		l["spec"].(map[string]any)["leaseDurationSeconds"] = 300
		return l
	}
	switch {
	case !ok:
		status(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
	case name != "":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(long(name))
	case !isWatch(r):
		leaseList(w, long(asked(r)))
	default:
		stream(w, r, func() bool { return false })
	}
}

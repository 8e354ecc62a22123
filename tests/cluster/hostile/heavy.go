package main

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// The list modes: a small Kueue API (discovery of kueue.x-k8s.io at v1beta2, empty lists of
// ClusterQueues, AdmissionChecks and LocalQueues, a Lease GET 404) whose Workload list is the
// hostile part. Each is one page, whatever limit was asked for:
//   tiny-items     4,000,000 Workloads {"metadata":{}}: 64 MB of objects of 15 bytes
//   heavy-page     1,200 Workloads of about 150 KB each (an annotation of 150,000 bytes), in
//                  pages of the limit asked for (500: pages of 75 MB), continued by the index
//                  of the next one; each a Workload `workloads -A` lists as a row
//   light-pages    the same 1,200 Workloads with an annotation of 10 bytes
//   endless-items  tiny Workloads for ever
//   flood-list     the items array opened, then spaces for ever, as fast as the client reads
//   gzip-list      Content-Encoding: gzip, about 256 KiB that inflate to 256 MiB of spaces
//                  inside the items array

func init() {
	answers["tiny-items"] = kueueList(tinyItems)
	answers["heavy-page"] = pagesOf(150_000)
	answers["light-pages"] = pagesOf(10)
	answers["endless-items"] = kueueList(endlessItems)
	answers["flood-list"] = kueueList(func(w io.Writer) {
		_, _ = io.WriteString(w, workloadHead)
		spaces := []byte(strings.Repeat(" ", 64<<10))
		for {
			if _, err := w.Write(spaces); err != nil {
				return
			}
		}
	})
	answers["gzip-list"] = func(w http.ResponseWriter, r *http.Request) {
		if !isWorkloadList(r) {
			kueueList(nil)(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(listBomb())
	}
}

const workloadHead = `{"apiVersion":"kueue.x-k8s.io/v1beta2","items":[`

const workloadTail = `],"kind":"WorkloadList","metadata":{"resourceVersion":"1"}}`

func isWorkloadList(r *http.Request) bool {
	return strings.HasSuffix(r.URL.Path, "/workloads") && r.URL.Query().Get("limit") != ""
}

// kueueList answers Kueue's discovery and lists; the Workload list's body is workloads'.
func kueueList(workloads func(io.Writer)) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/apis/kueue.x-k8s.io":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"kind":"APIGroup","apiVersion":"v1","name":"kueue.x-k8s.io","versions":[{"groupVersion":"kueue.x-k8s.io/v1beta2","version":"v1beta2"}],"preferredVersion":{"groupVersion":"kueue.x-k8s.io/v1beta2","version":"v1beta2"}}`)
		case isWorkloadList(r) && workloads != nil:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			b := bufio.NewWriterSize(w, 64<<10)
			workloads(b)
			_ = b.Flush()
		case strings.HasPrefix(r.URL.Path, "/apis/kueue.x-k8s.io/") && r.URL.Query().Get("limit") != "":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"apiVersion":"kueue.x-k8s.io/v1beta2","items":[],"kind":"List","metadata":{"resourceVersion":"1"}}`)
		default:
			status(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
		}
	}
}

func tinyItems(w io.Writer) {
	_, _ = io.WriteString(w, workloadHead)
	for i := 0; i < 4_000_000; i++ {
		if i > 0 {
			_, _ = io.WriteString(w, ",")
		}
		if _, err := io.WriteString(w, `{"metadata":{}}`); err != nil {
			return
		}
	}
	_, _ = io.WriteString(w, workloadTail)
}

// pagesOf answers the Workload list with 1,200 Workloads whose annotation holds size bytes,
// in pages of the limit asked for.
func pagesOf(size int) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		from, _ := strconv.Atoi(q.Get("continue"))
		limit, _ := strconv.Atoi(q.Get("limit"))
		kueueList(func(w io.Writer) { heavyPage(w, from, limit, size) })(w, r)
	}
}

func heavyPage(w io.Writer, from, limit, size int) {
	const total = 1200
	annotation := strings.Repeat("x", size)
	_, _ = io.WriteString(w, workloadHead)
	to := min(from+max(limit, 1), total)
	for i := from; i < to; i++ {
		if i > from {
			_, _ = io.WriteString(w, ",")
		}
		_, err := fmt.Fprintf(w, `{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"Workload","metadata":{"annotations":{"example.com/big":%q},"name":"heavy-%04d","namespace":"ns-%d","resourceVersion":"1"},"spec":{"queueName":"lq"}}`, annotation, i, i*5/total)
		if err != nil {
			return
		}
	}
	next := ""
	if to < total {
		next = strconv.Itoa(to)
	}
	_, _ = fmt.Fprintf(w, `],"kind":"WorkloadList","metadata":{"continue":%q,"resourceVersion":"1"}}`, next)
}

func endlessItems(w io.Writer) {
	_, _ = io.WriteString(w, workloadHead+`{"metadata":{}}`)
	for {
		if _, err := io.WriteString(w, `,{"metadata":{}}`); err != nil {
			return
		}
	}
}

var (
	listBombOnce sync.Once
	listBombBody []byte
)

// listBomb is a gzip stream that inflates to a Workload list whose items array holds 256 MiB
// of spaces, made once.
func listBomb() []byte {
	listBombOnce.Do(func() {
		var buf strings.Builder
		z, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = io.WriteString(z, workloadHead)
		spaces := []byte(strings.Repeat(" ", 1<<20))
		for i := 0; i < 256; i++ {
			_, _ = z.Write(spaces)
		}
		_, _ = io.WriteString(z, workloadTail)
		_ = z.Close()
		listBombBody = []byte(buf.String())
	})
	return listBombBody
}

// Command testhostile is the hostile server of kubectl-dispatch's tests: plain HTTP on
// loopback, giving the answers no real kube-apiserver gives, and logging the headers of every
// request it receives (so a test can see which credentials a client sent). Run it as
// `tests/cluster/testcluster hostile --mode MODE --log FILE`, which builds it. It is its own
// Go module, with the standard library only.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const usage = `usage:
  testcluster hostile --mode MODE --log FILE [--listen 127.0.0.1:0]
      serve plain HTTP on loopback; every request, whatever its path (an absolute-form
      request too, as a client sends through an HTTP_PROXY; a CONNECT is answered 200 and
      the requests inside the tunnel are served the same way), gets the MODE's answer:
        headers        401 Unauthorized, a Status as kube-apiserver gives an anonymous user
        status-escape  500, a Status whose message holds escape sequences (OSC title,
                       clear screen, BEL) and a newline with a forged error line after it
        retry-after    503, Retry-After: 10000000000000000000 (20 digits) and a Status
        endless        200 application/json, a LeaseList whose body never ends (spaces, for ever)
        drip           200 application/json, a LeaseList one byte a second
        flood          200 application/json, a LeaseList whose body never ends, sent as fast
                       as the client reads it
        gzip-bomb      200 application/json, Content-Encoding: gzip: about 256 KiB that inflate
                       to a LeaseList of 256 MiB (spaces)
        redirect       302 Found, Location: https://admin:S3CRET@127.0.0.1:1/elsewhere
        continue-same  Kueue's API group in discovery (v1beta2); every list (a request with
                       limit=) an empty page whose continue token is always "again"; else 404
        continue-new   the same, with a new continue token on every page, for ever
        continue-later Kueue's API group in discovery (v1beta2); a path's first list (no
                       continue token) a last, empty page; every later list of that path
                       as continue-same answers it; a watch (watch=true) 200 and held open
                       with no event: the live modes' lists (after the one-shot reads'
                       first page of each) do not end; else 404
        odd-times      a small Kueue API (discovery, Lease GET, ClusterQueue, AdmissionCheck,
                       LocalQueue and Workload lists: a gate that says yes) whose objects'
                       metadata times are odd (creationTimestamp 9999-12-31T23:59:59Z, a
                       managedFields time in year 10000), one Workload with plain times beside
                       and one whose spec.queueName is no string
        endless-watch  Leases as a real server answers a list or get (one fresh Lease,
                       named as asked), then a watch (watch=true) whose event line never
                       ends (bytes without a newline, for ever)
        closing-watch  the same Leases, then a watch answered 200 and closed at once,
                       every time
        gone-list      a Lease GET as a real server answers it; every list of Leases and
                       every watch 410 Gone, a Status Expired "too old resource version"
        tiny-items, heavy-page, light-pages, endless-items, flood-list,
                       gzip-list
                       a small Kueue API whose Workload list is one hostile page
                       (heavy.go says what each holds)
      Appends one JSON line per request to FILE: {"method","uri","host","headers"} (header
      names in canonical form, values as received). Prints one line "listening on
      127.0.0.1:PORT" once ready. Serves until SIGTERM/SIGINT or until its standard input is
      closed; exits 0. Listens on 127.0.0.1 only and dials nothing.
`

// Escape is the hostile text in status-escape's message: an OSC window title, a clear screen,
// a BEL, and a newline followed by a forged line.
const Escape = "\x1b]0;pwned\x07\x1b[2J\x07forbidden by policy\nerror: forged second line"

func main() { os.Exit(realMain(os.Args[1:])) }

func realMain(args []string) int {
	fs := flag.NewFlagSet("testcluster hostile", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	mode := fs.String("mode", "", "the answer to give")
	logPath := fs.String("log", "", "file to append one line per request to")
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on (127.0.0.1 only)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "testcluster hostile: "+format+"\n%s", append(a, usage)...)
		return 2
	}
	answer, ok := answers[*mode]
	if !ok {
		answer, ok = watchAnswers[*mode]
	}
	switch {
	case fs.NArg() > 0:
		return bad("unexpected arguments %q", fs.Args())
	case !ok:
		return bad("unknown --mode %q", *mode)
	case *logPath == "":
		return bad("--log is required")
	}
	if host, _, err := net.SplitHostPort(*listen); err != nil || host != "127.0.0.1" {
		return bad("--listen must be 127.0.0.1:PORT, not %q", *listen)
	}
	f, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fail("%v", err)
	}
	defer f.Close()
	l, err := net.Listen("tcp4", *listen)
	if err != nil {
		return fail("%v", err)
	}
	rec := &recorder{log: f}
	var srv *http.Server
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.record(r)
		if r.Method == http.MethodConnect {
			tunnel(srv, w)
			return
		}
		answer(w, r)
	})
	srv = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(os.Stderr, "testcluster hostile: ", 0)}

	done := make(chan string, 3)
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	go func() { done <- (<-sigc).String() }()
	go func() {
		// A test that dies closes our stdin (a pipe it holds): we go with it.
		_, _ = io.Copy(io.Discard, os.Stdin)
		done <- "standard input closed"
	}()
	go func() { done <- "serve: " + srv.Serve(l).Error() }()
	fmt.Printf("listening on %s\n", l.Addr())
	_ = os.Stdout.Sync()
	why := <-done
	_ = srv.Close()
	if strings.HasPrefix(why, "serve: ") {
		return fail("%s", why)
	}
	return 0
}

// tunnel answers a CONNECT as a forward proxy would, then serves the requests sent through
// the tunnel itself (logged and answered like any other): so a client that reaches an http
// server through an HTTP_PROXY by CONNECT shows what it sends inside the tunnel too.
func tunnel(srv *http.Server, w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "cannot hijack", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		_ = conn.Close()
		return
	}
	inner := &http.Server{Handler: srv.Handler, ReadHeaderTimeout: srv.ReadHeaderTimeout, ErrorLog: srv.ErrorLog}
	_ = inner.Serve(&oneConn{conn: &bufferedConn{Conn: conn, r: buf.Reader}, done: make(chan struct{})})
}

// oneConn is a listener that hands out one connection, then blocks until it is closed.
type oneConn struct {
	once sync.Once
	conn net.Conn
	done chan struct{}
}

func (l *oneConn) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = &closeNotify{Conn: l.conn, done: l.done} })
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}
func (l *oneConn) Close() error   { return nil }
func (l *oneConn) Addr() net.Addr { return l.conn.LocalAddr() }

type closeNotify struct {
	net.Conn
	once sync.Once
	done chan struct{}
}

func (c *closeNotify) Close() error {
	c.once.Do(func() { close(c.done) })
	return c.Conn.Close()
}

// bufferedConn reads first what the CONNECT's reader had buffered past the request.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func fail(format string, a ...any) int {
	fmt.Fprintf(os.Stderr, "testcluster hostile: "+format+"\n", a...)
	return 1
}

type recorder struct {
	mu  sync.Mutex
	log *os.File
}

type entry struct {
	Method  string              `json:"method"`
	URI     string              `json:"uri"`
	Host    string              `json:"host"`
	Headers map[string][]string `json:"headers"`
}

func (rec *recorder) record(r *http.Request) {
	line, err := json.Marshal(entry{Method: r.Method, URI: r.RequestURI, Host: r.Host, Headers: r.Header})
	if err != nil {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	_, _ = rec.log.Write(append(line, '\n'))
}

func status(w http.ResponseWriter, code int, reason, message string) {
	body, _ := json.Marshal(map[string]any{
		"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": message, "reason": reason, "code": code,
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

const listHead = `{"kind":"LeaseList","apiVersion":"coordination.k8s.io/v1","metadata":{"resourceVersion":"1"},"items":[`

var answers = map[string]func(http.ResponseWriter, *http.Request){
	"headers": func(w http.ResponseWriter, r *http.Request) {
		status(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized")
	},
	"status-escape": func(w http.ResponseWriter, r *http.Request) {
		status(w, http.StatusInternalServerError, "InternalError", Escape)
	},
	"retry-after": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "10000000000000000000")
		status(w, http.StatusServiceUnavailable, "ServiceUnavailable", "the server is currently unable to handle the request")
	},
	"endless": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		if _, err := io.WriteString(w, listHead); err != nil {
			return
		}
		spaces := []byte(strings.Repeat(" ", 4096))
		for {
			if _, err := w.Write(spaces); err != nil {
				return
			}
			if fl, ok := w.(http.Flusher); ok {
				fl.Flush()
			}
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	},
	"flood": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		if _, err := io.WriteString(w, listHead); err != nil {
			return
		}
		spaces := []byte(strings.Repeat(" ", 64<<10))
		for {
			if _, err := w.Write(spaces); err != nil {
				return
			}
		}
	},
	"gzip-bomb": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(bomb())
	},
	"redirect": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "https://admin:S3CRET@127.0.0.1:1/elsewhere")
		w.WriteHeader(http.StatusFound)
	},
	"continue-same":  func(w http.ResponseWriter, r *http.Request) { endlessList(w, r, false) },
	"continue-new":   func(w http.ResponseWriter, r *http.Request) { endlessList(w, r, true) },
	"continue-later": continueLater,
	"drip": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		body := listHead + strings.Repeat(" ", 3600) + "]}"
		for i := 0; i < len(body); i++ {
			if _, err := io.WriteString(w, body[i:i+1]); err != nil {
				return
			}
			if fl, ok := w.(http.Flusher); ok {
				fl.Flush()
			}
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Second):
			}
		}
	},
}

var (
	bombOnce sync.Once
	bombBody []byte
)

// bomb is a gzip stream that inflates to a LeaseList of 256 MiB, made once.
func bomb() []byte {
	bombOnce.Do(func() {
		var buf bytes.Buffer
		z, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = io.WriteString(z, listHead)
		spaces := []byte(strings.Repeat(" ", 1<<20))
		for i := 0; i < 256; i++ {
			_, _ = z.Write(spaces)
		}
		_, _ = io.WriteString(z, "]}")
		_ = z.Close()
		bombBody = buf.Bytes()
	})
	return bombBody
}

var pages struct {
	sync.Mutex
	n int
}

// endlessList answers discovery of Kueue's group, and every list with an empty page that has
// a continue token: "again" each time, or a new one each time.
func endlessList(w http.ResponseWriter, r *http.Request, fresh bool) {
	if r.URL.Path == "/apis/kueue.x-k8s.io" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"APIGroup","apiVersion":"v1","name":"kueue.x-k8s.io","versions":[{"groupVersion":"kueue.x-k8s.io/v1beta2","version":"v1beta2"}],"preferredVersion":{"groupVersion":"kueue.x-k8s.io/v1beta2","version":"v1beta2"}}`)
		return
	}
	if r.URL.Query().Get("limit") == "" {
		status(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
		return
	}
	token := "again"
	if fresh {
		pages.Lock()
		pages.n++
		token = "page-" + strconv.Itoa(pages.n)
		pages.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1","continue":%q},"items":[]}`, token)
}

// watchAnswers are the modes that serve Leases as a real server does and break only the watch.
var watchAnswers = map[string]func(http.ResponseWriter, *http.Request){
	"endless-watch": func(w http.ResponseWriter, r *http.Request) {
		if !isWatch(r) {
			leases(w, r)
			return
		}
		endlessLine(w, r)
	},
	"closing-watch": func(w http.ResponseWriter, r *http.Request) {
		if !isWatch(r) {
			leases(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
	},
}

var listed struct {
	sync.Mutex
	paths map[string]bool
}

// continueLater answers a path's first list with a last, empty page and every later list of
// it as continue-same does; a watch is accepted and held open, with no event, until the
// client goes.
func continueLater(w http.ResponseWriter, r *http.Request) {
	if isWatch(r) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		<-r.Context().Done()
		return
	}
	q := r.URL.Query()
	if q.Get("limit") != "" && q.Get("continue") == "" {
		listed.Lock()
		first := !listed.paths[r.URL.Path]
		if listed.paths == nil {
			listed.paths = map[string]bool{}
		}
		listed.paths[r.URL.Path] = true
		listed.Unlock()
		if first {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`)
			return
		}
	}
	endlessList(w, r, false)
}

func isWatch(r *http.Request) bool {
	v := r.URL.Query().Get("watch")
	return v == "true" || v == "1"
}

// endlessLine starts a watch event and never ends its line: the Lease's name goes on for ever.
func endlessLine(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if _, err := io.WriteString(w, `{"type":"MODIFIED","object":{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"`); err != nil {
		return
	}
	chunk := []byte(strings.Repeat("x", 64*1024))
	for r.Context().Err() == nil {
		if _, err := w.Write(chunk); err != nil {
			return
		}
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
}

// leases answers a Lease list (one Lease, named by the fieldSelector metadata.name=NAME) or
// a Lease get, as kube-apiserver does; the Lease was renewed just now. Anything else is 404.
func leases(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// apis coordination.k8s.io v1 namespaces NS leases [NAME]
	if len(parts) < 6 || parts[0] != "apis" || parts[1] != "coordination.k8s.io" || parts[3] != "namespaces" || parts[5] != "leases" {
		status(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
		return
	}
	ns := parts[4]
	w.Header().Set("Content-Type", "application/json")
	if len(parts) == 7 {
		_ = json.NewEncoder(w).Encode(lease(ns, parts[6]))
		return
	}
	items := []any{}
	if name, ok := strings.CutPrefix(r.URL.Query().Get("fieldSelector"), "metadata.name="); ok {
		items = append(items, lease(ns, name))
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"kind": "LeaseList", "apiVersion": "coordination.k8s.io/v1",
		"metadata": map[string]any{"resourceVersion": "1"}, "items": items,
	})
}

func lease(ns, name string) map[string]any {
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z07:00")
	return map[string]any{
		"kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
		"metadata": map[string]any{"name": name, "namespace": ns, "resourceVersion": "1", "uid": "0f0f0f0f-0000-4000-8000-000000000001", "creationTimestamp": now[:19] + "Z"},
		"spec":     map[string]any{"holderIdentity": "hostile_0001", "leaseDurationSeconds": 15, "acquireTime": now, "renewTime": now, "leaseTransitions": 0},
	}
}

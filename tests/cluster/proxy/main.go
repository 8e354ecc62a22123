// Command testproxy is the forward proxy of kubectl-dispatch's tests: a real HTTP CONNECT
// proxy (github.com/elazarl/goproxy) or SOCKS5 server (github.com/armon/go-socks5) on
// loopback, with optional credentials, that writes one line per tunnel to a log file. Run
// it as `tests/cluster/testcluster proxy ...`, which builds it. It is its own Go module so
// that its dependencies cannot move the versions the kube-apiserver build uses.
//
// It listens on 127.0.0.1 only and dials loopback targets only (127.0.0.0/8, ::1, and the
// name localhost, never resolved through DNS); anything else is refused and logged.
package main

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	socks5 "github.com/armon/go-socks5"
	"github.com/elazarl/goproxy"
)

const usage = `usage:
  testcluster proxy --kind http|socks5 --log FILE [--user U --password P] [--listen 127.0.0.1:0]
      run a forward proxy on loopback: http is an HTTP CONNECT proxy (goproxy), socks5 a
      SOCKS5 server (go-socks5). With --user/--password clients must authenticate (HTTP:
      Proxy-Authorization Basic, else 407; SOCKS5: username/password). Prints one line
      "listening on 127.0.0.1:PORT" once ready, appends one line per connection to FILE:
        CONNECT 127.0.0.1:6443          a tunnel through the HTTP proxy
        SOCKS5 127.0.0.1:6443           a tunnel through the SOCKS5 server
        HTTP GET http://127.0.0.1:8001/path   a plain (absolute-form) request, HTTP proxy
        DENIED CONNECT 127.0.0.1:6443 (no credentials|wrong credentials for user "U")
        DENIED SOCKS5 (no acceptable auth method|wrong credentials for user "U")
        REFUSED CONNECT|SOCKS5|HTTP ADDR (not loopback)
        FAILED CONNECT|SOCKS5 ADDR: ERROR   the target could not be dialled
      Serves until SIGTERM/SIGINT or until its standard input is closed; exits 0.
      Only listens on 127.0.0.1 and only dials loopback targets.
`

func main() { os.Exit(realMain(os.Args[1:])) }

func realMain(args []string) int {
	fs := flag.NewFlagSet("testcluster proxy", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	kind := fs.String("kind", "", "http or socks5")
	user := fs.String("user", "", "required user name")
	password := fs.String("password", "", "required password")
	logPath := fs.String("log", "", "file to append one line per connection to")
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on (127.0.0.1 only)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "testcluster proxy: "+format+"\n%s", append(a, usage)...)
		return 2
	}
	switch {
	case fs.NArg() > 0:
		return bad("unexpected arguments %q", fs.Args())
	case *kind != "http" && *kind != "socks5":
		return bad("--kind must be http or socks5, not %q", *kind)
	case *logPath == "":
		return bad("--log is required")
	case (*user == "") != (*password == ""):
		return bad("--user and --password go together")
	}
	if host, _, err := net.SplitHostPort(*listen); err != nil || host != "127.0.0.1" {
		return bad("--listen must be 127.0.0.1:PORT, not %q", *listen)
	}
	f, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fail("%v", err)
	}
	defer f.Close()
	p := &proxy{log: f, user: *user, password: *password}

	l, err := net.Listen("tcp4", *listen)
	if err != nil {
		return fail("%v", err)
	}
	var serve func() error
	var stop func()
	if *kind == "http" {
		srv := &http.Server{Handler: p.httpProxy(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(os.Stderr, "testcluster proxy: ", 0)}
		serve = func() error { return srv.Serve(l) }
		stop = func() { _ = srv.Close() }
	} else {
		srv, err := p.socksServer()
		if err != nil {
			return fail("%v", err)
		}
		serve = func() error { return srv.Serve(l) }
		stop = func() { _ = l.Close() }
	}

	done := make(chan string, 3)
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	go func() { done <- (<-sigc).String() }()
	go func() {
		// A test that dies closes our stdin (a pipe it holds): we go with it.
		_, _ = io.Copy(io.Discard, os.Stdin)
		done <- "standard input closed"
	}()
	go func() {
		err := serve()
		done <- "serve: " + err.Error()
	}()
	fmt.Printf("listening on %s\n", l.Addr())
	_ = os.Stdout.Sync()
	why := <-done
	stop()
	if strings.HasPrefix(why, "serve: ") {
		return fail("%s", why)
	}
	return 0
}

func fail(format string, a ...any) int {
	fmt.Fprintf(os.Stderr, "testcluster proxy: "+format+"\n", a...)
	return 1
}

type proxy struct {
	mu             sync.Mutex
	log            *os.File
	user, password string
}

// record appends one line to the log file (one write, O_APPEND).
func (p *proxy) record(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := fmt.Fprintf(p.log, format+"\n", a...); err != nil {
		fmt.Fprintf(os.Stderr, "testcluster proxy: log: %v\n", err)
	}
}

// valid reports whether user/password are the required credentials.
func (p *proxy) valid(user, password string) bool {
	return subtle.ConstantTimeCompare([]byte(user), []byte(p.user)) == 1 &&
		subtle.ConstantTimeCompare([]byte(password), []byte(p.password)) == 1
}

// loopback maps ADDR (host:port) to a loopback IP:port, or fails: only loopback IPs, the name
// localhost and names under .test (each taken as 127.0.0.1, no DNS) are allowed.
func loopback(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	// localhost, and names under .test (reserved for testing, RFC 6761), stand for this
	// machine: no DNS is asked. A client that reaches dispatch.test did so through the proxy.
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".test") {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", errors.New("not loopback")
	}
	return net.JoinHostPort(host, port), nil
}

// dial connects to a loopback target, recording the tunnel as "WHAT ADDR" (or REFUSED /
// FAILED with the reason).
func (p *proxy) dial(ctx context.Context, what, addr string) (net.Conn, error) {
	target, err := loopback(addr)
	if err != nil {
		p.record("REFUSED %s %s (not loopback)", what, addr)
		return nil, fmt.Errorf("testcluster proxy: %s is not a loopback address", addr)
	}
	d := net.Dialer{Timeout: 10 * time.Second}
	c, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		p.record("FAILED %s %s: %v", what, target, err)
		return nil, err
	}
	// The address as the client asked for it (a name under .test stays a name).
	p.record("%s %s", what, addr)
	return &counted{Conn: c, p: p, what: what, target: addr}, nil
}

// counted is a tunnel's connection to its target, counting the bytes each way; closing it
// records "CLOSED WHAT ADDR up=N down=M" (up: towards the target).
type counted struct {
	net.Conn
	p            *proxy
	what, target string
	up, down     atomic.Int64
	once         sync.Once
}

func (c *counted) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.down.Add(int64(n))
	return n, err
}

func (c *counted) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.up.Add(int64(n))
	return n, err
}

func (c *counted) Close() error {
	c.once.Do(func() { c.p.record("CLOSED %s %s up=%d down=%d", c.what, c.target, c.up.Load(), c.down.Load()) })
	return c.Conn.Close()
}

// --- HTTP ---

// proxyAuth checks the Proxy-Authorization header: "" if fine, else why not.
func (p *proxy) proxyAuth(r *http.Request) string {
	if p.user == "" {
		return ""
	}
	h := r.Header.Get("Proxy-Authorization")
	if h == "" {
		return "no credentials"
	}
	scheme, b64, _ := strings.Cut(h, " ")
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if !strings.EqualFold(scheme, "Basic") || err != nil {
		return "not Basic credentials"
	}
	user, password, _ := strings.Cut(string(raw), ":")
	if !p.valid(user, password) {
		return fmt.Sprintf("wrong credentials for user %q", user)
	}
	return ""
}

func (p *proxy) httpProxy() *goproxy.ProxyHttpServer {
	gp := goproxy.NewProxyHttpServer()
	gp.Logger = log.New(os.Stderr, "testcluster proxy: ", 0)
	// Never chain to a proxy from the environment (HTTPS_PROXY, HTTP_PROXY).
	gp.ConnectDialWithReq = nil
	gp.ConnectDial = func(network, addr string) (net.Conn, error) {
		return p.dial(context.Background(), "CONNECT", addr)
	}
	gp.Tr = &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			target, err := loopback(addr)
			if err != nil {
				return nil, fmt.Errorf("testcluster proxy: %s is not a loopback address", addr)
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", target)
		},
	}
	challenge := &goproxy.ConnectAction{
		Action: goproxy.ConnectProxyAuthHijack,
		Hijack: func(_ *http.Request, client net.Conn, _ *goproxy.ProxyCtx) {
			// goproxy has written the status line.
			_, _ = io.WriteString(client, "Proxy-Authenticate: Basic realm=\"testcluster\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			_ = client.Close()
		},
	}
	gp.OnRequest().HandleConnectFunc(func(host string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
		if why := p.proxyAuth(ctx.Req); why != "" {
			p.record("DENIED CONNECT %s (%s)", host, why)
			return challenge, host
		}
		return goproxy.OkConnect, host
	})
	gp.OnRequest().DoFunc(func(r *http.Request, ctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
		if why := p.proxyAuth(r); why != "" {
			p.record("DENIED HTTP %s %s (%s)", r.Method, r.URL, why)
			resp := goproxy.NewResponse(r, goproxy.ContentTypeText, http.StatusProxyAuthRequired, "proxy authentication required\n")
			resp.Header.Set("Proxy-Authenticate", `Basic realm="testcluster"`)
			return r, resp
		}
		host := r.URL.Host
		if !strings.Contains(host, ":") {
			host += ":80"
		}
		if _, err := loopback(host); err != nil {
			p.record("REFUSED HTTP %s (not loopback)", r.URL)
			return r, goproxy.NewResponse(r, goproxy.ContentTypeText, http.StatusForbidden, "testcluster proxy: only loopback targets\n")
		}
		p.record("HTTP %s %s", r.Method, r.URL)
		return r, nil
	})
	return gp
}

// --- SOCKS5 ---

// socksCredentials records refused credentials.
type socksCredentials struct{ p *proxy }

func (c socksCredentials) Valid(user, password string) bool {
	if c.p.valid(user, password) {
		return true
	}
	c.p.record("DENIED SOCKS5 (wrong credentials for user %q)", user)
	return false
}

// socksLog passes go-socks5's messages to stderr and records a client that offered no
// acceptable auth method (the library reports that only through its logger).
type socksLog struct{ p *proxy }

func (w socksLog) Write(b []byte) (int, error) {
	if strings.Contains(string(b), socks5.NoSupportedAuth.Error()) {
		w.p.record("DENIED SOCKS5 (no acceptable auth method)")
	}
	return os.Stderr.Write(b)
}

// socksResolver resolves localhost and names under .test to 127.0.0.1, without DNS (the
// client asked the proxy to resolve them); other names are refused.
type socksResolver struct{ p *proxy }

func (r socksResolver) Resolve(ctx context.Context, name string) (context.Context, net.IP, error) {
	if strings.EqualFold(name, "localhost") || strings.HasSuffix(strings.ToLower(name), ".test") {
		r.p.record("RESOLVED %s", name)
		return ctx, net.IPv4(127, 0, 0, 1), nil
	}
	r.p.record("REFUSED SOCKS5 %s (not loopback)", name)
	return ctx, nil, fmt.Errorf("testcluster proxy: %s is not a loopback name", name)
}

func (p *proxy) socksServer() (*socks5.Server, error) {
	conf := &socks5.Config{
		Resolver: socksResolver{p},
		Logger:   log.New(socksLog{p}, "testcluster proxy: ", 0),
		Dial: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return p.dial(ctx, "SOCKS5", addr)
		},
	}
	if p.user != "" {
		conf.Credentials = socksCredentials{p}
	}
	return socks5.New(conf)
}

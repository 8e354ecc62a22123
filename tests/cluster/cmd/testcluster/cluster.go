package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// State folder layout (DIR):
//   env                   KUBECONFIG, DISPATCH_TEST_AUDIT_LOG, DISPATCH_TEST_STATE_DIR, APISERVER_URL,
//                         DISPATCH_TEST_TOKEN_FILE
//   kubeconfig            contexts admin (current), viewer, no-lease, no-pods, nobody, token
//   token                 token-user's bearer token (no newline); token-auth.csv, its --token-auth-file
//   audit.log             kube-apiserver audit log (level Metadata, JSON lines)
//   audit-policy.yaml
//   pki/                  ca, apiserver serving cert, admin/viewer/no-lease/no-pods/nobody client certs, sa.key,
//                         front-proxy-ca and front-proxy-client (the aggregation layer)
//   etcd/                 etcd data
//   kube-apiserver.json   binary + arguments, for start-apiserver
//   <name>.pid, <name>.log  for etcd, kube-apiserver, reaper
//   .testcluster, .lock, .stopping   bookkeeping (see processes.go)

// config is what every subcommand that starts processes needs. The bash entry points set
// the TESTCLUSTER_* variables.
type config struct {
	dir          string // absolute state folder
	moduleDir    string // tests/cluster (kueue.sums; ../../deploy/rbac.yaml)
	etcdBin      string
	apiserverBin string
	kueue        string // a version in kueue.sums, or "none"
	// kueueManagerBin is Kueue's own manager for that version (--kueue-manager), else "".
	kueueManagerBin string
	// noWatchCache: lists and watches are served from etcd (start --no-watch-cache).
	noWatchCache bool
	// kueueLeaderElect: Kueue's manager runs with leader election on, holding its Lease
	// kueue-system/c1f6bfd2.kueue.x-k8s.io (--kueue-leader-elect).
	kueueLeaderElect bool
	// kueueV1beta2Only: Kueue's CRDs serve v1beta2 alone and only the v1beta2 visibility
	// APIService is registered, as Kueue v0.20 installs (--kueue-v1beta2-only).
	kueueV1beta2Only bool
	// kueueFeatureGates: more of Kueue's feature gates for its manager, as its
	// --feature-gates takes them (--kueue-feature-gates).
	kueueFeatureGates string
}

func configFromEnv(dir, kueue string) (config, error) {
	cfg := config{
		dir:          dir,
		moduleDir:    os.Getenv("TESTCLUSTER_MODULE_DIR"),
		etcdBin:      os.Getenv("TESTCLUSTER_ETCD"),
		apiserverBin: os.Getenv("TESTCLUSTER_KUBE_APISERVER"),
		kueue:        kueue,
	}
	for name, v := range map[string]string{
		"TESTCLUSTER_MODULE_DIR": cfg.moduleDir, "TESTCLUSTER_ETCD": cfg.etcdBin, "TESTCLUSTER_KUBE_APISERVER": cfg.apiserverBin,
	} {
		if v == "" {
			return cfg, fmt.Errorf("%s is not set (run testcluster through tests/cluster/run or tests/cluster/testcluster)", name)
		}
		if !exists(v) {
			return cfg, fmt.Errorf("%s=%s does not exist", name, v)
		}
	}
	return cfg, checkKueueVersion(cfg.moduleDir, kueue)
}

// apiserverSpec is saved as DIR/kube-apiserver.json so start-apiserver can restart it
// with the very same arguments (port, certificates, etcd).
type apiserverSpec struct {
	Bin  string   `json:"bin"`
	Args []string `json:"args"`
	URL  string   `json:"url"`
}

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
`

// prepareDir makes DIR (absolute) and claims it with the marker; it must be new or empty.
func prepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("state folder %s is not empty (a cluster may already live there; stop it first)", dir)
	}
	return os.WriteFile(filepath.Join(dir, markerFile), []byte("testcluster state folder\n"), 0o600)
}

// freePorts returns n free loopback ports below the kernel's ephemeral range, so that a
// kube-apiserver restarted on its port (start-apiserver) does not find it taken by the local
// end of some outgoing connection, as a port the kernel handed out could be.
func freePorts(n int) ([]int, error) {
	lo := ephemeralLow()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		addr := "127.0.0.1:0"
		if lo > 11000 && tries < 200 {
			addr = fmt.Sprintf("127.0.0.1:%d", 10000+mrand.IntN(lo-10000))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if tries < 1000 {
				continue
			}
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ephemeralLow is the first port of net.ipv4.ip_local_port_range (32768 if unreadable).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil {
				return lo
			}
		}
	}
	return 32768
}

// spawnReaper starts `testcluster _reap`, which tears the cluster down once owner dies.
func spawnReaper(dir string, owner int) error {
	st := startTime(owner)
	if st == "" || !alive(owner) {
		return fmt.Errorf("owner pid %d is not running", owner)
	}
	_, err := spawn(dir, reaperName, selfExe, []string{"_reap", "--state-dir", dir,
		"--owner-pid", strconv.Itoa(owner), "--owner-start", st})
	return err
}

// startCluster brings the cluster up in cfg.dir (already prepared) and writes DIR/env.
// On error the caller tears down (after reading the log tails).
func startCluster(cfg config) error {
	dir := cfg.dir
	t0 := time.Now()
	phase := func(what string) { // TESTCLUSTER_VERBOSE=1: where the startup time goes
		if os.Getenv("TESTCLUSTER_VERBOSE") != "" {
			fmt.Fprintf(os.Stderr, "testcluster: %6.2fs %s\n", time.Since(t0).Seconds(), what)
		}
	}
	// Fetching/verifying the Kueue module runs while etcd and kube-apiserver start.
	type crdResult struct {
		kueueDir string
		files    []string
		err      error
	}
	crdc := make(chan crdResult, 1)
	go func() {
		if cfg.kueue == "none" {
			crdc <- crdResult{}
			return
		}
		kueueDir, err := kueueModule(cfg.moduleDir, cfg.kueue)
		var files []string
		if err == nil {
			files, err = kueueCRDFiles(kueueDir)
		}
		crdc <- crdResult{kueueDir, files, err}
	}()

	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	apiURL := fmt.Sprintf("https://127.0.0.1:%d", ports[2])

	etcd, err := spawn(dir, etcdName, cfg.etcdBin, []string{
		"--name=default", "--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		"--unsafe-no-fsync", "--log-level=warn",
	})
	if err != nil {
		return err
	}

	pkiDir := filepath.Join(dir, "pki")
	p, err := makePKI(pkiDir)
	if err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	token, err := newToken()
	if err != nil {
		return err
	}
	tokenFile := filepath.Join(dir, "token")
	tokenAuthFile := filepath.Join(dir, "token-auth.csv")
	if err := writeFileAtomic(tokenFile, []byte(token), 0o600); err != nil {
		return err
	}
	if err := writeFileAtomic(tokenAuthFile, []byte(tokenAuthLine(token)), 0o600); err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, apiURL, p, token); err != nil {
		return err
	}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return err
	}
	auditLog := filepath.Join(dir, "audit.log")
	spec := apiserverSpec{Bin: cfg.apiserverBin, URL: apiURL, Args: []string{
		"--etcd-servers=" + etcdURL,
		"--secure-port=" + strconv.Itoa(ports[2]),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// kube-apiserver 1.37 refuses a loopback advertise address with the default (lease)
		// endpoint reconciler ("may not be in the loopback range"); nothing here reads the
		// kubernetes Service's endpoints, so none are kept (every version takes the flag).
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + pkiDir,
		"--tls-cert-file=" + filepath.Join(pkiDir, "apiserver.crt"),
		"--tls-private-key-file=" + filepath.Join(pkiDir, "apiserver.key"),
		"--client-ca-file=" + filepath.Join(pkiDir, "ca.crt"),
		"--token-auth-file=" + tokenAuthFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + filepath.Join(pkiDir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(pkiDir, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + auditLog,
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		// The aggregation layer, as kubeadm sets it up, for Kueue's visibility API (an
		// APIService served by Kueue's manager). Routing to the service's EndpointSlice,
		// not its ClusterIP: no kube-proxy runs here.
		"--requestheader-client-ca-file=" + filepath.Join(pkiDir, "front-proxy-ca.crt"),
		"--requestheader-allowed-names=" + frontProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + filepath.Join(pkiDir, "front-proxy-client.crt"),
		"--proxy-client-key-file=" + filepath.Join(pkiDir, "front-proxy-client.key"),
		"--enable-aggregator-routing=true",
	}}
	if cfg.noWatchCache {
		spec.Args = append(spec.Args, "--watch-cache=false")
	}
	specJSON, _ := json.MarshalIndent(spec, "", "  ")
	if err := writeFileAtomic(filepath.Join(dir, apiserverName+".json"), specJSON, 0o600); err != nil {
		return err
	}
	api, err := spawn(dir, apiserverName, spec.Bin, spec.Args)
	if err != nil {
		return err
	}
	phase("etcd and kube-apiserver started, certificates written")
	if err := waitReady(pkiDir, apiURL, 90*time.Second, etcd, api); err != nil {
		return err
	}
	phase("/readyz is ok")

	// RBAC and CRDs are independent: apply them side by side.
	var wg sync.WaitGroup
	var rbacErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		rbacErr = installRBAC(dir, cfg.moduleDir, kubeconfig)
		phase("RBAC applied")
	}()
	crd := <-crdc
	switch {
	case crd.err != nil || cfg.kueue == "none":
	case cfg.kueueManagerBin != "":
		// Every CRD of the version, converted through the manager's webhook where the
		// version converts; then the manager itself, ready.
		crd.err = setUpKueueManager(cfg, p, crd.kueueDir, kubeconfig)
		phase("Kueue CRDs Established, Kueue's manager ready")
	default:
		crd.err = installKueueCRDs(kubeconfig, crd.files)
		phase("Kueue CRDs Established")
	}
	wg.Wait()
	if err := errors.Join(crd.err, rbacErr); err != nil {
		return err
	}

	env := fmt.Sprintf("KUBECONFIG=%s\nDISPATCH_TEST_AUDIT_LOG=%s\nDISPATCH_TEST_STATE_DIR=%s\nAPISERVER_URL=%s\nDISPATCH_TEST_TOKEN_FILE=%s\n",
		kubeconfig, auditLog, dir, apiURL, tokenFile)
	return writeFileAtomic(filepath.Join(dir, "env"), []byte(env), 0o600)
}

// tokenUser is the static-token user (kube-apiserver --token-auth-file). Its group mirrors
// the viewer certificate's O=viewer; its rights come from being bound wherever viewer is
// (rbac.go).
const tokenUser, tokenUserGroup = "token-user", "viewer"

// newToken is a fresh random bearer token (hex, 32 bytes of entropy).
func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// tokenAuthLine is the token file's line: token,user,uid,"group1,group2".
func tokenAuthLine(token string) string {
	return fmt.Sprintf("%s,%s,%s,\"%s\"\n", token, tokenUser, tokenUser, tokenUserGroup)
}

// waitReady polls GET /readyz until the body is exactly "ok" (the not-ready body lists
// every check and contains "ok" too). Fails at once if a watched process exits.
func waitReady(pkiDir, url string, timeout time.Duration, watch ...*proc) error {
	client, err := adminClient(pkiDir)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	last := "no answer yet"
	for {
		for _, p := range watch {
			select {
			case <-p.done:
				return fmt.Errorf("%s exited during startup", p.name)
			default:
			}
		}
		resp, err := client.Get(url + "/readyz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && string(body) == "ok" {
				return nil
			}
			last = fmt.Sprintf("HTTP %d", resp.StatusCode)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready after %s (last /readyz: %s)", timeout, last)
		}
		select {
		case <-shutdownCtx.Done():
			return errors.New("interrupted")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func readEnvFile(dir string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "env"))
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env, nil
}

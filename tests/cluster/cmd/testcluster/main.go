// Command testcluster runs a throwaway Kubernetes control plane (etcd + kube-apiserver on
// loopback, client-certificate users and a static-token user, RBAC, audit log, Kueue CRDs) for kubectl-dispatch's
// tests. Use it through tests/cluster/run or tests/cluster/testcluster, which build and
// pass the kube-apiserver and etcd binaries (TESTCLUSTER_* variables).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

const usage = `usage:
  testcluster run [--apiserver-version V] [--kueue VERSION] [--kueue-manager [--kueue-leader-elect] [--kueue-v1beta2-only]
      [--kueue-feature-gates GATES]] [--] CMD [ARGS...]
      start a cluster in a temporary folder, run CMD with KUBECONFIG, DISPATCH_TEST_AUDIT_LOG,
      DISPATCH_TEST_STATE_DIR, APISERVER_URL and DISPATCH_TEST_TOKEN_FILE set, tear down,
      exit with CMD's status
      (125 if the cluster failed to start; 130/143 on SIGINT/SIGTERM).
  testcluster start --state-dir DIR [--apiserver-version V] [--kueue VERSION] [--kueue-manager [--kueue-leader-elect] [--kueue-v1beta2-only]
      [--kueue-feature-gates GATES]] [--owner-pid PID] [--no-watch-cache]
      start a cluster living in DIR (new or empty), write DIR/env, return once ready. The
      processes outlive this command; with --owner-pid the cluster is torn down and DIR
      removed within about a second after PID exits. --no-watch-cache: kube-apiserver serves
      every list and watch from etcd, not from its watch cache (--watch-cache=false), so a
      watch resumed at a compacted revision, or a list's continue token from before a
      compaction, gets etcd's 410.
  testcluster stop --state-dir DIR              tear down and remove DIR (idempotent)
  testcluster kill-apiserver --state-dir DIR    SIGKILL kube-apiserver and wait for it
  testcluster start-apiserver --state-dir DIR   start kube-apiserver again, wait until ready
  testcluster compact --state-dir DIR           write a key to etcd twice (the revision moves on),
      then compact etcd at that revision: every resourceVersion handed out before is gone (a
      watch from one, or a list's continue token, answers 410 Gone); prints the revision
  testcluster stop-kueue-manager --state-dir DIR    stop Kueue's manager (SIGTERM) and wait for it
  testcluster kill-kueue-manager --state-dir DIR    SIGKILL Kueue's manager and wait for it (its Lease,
      with --kueue-leader-elect, stays as last renewed and goes stale)
  testcluster start-kueue-manager --state-dir DIR   start it again, wait until ready
  testcluster build-kueue-manager VERSION...    build Kueue's manager for each VERSION into the cache
  testcluster build-apiserver VERSION...        build kube-apiserver VERSION into the cache
  testcluster proxy --kind http|socks5 --log FILE [--user U --password P] [--listen 127.0.0.1:0]
      a real forward proxy on loopback (HTTP CONNECT: goproxy; SOCKS5: go-socks5), optionally
      requiring credentials; prints "listening on 127.0.0.1:PORT", appends one line per
      connection to FILE ("CONNECT 127.0.0.1:6443", "SOCKS5 127.0.0.1:6443", "DENIED ...");
      ends on SIGTERM/SIGINT or when its stdin closes. Its own binary (Go module
      tests/cluster/proxy), run by tests/cluster/testcluster; "proxy --help" for details.
--apiserver-version runs kube-apiserver V instead of the default (the k8s.io/kubernetes that
tests/cluster/go.mod pins): built from the Go module tests/cluster/apiserver/V into the cache as
kube-apiserver-V (5 to 10 minutes cold on 2 cores); etcd stays the default's.
VERSION is a Kueue version pinned in tests/cluster/kueue.sums (default v0.17.0), or none.
--kueue-manager also runs Kueue's own controller manager (sigs.k8s.io/kueue/cmd/kueue of that
version, built from the Go module tests/cluster/kueue/VERSION into the cache as
kueue-manager-VERSION; about 6 minutes cold): every CRD of the version, its webhooks
(mutating, validating, CRD conversion) served on loopback and registered with the apiserver,
integration batch/job; its log is DIR/kueue-manager.log. Where the version lets its address
and port be chosen (v0.17), it also serves Kueue's visibility API (visibility.kueue.x-k8s.io)
through the apiserver's aggregation layer, on this machine's first non-loopback address. It
runs in a private mount namespace (needs root). --kueue-leader-elect runs it with leader election
on (its Lease kueue-system/c1f6bfd2.kueue.x-k8s.io; off otherwise). --kueue-v1beta2-only installs
Kueue's CRDs with v1beta1 not served (served: false) and registers only the v1beta2 visibility
APIService, as Kueue v0.20 does; it needs a version that stores v1beta2 (v0.17 and later).
--kueue-feature-gates passes more of Kueue's feature gates to its manager (e.g.
UnadmittedWorkloadsObservability=true, Beta and off in v0.19).
`

func main() { os.Exit(realMain(os.Args[1:])) }

func fail(format string, a ...any) int {
	fmt.Fprintf(os.Stderr, "testcluster: "+format+"\n", a...)
	return 1
}

func realMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	if args[0] == "proxy" {
		// The wrapper script runs the proxy's own binary; this one does not contain it.
		return fail("proxy: run it as tests/cluster/testcluster proxy ... (it is built from the Go module tests/cluster/proxy)")
	}
	fs := flag.NewFlagSet("testcluster "+args[0], flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	stateDir := fs.String("state-dir", "", "state folder")
	kueue := fs.String("kueue", defaultKueue, "Kueue version for the CRDs, or none")
	manager := fs.Bool("kueue-manager", false, "also run Kueue's own controller manager")
	owner := fs.Int("owner-pid", 0, "tear down when this process exits")
	noCache := fs.Bool("no-watch-cache", false, "serve lists and watches from etcd, not the watch cache")
	leaderElect := fs.Bool("kueue-leader-elect", false, "run Kueue's manager with leader election on")
	v1beta2Only := fs.Bool("kueue-v1beta2-only", false, "serve Kueue's CRDs at v1beta2 alone")
	featureGates := fs.String("kueue-feature-gates", "", "more feature gates for Kueue's manager (A=true,B=false)")
	apiVersion := fs.String("apiserver-version", "", "kube-apiserver version (default: the one go.mod pins)")
	ownerStart := fs.String("owner-start", "", "(internal)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	var dir string
	if *stateDir != "" {
		abs, err := filepath.Abs(*stateDir)
		if err != nil {
			return fail("%v", err)
		}
		dir = abs
	} else if args[0] != "run" && args[0] != "build-kueue-manager" && args[0] != "build-apiserver" && args[0] != "help" && args[0] != "-h" && args[0] != "--help" {
		fmt.Fprintf(os.Stderr, "testcluster %s: --state-dir is required\n%s", args[0], usage)
		return 2
	}
	switch args[0] {
	case "run":
		if len(fs.Args()) == 0 {
			fmt.Fprintf(os.Stderr, "testcluster run: no command given\n%s", usage)
			return 2
		}
		return cmdRun(kueueOptions{*kueue, *manager, *leaderElect, *v1beta2Only, *featureGates}, *apiVersion, fs.Args())
	case "start":
		return cmdStart(dir, kueueOptions{*kueue, *manager, *leaderElect, *v1beta2Only, *featureGates}, *apiVersion, *owner, *noCache)
	case "stop":
		if err := teardown(dir); err != nil {
			return fail("%v", err)
		}
		return 0
	case "kill-apiserver":
		return cmdKillAPIServer(dir)
	case "start-apiserver":
		return cmdStartAPIServer(dir)
	case "compact":
		return cmdCompact(dir)
	case "stop-kueue-manager":
		return cmdStopKueueManager(dir)
	case "kill-kueue-manager":
		return cmdKillKueueManager(dir)
	case "start-kueue-manager":
		return cmdStartKueueManager(dir)
	case "build-kueue-manager":
		return cmdBuildKueueManager(fs.Args())
	case "build-apiserver":
		return cmdBuildAPIServer(fs.Args())
	case "_kueue-exec":
		return kueueExec(dir, fs.Args())
	case "_reap":
		return reap(dir, *owner, *ownerStart)
	case "help", "-h", "--help":
		fmt.Print(usage)
		return 0
	}
	fmt.Fprintf(os.Stderr, "testcluster: unknown subcommand %q\n%s", args[0], usage)
	return 2
}

func notifySignals() chan os.Signal {
	sigc := make(chan os.Signal, 4)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	return sigc
}

// interrupted tears down after SIGINT/SIGTERM and returns 130/143.
func interrupted(dir string, sig os.Signal) int {
	if err := teardown(dir); err != nil {
		fmt.Fprintln(os.Stderr, "testcluster:", err)
	}
	fmt.Fprintf(os.Stderr, "testcluster: %v: cluster torn down\n", sig)
	if sig == syscall.SIGINT {
		return 130
	}
	return 143
}

// bringUp starts the cluster in cfg.dir (prepared), tearing it down again on failure
// (exit failCode) or on SIGINT/SIGTERM (130/143). owner > 0 starts the reaper first.
func bringUp(cfg config, owner int, sigc chan os.Signal, failCode int) int {
	t0 := time.Now()
	errc := make(chan error, 1)
	go func() { errc <- startOnFreePorts(cfg, owner) }()
	select {
	case sig := <-sigc:
		return interrupted(cfg.dir, sig)
	case err := <-errc:
		if err != nil {
			msg := fmt.Sprintf("testcluster: the cluster failed to start: %v\n%s%s%s", err,
				logTail(cfg.dir, apiserverName, 12), logTail(cfg.dir, etcdName, 8), logTail(cfg.dir, kueueManagerName, 20))
			if terr := teardown(cfg.dir); terr != nil {
				msg += "testcluster: " + terr.Error() + "\n"
			}
			fmt.Fprint(os.Stderr, msg)
			return failCode
		}
	}
	manager := ""
	if cfg.kueueManagerBin != "" {
		manager = " with its manager"
	}
	fmt.Fprintf(os.Stderr, "testcluster: ready in %.1fs (kueue %s%s, state %s)\n", time.Since(t0).Seconds(), cfg.kueue, manager, cfg.dir)
	return 0
}

// startOnFreePorts starts the reaper (owner > 0) and the cluster, and starts both again from
// an empty folder, on newly chosen ports, when a server of the cluster found its port taken:
// freePorts sees a port free, and the server binds it a moment later, when a cluster starting
// beside this one (the test suite starts several at once) may have taken it. Two more tries.
func startOnFreePorts(cfg config, owner int) error {
	for attempt := 1; ; attempt++ {
		err := startReaperAndCluster(cfg, owner)
		if err == nil || attempt == 3 || !portTaken(cfg.dir) {
			return err
		}
		fmt.Fprintf(os.Stderr, "testcluster: a port was taken between its choice and its bind (%v); starting again on other ports\n", err)
		if err := stopAndRemove(cfg.dir); err != nil {
			return err
		}
		if err := prepareDir(cfg.dir); err != nil {
			return err
		}
	}
}

func startReaperAndCluster(cfg config, owner int) error {
	if owner > 0 {
		if err := spawnReaper(cfg.dir, owner); err != nil {
			return err
		}
	}
	return startCluster(cfg)
}

// portTaken tells whether a server of the cluster in DIR logged that its address was in use.
func portTaken(dir string) bool {
	for _, name := range []string{etcdName, apiserverName, kueueManagerName} {
		if b, err := os.ReadFile(filepath.Join(dir, name+".log")); err == nil && bytes.Contains(b, []byte("address already in use")) {
			return true
		}
	}
	return false
}

// kueueOptions are the Kueue flags of start and run.
type kueueOptions struct {
	version      string
	manager      bool
	leaderElect  bool
	v1beta2Only  bool
	featureGates string
}

// withKueueManager fills in cfg.kueueManagerBin when --kueue-manager is given, building the
// manager first if the cache does not have it (before anything starts).
func withKueueManager(cfg *config, o kueueOptions) error {
	if !o.manager {
		if o.leaderElect || o.v1beta2Only || o.featureGates != "" {
			return errors.New("--kueue-leader-elect, --kueue-v1beta2-only and --kueue-feature-gates need --kueue-manager")
		}
		return nil
	}
	if cfg.kueue == "none" {
		return errors.New("--kueue-manager needs a Kueue version (--kueue VERSION), not none")
	}
	cfg.kueueLeaderElect, cfg.kueueV1beta2Only, cfg.kueueFeatureGates = o.leaderElect, o.v1beta2Only, o.featureGates
	bin, err := kueueManagerBinary(cfg.moduleDir, cfg.kueue)
	cfg.kueueManagerBin = bin
	return err
}

func cmdBuildKueueManager(versions []string) int {
	moduleDir := os.Getenv("TESTCLUSTER_MODULE_DIR")
	if len(versions) == 0 || moduleDir == "" {
		return fail("build-kueue-manager VERSION... (through tests/cluster/testcluster)")
	}
	// One Go build cache for all the versions built here (see kueueManagerBinary), unless the
	// caller gives one: scripts/test gives its background and its tests the same one, so a
	// test that builds a manager the background has not reached yet shares it too.
	if os.Getenv("TESTCLUSTER_KUEUE_GOCACHE") == "" {
		gocache, err := os.MkdirTemp("", "kueue-manager-gocache-")
		if err != nil {
			return fail("%v", err)
		}
		defer os.RemoveAll(gocache)
		os.Setenv("TESTCLUSTER_KUEUE_GOCACHE", gocache)
	}
	for _, v := range versions {
		if err := checkKueueVersion(moduleDir, v); err != nil {
			return fail("%v", err)
		}
		bin, err := kueueManagerBinary(moduleDir, v)
		if err != nil {
			return fail("%v", err)
		}
		fmt.Println(bin)
	}
	return 0
}

func cmdStart(dir string, o kueueOptions, apiVersion string, owner int, noCache bool) int {
	cfg, err := configFromEnv(dir, o.version)
	cfg.noWatchCache = noCache
	if err == nil {
		cfg.apiserverBin, err = apiserverBinary(cfg.moduleDir, apiVersion)
	}
	if err == nil {
		err = withKueueManager(&cfg, o)
	}
	if err != nil {
		return fail("%v", err)
	}
	sigc := notifySignals()
	if err := prepareDir(dir); err != nil {
		return fail("%v", err)
	}
	return bringUp(cfg, owner, sigc, 1)
}

func cmdRun(o kueueOptions, apiVersion string, argv []string) int {
	sigc := notifySignals()
	dir, err := os.MkdirTemp("", "testcluster-")
	if err != nil {
		return fail("%v", err)
	}
	cfg, err := configFromEnv(dir, o.version)
	if err == nil {
		cfg.apiserverBin, err = apiserverBinary(cfg.moduleDir, apiVersion)
	}
	if err == nil {
		err = withKueueManager(&cfg, o)
	}
	if err == nil {
		err = prepareDir(dir)
	}
	if err != nil {
		os.Remove(dir)
		return fail("%v", err)
	}
	// The reaper owns the cluster on our behalf: even a SIGKILL of run leaves nothing.
	if code := bringUp(cfg, os.Getpid(), sigc, 125); code != 0 {
		return code
	}
	env, err := readEnvFile(dir)
	if err != nil {
		_ = teardown(dir)
		return fail("%v", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = os.Environ()
	for _, k := range []string{"KUBECONFIG", "DISPATCH_TEST_AUDIT_LOG", "DISPATCH_TEST_STATE_DIR", "APISERVER_URL", "DISPATCH_TEST_TOKEN_FILE"} {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	// Without a terminal, CMD and its children get a process group of their own, so a
	// signal to run ends all of them; with one, CMD stays in the terminal's foreground group
	// (an interactive shell needs it, and Ctrl-C reaches the whole group there anyway).
	ownGroup := !isTerminal(os.Stdin)
	if ownGroup {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	if err := cmd.Start(); err != nil {
		_ = teardown(dir)
		fmt.Fprintln(os.Stderr, "testcluster:", err)
		return 127
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case sig := <-sigc:
		// No forwarding and no waiting: the cluster goes now; CMD gets one SIGTERM so it
		// does not linger against a dead cluster.
		if ownGroup {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		} else {
			_ = cmd.Process.Signal(syscall.SIGTERM)
		}
		return interrupted(dir, sig)
	case <-done:
	}
	code := cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	if err := teardown(dir); err != nil {
		fmt.Fprintln(os.Stderr, "testcluster:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// isTerminal reports whether f is a terminal (a TCGETS ioctl succeeds; /dev/null, also a
// character device, is not one).
func isTerminal(f *os.File) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}

func checkStateDir(dir string) error {
	if !exists(filepath.Join(dir, markerFile)) {
		return fmt.Errorf("%s is not a testcluster state folder", dir)
	}
	if exists(filepath.Join(dir, stoppingFile)) {
		return fmt.Errorf("the cluster in %s is being torn down", dir)
	}
	return nil
}

func cmdKillAPIServer(dir string) int {
	if err := checkStateDir(dir); err != nil {
		return fail("%v", err)
	}
	pid, ok := livePid(dir, apiserverName)
	if !ok {
		fmt.Fprintln(os.Stderr, "testcluster: kube-apiserver is not running")
		return 0
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if left := waitGone([]int{pid}, 10*time.Second); len(left) > 0 {
		return fail("kube-apiserver (pid %d) still running 10s after SIGKILL", pid)
	}
	return 0
}

// waitBindable waits, up to limit, until the host:port of url can be listened on.
func waitBindable(url string, limit time.Duration) {
	addr := strings.TrimPrefix(url, "https://")
	deadline := time.Now().Add(limit)
	for {
		l, err := net.Listen("tcp", addr)
		if err == nil {
			l.Close()
			return
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func cmdStartAPIServer(dir string) int {
	if err := checkStateDir(dir); err != nil {
		return fail("%v", err)
	}
	if pid, ok := livePid(dir, apiserverName); ok {
		return fail("kube-apiserver is already running (pid %d)", pid)
	}
	b, err := os.ReadFile(filepath.Join(dir, apiserverName+".json"))
	if err != nil {
		return fail("%v", err)
	}
	var spec apiserverSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return fail("%s.json: %v", apiserverName, err)
	}
	t0 := time.Now()
	// The killed server's port can stay taken for a moment (its connections closing on a
	// loaded machine): wait until it can be bound, and start again a server that still found
	// it taken.
	for attempt := 1; ; attempt++ {
		waitBindable(spec.URL, 30*time.Second)
		var p *proc
		p, err = spawn(dir, apiserverName, spec.Bin, spec.Args)
		if err == nil {
			err = waitReady(filepath.Join(dir, "pki"), spec.URL, 90*time.Second, p)
			if err != nil {
				tail := logTail(dir, apiserverName, 12)
				stopProcs([]int{p.pid})
				if attempt < 3 && strings.Contains(tail, "address already in use") {
					time.Sleep(time.Second)
					continue
				}
				err = errors.New(err.Error() + "\n" + tail)
			}
		}
		break
	}
	if err != nil {
		return fail("start-apiserver: %v", err)
	}
	fmt.Fprintf(os.Stderr, "testcluster: kube-apiserver ready again in %.1fs\n", time.Since(t0).Seconds())
	return 0
}

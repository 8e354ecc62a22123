package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Processes (etcd, kube-apiserver, Kueue's manager, the reaper) run in their own session (setsid), so they
// survive the process that started them and ignore the terminal's Ctrl-C. Each one's pid is
// kept in DIR/<name>.pid; whoever tears down reads the pids from there. DIR/.lock (flock)
// serialises "start a process and record its pid" against "teardown begins", so a process
// can never be started unrecorded while another process is tearing the cluster down.

const (
	markerFile   = ".testcluster" // written first: proves DIR is ours before stop removes it
	stoppingFile = ".stopping"    // teardown has begun: start nothing more
	lockFile     = ".lock"
)

// Names of the processes (and of their DIR/<name>.pid and DIR/<name>.log files).
const (
	etcdName      = "etcd"
	apiserverName = "kube-apiserver"
	reaperName    = "reaper"
	// kueueManagerName = "kueue-manager" (manager.go), with --kueue-manager
)

// shutdownCtx is cancelled when this process begins a teardown; helper commands
// (kubectl, go) run under it so they do not outlive the cluster.
var shutdownCtx, cancelShutdown = context.WithCancel(context.Background())

type proc struct {
	name string
	pid  int
	done chan struct{} // closed once the child has exited (we are its parent and reap it)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func withLock(dir string, fn func() error) error {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	return fn()
}

// spawn starts bin detached (new session, stdin /dev/null, stdout+stderr appended to
// DIR/<name>.log) and records its pid in DIR/<name>.pid.
func spawn(dir, name, bin string, args []string) (*proc, error) {
	return spawnWith(dir, name, bin, args, noProxy, &syscall.SysProcAttr{Setsid: true})
}

// noProxy empties the proxy variables for the cluster's own servers: kube-apiserver's
// aggregation layer dials Kueue's visibility server on a non-loopback address, which Go's
// http.ProxyFromEnvironment would send through a proxy set on the machine (loopback never is).
var noProxy = []string{"HTTPS_PROXY=", "https_proxy=", "HTTP_PROXY=", "http_proxy=", "NO_PROXY=", "no_proxy="}

// clusterGOGC is the Go garbage collector's target (GOGC) the cluster's own servers run with,
// unless the caller's environment sets GOGC: they collect a quarter as often as at Go's default
// of 100, for a larger heap. The test clusters are CPU-bound on a 2-core machine, and with it a
// cluster's start took 16% less CPU (kube-apiserver's collector was about a fifth of its start)
// and tests/e2e_watch.rs 18% less (51 against 42 CPU-s), for kube-apiserver's resident memory at
// about 0.6 GB against 0.4; 800 gained nothing more. It changes no answer a server gives. The
// harness's Go builds (the older kube-apiservers, Kueue's managers) run the compiler with it
// too: client-go from an empty build cache took 241 CPU-s against 286 at 100, the compiler's
// peak memory about 0.5 GB (k8s.io/api/core/v1). lib.sh and tools/ensure do the same.
const clusterGOGC = "400"

// gcEnv is GOGC=clusterGOGC, or nothing when the caller's environment sets GOGC.
func gcEnv() []string {
	if _, set := os.LookupEnv("GOGC"); set {
		return nil
	}
	return []string{"GOGC=" + clusterGOGC}
}

// spawnWith is spawn with extra environment variables and the process attributes given.
func spawnWith(dir, name, bin string, args, env []string, attr *syscall.SysProcAttr) (*proc, error) {
	logf, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(append(os.Environ(), gcEnv()...), env...)
	cmd.SysProcAttr = attr
	err = withLock(dir, func() error {
		if exists(filepath.Join(dir, stoppingFile)) {
			return errors.New("the cluster is being torn down")
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		if err := writeFileAtomic(filepath.Join(dir, name+".pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o600); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p, nil
}

func readPid(dir, name string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, name+".pid"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil && pid > 0
}

// procStat returns the fields of /proc/PID/stat after the command name (field 3 onward).
func procStat(pid int) ([]string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return nil, false
	}
	return strings.Fields(string(b[i+2:])), true
}

// alive: kill(pid, 0) succeeds and the process is not a zombie (a zombie is gone for our
// purposes; its parent may be an init that never reaps).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	f, ok := procStat(pid)
	if !ok {
		return false
	}
	return f[0] != "Z" && f[0] != "X"
}

// startTime is field 22 of /proc/PID/stat; with the pid it identifies a process.
func startTime(pid int) string {
	if f, ok := procStat(pid); ok && len(f) > 19 {
		return f[19]
	}
	return ""
}

// ours: the process's command line names DIR, so a recycled pid is never signalled.
func ours(pid int, dir string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	for _, arg := range strings.Split(string(b), "\x00") {
		if arg == dir || strings.Contains(arg, dir+"/") {
			return true
		}
	}
	return false
}

// livePid returns the pid recorded for name if that process is still running.
func livePid(dir, name string) (int, bool) {
	pid, ok := readPid(dir, name)
	if !ok || pid == os.Getpid() || !alive(pid) || !ours(pid, dir) {
		return 0, false
	}
	return pid, true
}

func waitGone(pids []int, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		var left []int
		for _, pid := range pids {
			if alive(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stopProcs: SIGTERM, short wait, a second SIGTERM (kube-apiserver and etcd keep running
// for seconds after the first), then SIGKILL; returns the pids still alive at the end.
func stopProcs(pids []int) []int {
	steps := []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGTERM, 300 * time.Millisecond}, {syscall.SIGTERM, 2 * time.Second}, {syscall.SIGKILL, 10 * time.Second}}
	for _, s := range steps {
		for _, pid := range pids {
			_ = syscall.Kill(pid, s.sig)
		}
		if pids = waitGone(pids, s.wait); len(pids) == 0 {
			return nil
		}
	}
	return pids
}

// teardown stops every process recorded in DIR and removes DIR. Idempotent; refuses a
// folder that testcluster did not create.
func teardown(dir string) error {
	cancelShutdown()
	return stopAndRemove(dir)
}

// stopAndRemove is teardown without cancelling this process's helper commands: it stops
// every process recorded in DIR and removes DIR, so that a start can be tried again there.
func stopAndRemove(dir string) error {
	if !exists(dir) {
		return nil
	}
	if !exists(filepath.Join(dir, markerFile)) {
		return fmt.Errorf("%s is not a testcluster state folder (no %s); leaving it alone", dir, markerFile)
	}
	var pids []int
	err := withLock(dir, func() error {
		if err := os.WriteFile(filepath.Join(dir, stoppingFile), nil, 0o600); err != nil {
			return err
		}
		for _, name := range []string{reaperName, kueueManagerName, apiserverName, etcdName} {
			if pid, ok := livePid(dir, name); ok {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	if err != nil && exists(dir) {
		return fmt.Errorf("teardown %s: %w", dir, err)
	}
	if left := stopProcs(pids); len(left) > 0 {
		return fmt.Errorf("teardown %s: processes %v did not exit after SIGKILL; folder kept", dir, left)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("teardown: remove %s: %w", dir, err)
	}
	return nil
}

// logTail returns the last n lines of DIR/<name>.log, indented, for error messages.
func logTail(dir, name string, n int) string {
	b, err := os.ReadFile(filepath.Join(dir, name+".log"))
	if err != nil {
		return ""
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return fmt.Sprintf("  (no output in %s.log)\n", name)
	}
	return fmt.Sprintf("  last lines of %s.log:\n    %s\n", name, strings.Join(lastLines(b, n), "\n    "))
}

// lastLines is the last n lines of a log or a command's output.
func lastLines(out []byte, n int) []string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

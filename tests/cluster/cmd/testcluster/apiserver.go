package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// The default cluster's kube-apiserver is the one tests/cluster/go.mod pins, built by
// lib.sh and passed as TESTCLUSTER_KUBE_APISERVER. Every other version the plugin is tested
// on (start --apiserver-version VERSION) has a Go module of its own, apiserver/VERSION, since
// one go.mod pins one k8s.io/kubernetes, and is built into the cache as
// kube-apiserver-VERSION-noopt-HASH (modulebin.go; lib.sh builds the default one, optimized, as
// kube-apiserver-VERSION).

var apiserverVersionRE = regexp.MustCompile(`^v1\.[0-9]+\.[0-9]+$`)

// The builds only a few tests run, the older kube-apiservers and Kueue's managers, are built
// without the compiler's optimizations and inlining (the standard library excepted, which is
// compiled once and shared), and without a symbol table: a cold build takes about a third less
// time (k8s.io/kubernetes/pkg/controlplane/apiserver from an empty cache: 165 s against 241 s),
// for binaries that start and answer a few tests more slowly. Their cache names carry
// unoptimizedSuffix, so an optimized build cached before this choice is not taken for one.
const unoptimizedSuffix = "-noopt"

// unoptimizedBuild is the go build command line of such a build: ldflags (-s -w added), out, pkg.
func unoptimizedBuild(ldflags, out, pkg string) []string {
	return []string{"build", "-trimpath", "-buildvcs=false", "-mod=readonly",
		"-gcflags=all=-N -l -dwarf=false", "-gcflags=std=-dwarf=false", "-ldflags", "-s -w " + ldflags, "-o", out, pkg}
}

// defaultAPIServerVersion is the version in TESTCLUSTER_KUBE_APISERVER's name.
func defaultAPIServerVersion() string {
	return strings.TrimPrefix(filepath.Base(os.Getenv("TESTCLUSTER_KUBE_APISERVER")), "kube-apiserver-")
}

// apiserverBinary returns the cached kube-apiserver of version, building it first if needed
// (one build at a time on the machine; the others wait, then find it built).
func apiserverBinary(moduleDir, version string) (string, error) {
	if version == "" || version == defaultAPIServerVersion() {
		return os.Getenv("TESTCLUSTER_KUBE_APISERVER"), nil
	}
	if !apiserverVersionRE.MatchString(version) {
		return "", fmt.Errorf("--apiserver-version %q: want a version such as v1.34.4", version)
	}
	cache := os.Getenv("TESTCLUSTER_CACHE_DIR")
	if cache == "" {
		return "", errors.New("TESTCLUSTER_CACHE_DIR is not set (run testcluster through tests/cluster/run or tests/cluster/testcluster)")
	}
	modDir := filepath.Join(moduleDir, "apiserver", version)
	gomod, err := os.ReadFile(filepath.Join(modDir, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("no Go module to build kube-apiserver %s from: %v (each version but the default, %s, has its own: tests/cluster/apiserver/VERSION)",
			version, err, defaultAPIServerVersion())
	}
	bin, err := moduleBinary(cache, "kube-apiserver-"+version, modDir)
	if err != nil {
		return "", err
	}
	if exists(bin) {
		return bin, nil
	}
	if !regexp.MustCompile(`(?m)^\s*(require\s+)?k8s\.io/kubernetes\s+` + regexp.QuoteMeta(version) + `(\s|$)`).Match(gomod) {
		return "", fmt.Errorf("%s/go.mod does not require k8s.io/kubernetes %s", modDir, version)
	}
	return bin, buildLocked(cache, ".build-apiserver.lock", bin, func(tmp string) error {
		return buildAPIServer(modDir, version, tmp)
	})
}

// buildLocked runs build(tmp) under the cache's lock file unless bin exists, then moves tmp
// to bin and removes the cache's other builds of bin's name (modulebin.go).
func buildLocked(cache, lockName, bin string, build func(tmp string) error) error {
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(cache, lockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	if exists(bin) {
		return nil
	}
	tmp := fmt.Sprintf("%s.tmp.%d", bin, os.Getpid())
	if err := build(tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, bin); err != nil {
		return err
	}
	removeOtherBuilds(bin)
	return nil
}

// buildAPIServer builds k8s.io/kubernetes/cmd/kube-apiserver in modDir into out, stamped
// with version as a release build is (/version needs a parseable gitVersion).
func buildAPIServer(modDir, version, out string) error {
	fmt.Fprintf(os.Stderr, "testcluster: building kube-apiserver %s (k8s.io/kubernetes/cmd/kube-apiserver; a cold build takes 5 to 10 minutes on 2 cores)...\n", version)
	t0 := time.Now()
	minor := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)[1]
	const v = "k8s.io/component-base/version"
	cmd := exec.CommandContext(shutdownCtx, goBinary(), unoptimizedBuild(
		"-X "+v+".gitVersion="+version+" -X "+v+".gitMajor=1 -X "+v+".gitMinor="+minor+" -X "+v+".gitTreeState=clean",
		out, "k8s.io/kubernetes/cmd/kube-apiserver")...)
	cmd.Dir = modDir
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS="), gcEnv()...)
	// Kueue's managers of the same Kubernetes minor compile the same packages, pinned alike
	// (this module's go.mod and kueue/VERSION/go.mod; tests/kueue_modules.rs), with the same
	// flags: given their Go build cache, the second of the two builds finds them compiled.
	if gocache := os.Getenv("TESTCLUSTER_KUEUE_GOCACHE"); gocache != "" {
		cmd.Env = append(cmd.Env, "GOCACHE="+gocache)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cannot build kube-apiserver: go build k8s.io/kubernetes/cmd/kube-apiserver in the module tests/cluster/apiserver/%s failed: %v\n  %s",
			version, err, strings.Join(lastLines(b, 15), "\n  "))
	}
	fmt.Fprintf(os.Stderr, "testcluster: built kube-apiserver %s in %.0fs\n", version, time.Since(t0).Seconds())
	return nil
}

func cmdBuildAPIServer(versions []string) int {
	moduleDir := os.Getenv("TESTCLUSTER_MODULE_DIR")
	if len(versions) == 0 || moduleDir == "" {
		return fail("build-apiserver VERSION... (through tests/cluster/testcluster)")
	}
	for _, v := range versions {
		bin, err := apiserverBinary(moduleDir, v)
		if err != nil {
			return fail("%v", err)
		}
		fmt.Println(bin)
	}
	return 0
}

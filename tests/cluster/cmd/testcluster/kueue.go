package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

const defaultKueue = "v0.17.0"

// kueueCRDs are the four CRDs the plugin reads (from config/components/crd/bases, used
// straight from the Go module cache, never copied).
var kueueCRDs = []string{"admissionchecks", "clusterqueues", "localqueues", "workloads"}

// loadKueueSums reads MODULE/kueue.sums: "VERSION h1:SUM" lines, # comments.
func loadKueueSums(moduleDir string) (map[string]string, error) {
	path := filepath.Join(moduleDir, "kueue.sums")
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 || !strings.HasPrefix(fields[1], "h1:") {
			return nil, fmt.Errorf("%s: bad line %q (want: VERSION h1:SUM)", path, line)
		}
		sums[fields[0]] = fields[1]
	}
	return sums, sc.Err()
}

// checkKueueVersion fails fast, before anything starts, on a version not in kueue.sums.
func checkKueueVersion(moduleDir, version string) error {
	if version == "none" {
		return nil
	}
	sums, err := loadKueueSums(moduleDir)
	if err != nil {
		return err
	}
	if _, ok := sums[version]; !ok {
		var known []string
		for v := range sums {
			known = append(known, v)
		}
		sort.Strings(known)
		return fmt.Errorf("kueue version %q is not pinned in %s/kueue.sums (known: %s, or none)",
			version, moduleDir, strings.Join(known, ", "))
	}
	return nil
}

// kueueModule fetches sigs.k8s.io/kueue@version through the Go module cache, checks its h1:
// sum against kueue.sums and returns the module's folder (read only, never copied).
func kueueModule(moduleDir, version string) (string, error) {
	sums, err := loadKueueSums(moduleDir)
	if err != nil {
		return "", err
	}
	want, ok := sums[version]
	if !ok {
		return "", checkKueueVersion(moduleDir, version)
	}
	mod := "sigs.k8s.io/kueue@" + version
	cmd := exec.CommandContext(shutdownCtx, goBinary(), "mod", "download", "-json", mod)
	cmd.Dir = os.TempDir() // outside any module: go.mod/go.sum stay untouched
	cmd.Env = append(os.Environ(), "GO111MODULE=on", "GOWORK=off")
	out, runErr := cmd.Output()
	var info struct{ Dir, Sum, Error string }
	if err := json.Unmarshal(out, &info); err != nil || runErr != nil || info.Error != "" {
		reason := info.Error
		if reason == "" && runErr != nil {
			reason = runErr.Error()
			if ee, ok := runErr.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
				reason = strings.TrimSpace(string(ee.Stderr))
			}
		}
		return "", fmt.Errorf("cannot fetch Go module %s: %s", mod, reason)
	}
	if info.Sum != want {
		return "", fmt.Errorf("Go module %s has sum %s, but kueue.sums pins %s; refusing it", mod, info.Sum, want)
	}
	return info.Dir, nil
}

// goBinary is TESTCLUSTER_GO, else go on PATH, else /usr/local/go/bin/go.
func goBinary() string {
	if g := os.Getenv("TESTCLUSTER_GO"); g != "" {
		return g
	}
	if _, err := exec.LookPath("go"); err == nil {
		return "go"
	}
	return "/usr/local/go/bin/go"
}

// kueueCRDFiles returns the four CRD files the plugin reads, from the Kueue module's folder.
func kueueCRDFiles(kueueDir string) ([]string, error) {
	var files []string
	for _, r := range kueueCRDs {
		f := filepath.Join(kueueDir, "config/components/crd/bases/kueue.x-k8s.io_"+r+".yaml")
		if !exists(f) {
			return nil, fmt.Errorf("%s has no %s", kueueDir, f)
		}
		files = append(files, f)
	}
	return files, nil
}

// crdName is the CRD named by a file kueue.x-k8s.io_PLURAL.yaml (or .json): PLURAL.kueue.x-k8s.io.
func crdName(file string) string {
	base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(file), ".yaml"), ".json")
	group, plural, _ := strings.Cut(base, "_")
	return plural + "." + group
}

// installKueueCRDs applies the CRDs server-side (the workloads CRD is too big for the
// client-side last-applied annotation) and waits until all are Established.
func installKueueCRDs(kubeconfig string, files []string) error {
	args := []string{"apply", "--server-side", "--field-manager=testcluster"}
	var names []string
	for _, f := range files {
		args = append(args, "-f", f)
		names = append(names, "crd/"+crdName(f))
	}
	if err := kubectl(kubeconfig, args...); err != nil {
		return err
	}
	return kubectlWait(kubeconfig, "Established", 60*time.Second, names...)
}

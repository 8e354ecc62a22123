package main

// Kueue's own controller manager, sigs.k8s.io/kueue/cmd/kueue of the pinned version, run
// against the test cluster (start/run --kueue-manager):
//
//   - built once per version from its own Go module, tests/cluster/kueue/VERSION (so Kueue's
//     dependencies never move a version the kube-apiserver build uses), into the cache as
//     kueue-manager-VERSION-noopt-HASH (unoptimized, as apiserver.go says why; HASH of the
//     module's go.mod and go.sum, modulebin.go);
//   - every CRD of that version's config/components/crd/bases applied, those the version's
//     kustomization converts through Kueue's webhook with spec.conversion pointing at it;
//   - its mutating and validating webhooks (config/components/webhook/manifests.yaml)
//     registered with the apiserver by URL, https://127.0.0.1:PORT/..., with a serving
//     certificate from the cluster's CA;
//   - run with internal certificate management and leader election off (on with
//     --kueue-leader-elect: the Lease kueue-system/c1f6bfd2.kueue.x-k8s.io), integration
//     batch/job, metrics off;
//   - with --kueue-v1beta2-only, every CRD that serves v1beta2 rendered with v1beta1 not
//     served (served: false), as Kueue v0.20 ships them;
//   - its visibility API served through the aggregation layer where the version lets the
//     harness choose the server's address and port (visibility.go), VisibilityOnDemand off
//     otherwise.
//
// With internal certificate management off, cmd/kueue reads /etc/kueue/metrics/certs/tls.{crt,key}
// even when metrics are off. The manager therefore runs in a private mount namespace
// (`_kueue-exec`): an overlay on /etc whose upper layer is a tmpfs holds those two files, so
// nothing is written to the machine's /etc and the mount ends with the process. That needs
// root (CAP_SYS_ADMIN), as the tests have here and in CI; without root, a user namespace of
// the manager's own (where the kernel allows unprivileged ones).
//
// DIR/kueue/ holds config.yaml, certs/, visibility/ (the visibility server's certificate), the
// rendered CRDs, webhook configurations and visibility.json (APIServices, Service, EndpointSlice);
// DIR/kueue-manager.log is the manager's log, DIR/kueue-manager.json what restarts it.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"
)

const kueueManagerName = "kueue-manager"

// selfExe runs the harness binary that is running, by its inode: a harness build of other
// sources (another checkout sharing the cache) removes older testcluster-* files.
const selfExe = "/proc/self/exe"

// kueueManagerSpec is saved as DIR/kueue-manager.json, for start-kueue-manager.
type kueueManagerSpec struct {
	Bin      string   `json:"bin"`
	Args     []string `json:"args"`
	Env      []string `json:"env"`
	ReadyURL string   `json:"readyURL"`
	Version  string   `json:"version"`
}

// kueueManagerBinary returns the cached manager for version, building it first if needed
// (one build at a time on the machine; the others wait, then find it built).
func kueueManagerBinary(moduleDir, version string) (string, error) {
	cache := os.Getenv("TESTCLUSTER_CACHE_DIR")
	if cache == "" {
		return "", errors.New("TESTCLUSTER_CACHE_DIR is not set (run testcluster through tests/cluster/run or tests/cluster/testcluster)")
	}
	modDir := filepath.Join(moduleDir, "kueue", version)
	gomod, err := os.ReadFile(filepath.Join(modDir, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("no Go module to build Kueue's manager %s from: %v (each version has its own, tests/cluster/kueue/VERSION)", version, err)
	}
	bin, err := moduleBinary(cache, "kueue-manager-"+version, modDir)
	if err != nil {
		return "", err
	}
	if exists(bin) {
		return bin, nil
	}
	if !regexp.MustCompile(`(?m)^\s*(require\s+)?sigs\.k8s\.io/kueue\s+` + regexp.QuoteMeta(version) + `(\s|$)`).Match(gomod) {
		return "", fmt.Errorf("%s/go.mod does not require sigs.k8s.io/kueue %s", modDir, version)
	}
	return bin, buildLocked(cache, ".build-kueue.lock", bin, func(tmp string) error {
		return buildKueueManager(modDir, version, tmp)
	})
}

// buildKueueManager builds sigs.k8s.io/kueue/cmd/kueue in modDir into out, stamped with version.
func buildKueueManager(modDir, version, out string) error {
	fmt.Fprintf(os.Stderr, "testcluster: building Kueue's manager %s (sigs.k8s.io/kueue/cmd/kueue; a cold build takes about 6 minutes on 2 cores)...\n", version)
	t0 := time.Now()
	// A Go build cache of its own, removed afterwards: a version's compiled packages take
	// about 1.8 GB and share little with anything else; only the binary is kept. Builds of
	// several versions in one command (build-kueue-manager V1 V2 ...) share one, so the
	// standard library (CGO_ENABLED=0) and the modules two versions pin alike compile once; a
	// cache given in TESTCLUSTER_KUEUE_GOCACHE is the caller's to remove. The older
	// kube-apiservers build into it too (apiserver.go), with whose packages those of the
	// managers on their Kubernetes minor are shared (pinned alike in both modules' go.mod).
	gocache := os.Getenv("TESTCLUSTER_KUEUE_GOCACHE")
	if gocache == "" {
		var err error
		if gocache, err = os.MkdirTemp("", "kueue-manager-gocache-"); err != nil {
			return err
		}
		defer os.RemoveAll(gocache)
	}
	cmd := exec.CommandContext(shutdownCtx, goBinary(), unoptimizedBuild(
		"-X sigs.k8s.io/kueue/pkg/version.GitVersion="+version, out, "sigs.k8s.io/kueue/cmd/kueue")...)
	cmd.Dir = modDir
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=", "GOCACHE="+gocache), gcEnv()...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cannot build Kueue's manager: go build sigs.k8s.io/kueue/cmd/kueue in the module tests/cluster/kueue/%s (sigs.k8s.io/kueue %s) failed: %v\n  %s",
			version, version, err, strings.Join(lastLines(b, 15), "\n  "))
	}
	fmt.Fprintf(os.Stderr, "testcluster: built Kueue's manager %s in %.0fs\n", version, time.Since(t0).Seconds())
	return nil
}

// convertedCRDs are the CRDs that version's kustomization converts through Kueue's webhook
// (its uncommented "- path: patches/webhook_in_PLURAL.yaml" lines).
func convertedCRDs(kueueDir string) (map[string]bool, error) {
	b, err := os.ReadFile(filepath.Join(kueueDir, "config/components/crd/kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^- path: patches/webhook_in_([a-z]+)\.yaml`).FindAllSubmatch(b, -1) {
		out[string(m[1])] = true
	}
	return out, nil
}

// renderKueueCRDs writes every CRD of config/components/crd/bases to outDir as JSON, with
// spec.conversion pointing at the manager's /convert where the version converts. v1beta2Only:
// a CRD that serves v1beta2 gets v1beta1 not served; that needs v1beta2 stored.
func renderKueueCRDs(kueueDir, outDir, webhookURL string, caBundle []byte, v1beta2Only bool) ([]string, error) {
	bases, err := filepath.Glob(filepath.Join(kueueDir, "config/components/crd/bases/*.yaml"))
	if err != nil || len(bases) == 0 {
		return nil, fmt.Errorf("%s has no config/components/crd/bases/*.yaml", kueueDir)
	}
	converted, err := convertedCRDs(kueueDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(outDir, 0o700); err != nil {
		return nil, err
	}
	sort.Strings(bases)
	var files []string
	for _, f := range bases {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var crd map[string]any
		if err := yaml.Unmarshal(b, &crd); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		spec, _ := crd["spec"].(map[string]any)
		names, _ := spec["names"].(map[string]any)
		plural, _ := names["plural"].(string)
		if plural == "" {
			return nil, fmt.Errorf("%s: no spec.names.plural", f)
		}
		if v1beta2Only {
			if err := serveV1beta2Only(spec); err != nil {
				return nil, fmt.Errorf("%s: %v", f, err)
			}
		}
		if converted[plural] {
			spec["conversion"] = map[string]any{
				"strategy": "Webhook",
				"webhook": map[string]any{
					"clientConfig":             map[string]any{"url": webhookURL + "/convert", "caBundle": base64.StdEncoding.EncodeToString(caBundle)},
					"conversionReviewVersions": []string{"v1"},
				},
			}
		}
		j, err := json.Marshal(crd)
		if err != nil {
			return nil, err
		}
		out := filepath.Join(outDir, strings.TrimSuffix(filepath.Base(f), ".yaml")+".json")
		if err := os.WriteFile(out, j, 0o600); err != nil {
			return nil, err
		}
		files = append(files, out)
	}
	return files, nil
}

// serveV1beta2Only marks v1beta1 not served in a CRD's spec that serves v1beta2, which must be
// the stored version (an apiserver cannot store a version no client may read back as served).
func serveV1beta2Only(spec map[string]any) error {
	versions, _ := spec["versions"].([]any)
	var v1beta1, v1beta2 map[string]any
	for _, v := range versions {
		m, _ := v.(map[string]any)
		switch m["name"] {
		case "v1beta1":
			v1beta1 = m
		case "v1beta2":
			v1beta2 = m
		}
	}
	if v1beta2 == nil || v1beta1 == nil {
		return nil
	}
	if v1beta2["storage"] != true {
		return errors.New("--kueue-v1beta2-only needs v1beta2 stored (Kueue v0.17 and later)")
	}
	v1beta1["served"] = false
	return nil
}

// renderKueueWebhooks writes the version's MutatingWebhookConfiguration and
// ValidatingWebhookConfiguration as a List, named as Kueue's install names them
// (kueue-...), each webhook pointing at the manager by URL.
func renderKueueWebhooks(kueueDir, out, webhookURL string, caBundle []byte) error {
	b, err := os.ReadFile(filepath.Join(kueueDir, "config/components/webhook/manifests.yaml"))
	if err != nil {
		return err
	}
	var items []any
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return fmt.Errorf("webhook manifests: %v", err)
		}
		meta, _ := obj["metadata"].(map[string]any)
		if meta == nil {
			return errors.New("webhook manifests: an object without metadata")
		}
		meta["name"] = "kueue-" + fmt.Sprint(meta["name"])
		hooks, _ := obj["webhooks"].([]any)
		for _, h := range hooks {
			hook, _ := h.(map[string]any)
			cc, _ := hook["clientConfig"].(map[string]any)
			svc, _ := cc["service"].(map[string]any)
			path, _ := svc["path"].(string)
			if path == "" {
				return fmt.Errorf("webhook %v has no clientConfig.service.path", hook["name"])
			}
			hook["clientConfig"] = map[string]any{"url": webhookURL + path, "caBundle": base64.StdEncoding.EncodeToString(caBundle)}
		}
		items = append(items, obj)
	}
	if len(items) == 0 {
		return errors.New("webhook manifests: no objects")
	}
	j, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		return err
	}
	return os.WriteFile(out, j, 0o600)
}

// kueueManagerConfig is cmd/kueue's --config: v1beta2 where the version has it, else v1beta1.
// The leader-election Lease's namespace is named (outside a cluster the manager cannot find
// its own), kueue-system as in Kueue's install.
func kueueManagerConfig(kueueDir, certDir string, webhookPort, healthPort int, v *visibility, leaderElect bool) string {
	apiVersion := "config.kueue.x-k8s.io/v1beta1"
	if exists(filepath.Join(kueueDir, "apis/config/v1beta2")) {
		apiVersion = "config.kueue.x-k8s.io/v1beta2"
	}
	return fmt.Sprintf(`apiVersion: %s
kind: Configuration
namespace: kueue-system
leaderElection:
  leaderElect: %t
  resourceNamespace: kueue-system
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: "0"
integrations:
  frameworks:
  - batch/job
%s`, apiVersion, leaderElect, webhookPort, certDir, healthPort, v.configYAML())
}

// setUpKueueManager renders everything the manager needs, applies the CRDs, the namespace
// and the webhook configurations, starts the manager and waits until it is ready.
func setUpKueueManager(cfg config, p *pki, kueueDir, kubeconfig string) error {
	dir := filepath.Join(cfg.dir, "kueue")
	certDir := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	var vis *visibility
	if visibilityServed(kueueDir) {
		if vis, err = prepareVisibility(dir, p, ports[2]); err != nil {
			return err
		}
	}
	webhookURL := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	serving, err := issueServing("kueue-webhook", &p.ca)
	if err != nil {
		return fmt.Errorf("Kueue webhook certificate: %w", err)
	}
	if err := serving.writeTLS(certDir); err != nil {
		return err
	}
	crds, err := renderKueueCRDs(kueueDir, filepath.Join(dir, "crds"), webhookURL, p.ca.certPEM, cfg.kueueV1beta2Only)
	if err != nil {
		return err
	}
	webhooks := filepath.Join(dir, "webhooks.json")
	if err := renderKueueWebhooks(kueueDir, webhooks, webhookURL, p.ca.certPEM); err != nil {
		return err
	}
	configFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configFile, []byte(kueueManagerConfig(kueueDir, certDir, ports[0], ports[1], vis, cfg.kueueLeaderElect)), 0o600); err != nil {
		return err
	}
	if err := installKueueCRDs(kubeconfig, crds); err != nil {
		return err
	}
	if err := kubectl(kubeconfig, "create", "namespace", "kueue-system"); err != nil {
		return err
	}
	if err := kubectl(kubeconfig, "apply", "--server-side", "--field-manager=testcluster", "-f", webhooks); err != nil {
		return err
	}
	args := []string{"_kueue-exec", "--state-dir", cfg.dir, "--", cfg.kueueManagerBin,
		"--config=" + configFile, "--kubeconfig=" + kubeconfig, "--zap-log-level=2"}
	var gates []string
	if vis == nil {
		gates = append(gates, "VisibilityOnDemand=false")
	}
	if cfg.kueueFeatureGates != "" {
		gates = append(gates, cfg.kueueFeatureGates)
	}
	if len(gates) > 0 {
		args = append(args, "--feature-gates="+strings.Join(gates, ","))
	}
	spec := kueueManagerSpec{
		// This very harness binary, even after a newer harness build replaced its file.
		Bin:      selfExe,
		Args:     args,
		Env:      []string{"KUBECONFIG=" + kubeconfig},
		ReadyURL: fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]),
		Version:  cfg.kueue,
	}
	specJSON, _ := json.MarshalIndent(spec, "", "  ")
	if err := writeFileAtomic(filepath.Join(cfg.dir, kueueManagerName+".json"), specJSON, 0o600); err != nil {
		return err
	}
	if err := startKueueManager(cfg.dir, spec); err != nil {
		return err
	}
	if vis == nil {
		return nil
	}
	return registerVisibility(kubeconfig, kueueDir, cfg.dir, vis, cfg.kueueV1beta2Only)
}

// startKueueManager starts the manager in a private mount namespace and waits until its
// readyz answers (the webhook server is serving).
func startKueueManager(dir string, spec kueueManagerSpec) error {
	attr := &syscall.SysProcAttr{Setsid: true, Unshareflags: syscall.CLONE_NEWNS}
	if uid, gid := os.Geteuid(), os.Getegid(); uid != 0 {
		// Not root: a user namespace of its own, where it is root, may make the mounts.
		attr.Cloneflags = syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}}
	}
	p, err := spawnWith(dir, kueueManagerName, spec.Bin, spec.Args, spec.Env, attr)
	if err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EINVAL) {
			return fmt.Errorf("Kueue's manager runs in a private mount namespace, which needs root, or unprivileged user namespaces: %w", err)
		}
		return err
	}
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(90 * time.Second)
	last := "no answer yet"
	for {
		select {
		case <-p.done:
			return fmt.Errorf("Kueue's manager %s exited during startup\n%s", spec.Version, logTail(dir, kueueManagerName, 20))
		default:
		}
		resp, err := client.Get(spec.ReadyURL)
		if err == nil {
			body, _ := readAllClose(resp)
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("HTTP %d %s", resp.StatusCode, strings.TrimSpace(string(body)))
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			stopProcs([]int{p.pid})
			return fmt.Errorf("Kueue's manager %s not ready after 90s (last %s: %s)\n%s", spec.Version, spec.ReadyURL, last, logTail(dir, kueueManagerName, 20))
		}
		select {
		case <-shutdownCtx.Done():
			return errors.New("interrupted")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func readAllClose(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, err := buf.ReadFrom(resp.Body)
	return buf.Bytes(), err
}

func readKueueManagerSpec(dir string) (kueueManagerSpec, error) {
	var spec kueueManagerSpec
	b, err := os.ReadFile(filepath.Join(dir, kueueManagerName+".json"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return spec, errors.New("this cluster runs no Kueue manager (start it with --kueue-manager)")
		}
		return spec, err
	}
	err = json.Unmarshal(b, &spec)
	return spec, err
}

func cmdStopKueueManager(dir string) int {
	if err := checkStateDir(dir); err != nil {
		return fail("%v", err)
	}
	if _, err := readKueueManagerSpec(dir); err != nil {
		return fail("%v", err)
	}
	pid, ok := livePid(dir, kueueManagerName)
	if !ok {
		fmt.Fprintln(os.Stderr, "testcluster: Kueue's manager is not running")
		return 0
	}
	if left := stopProcs([]int{pid}); len(left) > 0 {
		return fail("Kueue's manager (pid %d) still running after SIGKILL", pid)
	}
	return 0
}

// cmdKillKueueManager SIGKILLs the manager, as a crashed or OOM-killed one ends: nothing is
// released, so a Lease it held keeps its holder and last renewal and goes stale.
func cmdKillKueueManager(dir string) int {
	if err := checkStateDir(dir); err != nil {
		return fail("%v", err)
	}
	if _, err := readKueueManagerSpec(dir); err != nil {
		return fail("%v", err)
	}
	pid, ok := livePid(dir, kueueManagerName)
	if !ok {
		return fail("Kueue's manager is not running")
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if left := waitGone([]int{pid}, 10*time.Second); len(left) > 0 {
		return fail("Kueue's manager (pid %d) still running 10s after SIGKILL", pid)
	}
	return 0
}

func cmdStartKueueManager(dir string) int {
	if err := checkStateDir(dir); err != nil {
		return fail("%v", err)
	}
	spec, err := readKueueManagerSpec(dir)
	if err != nil {
		return fail("%v", err)
	}
	if pid, ok := livePid(dir, kueueManagerName); ok {
		return fail("Kueue's manager is already running (pid %d)", pid)
	}
	t0 := time.Now()
	if err := startKueueManager(dir, spec); err != nil {
		return fail("start-kueue-manager: %v", err)
	}
	// Its visibility API too: the apiserver finds an APIService Available again only when it
	// checks next (within about 30 s).
	if err := waitVisibility(filepath.Join(dir, "kubeconfig"), dir); err != nil {
		return fail("start-kueue-manager: %v", err)
	}
	fmt.Fprintf(os.Stderr, "testcluster: Kueue's manager %s ready again in %.1fs\n", spec.Version, time.Since(t0).Seconds())
	return 0
}

// kueueExec is the hidden `_kueue-exec --state-dir DIR -- MANAGER ARGS...`, started in a new
// mount namespace whose mounts are private (Go's Unshareflags makes / private before this
// runs): it lays an overlay on /etc, upper layer on a tmpfs of its own, writes the serving
// certificate where cmd/kueue looks for its metrics certificate, and execs the manager (same
// pid, so DIR/kueue-manager.pid stays right). Nothing reaches the machine's /etc.
func kueueExec(dir string, argv []string) int {
	if len(argv) == 0 {
		return fail("_kueue-exec: no command")
	}
	if err := privateEtc(dir); err != nil {
		return fail("Kueue's manager: a private /etc in the mount namespace: %v", err)
	}
	if exists(filepath.Join(dir, "kueue", "visibility")) {
		if err := privateRoot(dir); err != nil {
			return fail("Kueue's manager: a private / holding /visibility in the mount namespace: %v", err)
		}
	}
	err := syscall.Exec(argv[0], argv, os.Environ())
	return fail("exec %s: %v", argv[0], err)
}

func privateEtc(dir string) error {
	layer := filepath.Join(dir, "kueue", "etc-layer")
	if err := os.MkdirAll(layer, 0o700); err != nil {
		return err
	}
	if err := syscall.Mount("tmpfs", layer, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0700"); err != nil {
		return fmt.Errorf("mount a tmpfs on %s: %w", layer, err)
	}
	upper, work := filepath.Join(layer, "upper"), filepath.Join(layer, "work")
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	if err := syscall.Mount("overlay", "/etc", "overlay", 0, "lowerdir=/etc,upperdir="+upper+",workdir="+work); err != nil {
		return fmt.Errorf("mount an overlay on /etc: %w", err)
	}
	metrics := "/etc/kueue/metrics/certs"
	if err := os.MkdirAll(metrics, 0o755); err != nil {
		return err
	}
	return copyTLS(filepath.Join(dir, "kueue", "certs"), metrics)
}

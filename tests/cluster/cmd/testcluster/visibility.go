package main

// Kueue's visibility API (visibility.kueue.x-k8s.io, pendingworkloads), served by Kueue's
// own manager through the apiserver's aggregation layer, as Kueue's install sets it up
// (config/components/visibility): its APIServices as Kueue ships them, the Service
// visibility-server in kueue-system, and, where Kueue's install has a Deployment behind that
// Service, an EndpointSlice naming the manager here.
//
//   - Only a version whose Configuration sets the visibility server's address and port
//     (visibilityServer.bindAddress/bindPort, Kueue v0.17) serves it: older ones listen on
//     0.0.0.0:8082, which two test clusters on one machine cannot share.
//   - An EndpointSlice may not name a loopback address (the apiserver refuses 127.0.0.0/8),
//     so the manager listens on this machine's first non-loopback address, and the
//     apiserver (--enable-aggregator-routing) dials that.
//   - cmd/kueue reads its serving certificate from /visibility/tls.{crt,key}, a folder of
//     Kueue's container image: the manager's private mount namespace gets a root of its own
//     (privateRoot) holding it, and nothing is written to the machine's /.
//
// The aggregated requests reach the manager with the front-proxy client certificate
// (certs.go); the manager authenticates them through the apiserver's
// extension-apiserver-authentication ConfigMap and asks it for SubjectAccessReviews, with the
// admin kubeconfig it runs with (--kubeconfig: the visibility server reads the flag, not
// $KUBECONFIG).

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"
)

const visibilityService = "visibility-server"

// visibilityServed reports whether the Kueue version at kueueDir can serve its visibility API
// on an address and port of the harness's choosing.
func visibilityServed(kueueDir string) bool {
	b, err := os.ReadFile(filepath.Join(kueueDir, "apis/config/v1beta2/configuration_types.go"))
	if err != nil || !regexp.MustCompile(`(?m)^\s*BindPort\s+\*int32\s.*json:"bindPort`).Match(b) {
		return false
	}
	files, _ := filepath.Glob(filepath.Join(kueueDir, "config/components/visibility/apiservice_*.yaml"))
	return len(files) > 0
}

// visibility is where a cluster's visibility server listens, and its certificate folder.
type visibility struct {
	ip      string
	port    int
	certDir string
}

// hostAddress is this machine's first non-loopback, non-link-local unicast address (IPv4
// first): what an EndpointSlice may name.
func hostAddress() (string, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	var addrs []net.Addr
	for _, i := range ifaces {
		if i.Flags&net.FlagUp == 0 {
			continue
		}
		if a, err := i.Addrs(); err == nil {
			addrs = append(addrs, a...)
		}
	}
	var v6 string
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || !n.IP.IsGlobalUnicast() {
			continue
		}
		if n.IP.To4() != nil {
			return n.IP.String(), nil
		}
		if v6 == "" {
			v6 = n.IP.String()
		}
	}
	if v6 != "" {
		return v6, nil
	}
	return "", errors.New("Kueue's visibility server needs an address of this machine other than loopback (an EndpointSlice may not name 127.0.0.0/8 or ::1), and it has none")
}

// prepareVisibility picks the address and port and writes the serving certificate.
func prepareVisibility(dir string, p *pki, port int) (*visibility, error) {
	ip, err := hostAddress()
	if err != nil {
		return nil, err
	}
	v := &visibility{ip: ip, port: port, certDir: filepath.Join(dir, "visibility")}
	if err := os.MkdirAll(v.certDir, 0o700); err != nil {
		return nil, err
	}
	serving, err := issueServing("kueue-visibility-server", &p.ca, visibilityService+".kueue-system.svc", ip)
	if err != nil {
		return nil, fmt.Errorf("Kueue visibility server certificate: %w", err)
	}
	if err := serving.writeTLS(v.certDir); err != nil {
		return nil, err
	}
	return v, nil
}

// configYAML is the Configuration's visibilityServer stanza.
func (v *visibility) configYAML() string {
	if v == nil {
		return ""
	}
	return fmt.Sprintf("visibilityServer:\n  bindAddress: %q\n  bindPort: %d\n", v.ip, v.port)
}

// renderVisibility writes Kueue's APIServices (v1beta2's alone when v1beta2Only), its Service
// (targetPort: the chosen port) and an EndpointSlice for it as a List.
func renderVisibility(kueueDir, out string, v *visibility, v1beta2Only bool) error {
	dir := filepath.Join(kueueDir, "config/components/visibility")
	files, err := filepath.Glob(filepath.Join(dir, "apiservice_*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("%s has no apiservice_*.yaml", dir)
	}
	sort.Strings(files)
	var items []any
	for _, f := range files {
		if v1beta2Only && filepath.Base(f) != "apiservice_v1beta2.yaml" {
			continue
		}
		obj, err := readYAMLObject(f)
		if err != nil {
			return err
		}
		items = append(items, obj)
	}
	svc, err := readYAMLObject(filepath.Join(dir, "service.yaml"))
	if err != nil {
		return err
	}
	spec, _ := svc["spec"].(map[string]any)
	ports, _ := spec["ports"].([]any)
	if len(ports) != 1 {
		return fmt.Errorf("%s/service.yaml: want one port, has %d", dir, len(ports))
	}
	port, _ := ports[0].(map[string]any)
	port["targetPort"] = v.port
	portName, _ := port["name"].(string)
	addressType := "IPv4"
	if net.ParseIP(v.ip).To4() == nil {
		addressType = "IPv6"
	}
	slice := map[string]any{
		"apiVersion": "discovery.k8s.io/v1",
		"kind":       "EndpointSlice",
		"metadata": map[string]any{
			"name":      visibilityService + "-testcluster",
			"namespace": "kueue-system",
			"labels": map[string]any{
				"kubernetes.io/service-name":             visibilityService,
				"endpointslice.kubernetes.io/managed-by": "testcluster",
			},
		},
		"addressType": addressType,
		"ports":       []any{map[string]any{"name": portName, "port": v.port, "protocol": "TCP"}},
		"endpoints":   []any{map[string]any{"addresses": []any{v.ip}, "conditions": map[string]any{"ready": true}}},
	}
	items = append(items, svc, slice)
	j, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		return err
	}
	return os.WriteFile(out, j, 0o600)
}

func readYAMLObject(file string) (map[string]any, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := yaml.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	if obj == nil {
		return nil, fmt.Errorf("%s: empty", file)
	}
	return obj, nil
}

// visibilityAPIServices are the APIServices a cluster registered (DIR/kueue/visibility.json),
// or none when its manager serves no visibility API.
func visibilityAPIServices(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "kueue", "visibility.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var list struct {
		Items []struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, err
	}
	var objs []string
	for _, i := range list.Items {
		if i.Kind == "APIService" {
			objs = append(objs, "apiservice/"+i.Metadata.Name)
		}
	}
	return objs, nil
}

// registerVisibility renders and applies the objects (DIR/kueue/visibility.json), then waits
// until the apiserver finds every APIService Available.
func registerVisibility(kubeconfig, kueueDir, stateDir string, v *visibility, v1beta2Only bool) error {
	list := filepath.Join(stateDir, "kueue", "visibility.json")
	if err := renderVisibility(kueueDir, list, v, v1beta2Only); err != nil {
		return err
	}
	if err := kubectl(kubeconfig, "apply", "--server-side", "--field-manager=testcluster", "-f", list); err != nil {
		return err
	}
	return waitVisibility(kubeconfig, stateDir)
}

// waitVisibility waits until the apiserver finds every APIService the cluster registered
// Available (it has reached the manager through the EndpointSlice); at once when its manager
// serves no visibility API.
func waitVisibility(kubeconfig, stateDir string) error {
	apiServices, err := visibilityAPIServices(stateDir)
	if err != nil || len(apiServices) == 0 {
		return err
	}
	if err := kubectlWait(kubeconfig, "Available", 60*time.Second, apiServices...); err != nil {
		return fmt.Errorf("Kueue's visibility API (%s) not Available: %w", strings.Join(apiServices, ", "), err)
	}
	return nil
}

// kubectlWait waits for condition on objs. kubectl wait gives up at once, rather than
// waiting, while an object has no conditions yet (".status.conditions accessor error: <nil>"),
// which a loaded machine shows: retry then.
func kubectlWait(kubeconfig, condition string, timeout time.Duration, objs ...string) error {
	deadline := time.Now().Add(timeout)
	for {
		left := max(int(time.Until(deadline).Seconds()), 1)
		err := kubectl(kubeconfig, append([]string{"wait", "--for=condition=" + condition, fmt.Sprintf("--timeout=%ds", left)}, objs...)...)
		if err == nil || time.Now().After(deadline) || !strings.Contains(err.Error(), "accessor error") {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// privateRoot, in the manager's private mount namespace, makes its / a tmpfs (DIR/kueue/root)
// holding every entry of the machine's / bound in, and /visibility with the visibility
// server's certificate; then chroots into it. Nothing is written to the machine's /; the
// mounts end with the process.
func privateRoot(dir string) error {
	certDir := filepath.Join(dir, "kueue", "visibility")
	root := filepath.Join(dir, "kueue", "root")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return err
	}
	// Its real path: the top-level entry that holds it is bound first (below).
	root, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	if err := syscall.Mount("tmpfs", root, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount a tmpfs on %s: %w", root, err)
	}
	var entries []os.DirEntry
	entries, err = os.ReadDir("/")
	if err != nil {
		return err
	}
	// The entry that holds the new root is bound first, while the new root has no mounts
	// below it that the recursive bind would copy.
	top := strings.SplitN(strings.TrimPrefix(root, "/"), "/", 2)[0]
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Name() == top && entries[j].Name() != top })
	for _, e := range entries {
		if e.Name() == "visibility" {
			continue
		}
		src, dst := "/"+e.Name(), filepath.Join(root, e.Name())
		info, err := os.Lstat(src)
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(src)
			if err == nil {
				err = os.Symlink(target, dst)
			}
			if err != nil {
				return err
			}
		case info.IsDir():
			if err := os.Mkdir(dst, 0o755); err != nil {
				return err
			}
			if err := syscall.Mount(src, dst, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
				return fmt.Errorf("bind %s: %w", src, err)
			}
		case info.Mode().IsRegular():
			if err := os.WriteFile(dst, nil, 0o644); err != nil {
				return err
			}
			if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
				return fmt.Errorf("bind %s: %w", src, err)
			}
		}
	}
	vis := filepath.Join(root, "visibility")
	if err := os.Mkdir(vis, 0o755); err != nil {
		return err
	}
	if err := copyTLS(certDir, vis); err != nil {
		return err
	}
	if err := syscall.Chroot(root); err != nil {
		return fmt.Errorf("chroot %s: %w", root, err)
	}
	return os.Chdir("/")
}

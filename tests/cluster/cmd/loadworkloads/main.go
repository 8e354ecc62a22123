// Command loadworkloads fills a test cluster with realistic Kueue Workloads and plays
// dispatch's controller, for bench/run (standard library only). It talks to the apiserver
// with the test cluster's admin client certificate.
//
//	loadworkloads setup [-namespaces N]
//	    dispatch's AdmissionCheck "dispatch" (controllerName dispatch-admission, Active=True),
//	    the ClusterQueue "bench" listing it, namespaces team-00.. with LocalQueue "team-queue",
//	    and a fresh Lease dispatch-system/dispatch-admission (duration 15 s).
//	loadworkloads workloads -from A -to B [-via etcd|api] [-namespaces N] [-concurrency C] [-waiting-every K]
//	    creates Workloads A..B-1 spread over the namespaces. Each is about 6 KB of JSON (plus
//	    6.5 KB of managedFields once stored): two podSets (launcher and workers) with full
//	    pod templates, an owner reference, conditions, admission with podSetAssignments,
//	    resourceRequests and status.admissionChecks. Every K-th (default 20: 5%) waits at
//	    dispatch's Pending check; of the others 20% have no quota (the check Pending before
//	    quota), the rest are admitted (the check Ready). -via api: POST, then PUT /status,
//	    concurrently (an existing Workload gets its status again). -via etcd (default): see
//	    loadViaEtcd; much faster, and the apiserver serves the same objects.
//	loadworkloads renew [-lease NS/NAME] [-every 2s] [-duration 15] [-owner-pid PID]
//	    renews the Lease every interval until SIGINT/SIGTERM or until PID is gone (the
//	    first renewal at once).
//	loadworkloads watchlatency [-samples N] [-stale-samples N] -- PLUGIN lease --watch -o json
//	    issue 5's measures: the delay from a renewal's write to the plugin's "renewed" row,
//	    and from a Lease's stale deadline (renewTime + 2 x duration) to its "stale" row,
//	    plus the plugin's CPU time over the renewals.
//	loadworkloads churn -rate N -for D -from A -to B [-moves M] [-owner-pid PID]
//	    a busy cluster: N status writes a second for D, moving M admitted Workloads of [A, B)
//	    to dispatch's Pending check one at a time and back (see churn.go), then restoring them.
//	loadworkloads churnwatch -rate N -for D -from A -to B [-moves M] [-settle S] -- CMD ARGS...
//	    runs CMD (a watch), waits for its first line and S more, churns as above, and reports
//	    CMD's CPU time and peak RSS and, where its lines say "N workloads wait at dispatch's
//	    Pending check", each write's delay from its response to the first line showing its count.
//	loadworkloads blackhole [-addr 127.0.0.1:0] [-owner-pid PID]
//	    prints the address, then accepts connections and never answers (an unreachable
//	    cluster that only a timeout ends), until SIGINT/SIGTERM or until PID is gone.
//	loadworkloads latency -target HOST:PORT [-delay 25ms] [-mbit 100] [-log FILE] [-addr 127.0.0.1:0] [-owner-pid PID]
//	    prints the address, then forwards each connection to HOST:PORT with every chunk held
//	    -delay in each direction (a cluster that far away), until SIGINT/SIGTERM or PID is gone.
//
// Common flags: -server (default $APISERVER_URL), -pki (default $DISPATCH_TEST_STATE_DIR/pki,
// holding ca.crt, admin.crt and admin.key).
package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"kubectl-dispatch/tests/cluster/internal/adminpki"
)

const (
	kueueAPI       = "/apis/kueue.x-k8s.io/v1beta2"
	leaseAPI       = "/apis/coordination.k8s.io/v1"
	checkName      = "dispatch"
	controllerName = "dispatch-admission"
	clusterQueue   = "bench"
	localQueue     = "team-queue"
	flavor         = "a100-on-demand"
)

const usage = `usage: loadworkloads setup|workloads|renew|watchlatency|churn|churnwatch|blackhole|latency [flags]
  (see the comment at the top of tests/cluster/cmd/loadworkloads/main.go; -h for flags)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	verb, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet("loadworkloads "+verb, flag.ExitOnError)
	server := fs.String("server", os.Getenv("APISERVER_URL"), "apiserver URL")
	pki := fs.String("pki", filepath.Join(os.Getenv("DISPATCH_TEST_STATE_DIR"), "pki"), "folder with ca.crt, admin.crt, admin.key")
	namespaces := fs.Int("namespaces", 20, "namespaces to spread Workloads over")
	from := fs.Int("from", 0, "first Workload index")
	to := fs.Int("to", 1000, "one past the last Workload index")
	concurrency := fs.Int("concurrency", 16, "concurrent requests")
	waitingEvery := fs.Int("waiting-every", 20, "every K-th Workload waits at dispatch's check")
	via := fs.String("via", "etcd", "how Workloads are written: api (POST + PUT /status) or etcd (clones of API-made ones)")
	etcd := fs.String("etcd", "", "etcd client URL for -via etcd (default: from $DISPATCH_TEST_STATE_DIR/kube-apiserver.json)")
	lease := fs.String("lease", "dispatch-system/dispatch-admission", "the Lease NAMESPACE/NAME")
	every := fs.Duration("every", 2*time.Second, "renewal interval")
	duration := fs.Int("duration", 15, "leaseDurationSeconds")
	samples := fs.Int("samples", 10, "renewal samples")
	staleSamples := fs.Int("stale-samples", 5, "stale samples")
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on")
	owner := fs.Int("owner-pid", 0, "renew, blackhole, latency: also stop when this process is gone")
	target := fs.String("target", "", "latency: the HOST:PORT to forward to")
	delay := fs.Duration("delay", 25*time.Millisecond, "latency: the delay in each direction")
	mbit := fs.Float64("mbit", 0, "latency: the link's bandwidth in Mbit/s each way (0: unlimited)")
	byteLog := fs.String("log", "", "latency: append each connection's bytes (down=N up=M) to this file")
	rate := fs.Float64("rate", 20, "churn: status writes a second")
	churnFor := fs.Duration("for", 120*time.Second, "churn: how long to write")
	moves := fs.Int("moves", 50, "churn: Workloads moved to the check and back in each round")
	settle := fs.Duration("settle", 5*time.Second, "churnwatch: wait after the watch's first line before writing")
	if err := fs.Parse(args); err != nil {
		os.Exit(2)
	}
	if verb == "blackhole" {
		exitOn(blackhole(*addr, stopped(*owner)))
		return
	}
	if verb == "latency" {
		exitOn(latency(*addr, *target, *delay, *mbit*1e6, *byteLog, stopped(*owner)))
		return
	}
	c, err := newClient(*server, *pki, *concurrency)
	exitOn(err)
	switch verb {
	case "setup":
		exitOn(setup(c, *namespaces, *lease, *duration))
	case "workloads":
		switch *via {
		case "api":
			exitOn(loadViaAPI(c, *from, *to, *namespaces, *concurrency, *waitingEvery))
		case "etcd":
			exitOn(loadViaEtcd(c, *etcd, *from, *to, *namespaces, *concurrency, *waitingEvery))
		default:
			exitOn(fmt.Errorf("-via %q: expected api or etcd", *via))
		}
	case "renew":
		exitOn(renewLoop(c, *lease, *every, *duration, stopped(*owner)))
	case "watchlatency":
		exitOn(watchLatency(c, fs.Args(), *samples, *staleSamples, *every))
	case "churn", "churnwatch":
		ch, err := newChurner(c, *from, *to, *namespaces, *waitingEvery, *moves)
		exitOn(err)
		if verb == "churn" {
			writes, err := ch.run(*rate, *churnFor, stopped(*owner))
			exitOn(err)
			fmt.Printf("%d writes over %s\n", len(writes), *churnFor)
		} else {
			exitOn(churnWatch(ch, fs.Args(), *rate, *churnFor, *settle))
		}
	default:
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadworkloads:", err)
		os.Exit(1)
	}
}

type client struct {
	server string
	http   *http.Client
}

func newClient(server, pki string, conns int) (*client, error) {
	if server == "" {
		return nil, errors.New("no -server and no $APISERVER_URL")
	}
	tlsConfig, err := adminpki.TLSConfig(pki)
	if err != nil {
		return nil, err
	}
	// HTTP/1.1 with one connection per worker: the apiserver spreads them over its cores.
	tr := &http.Transport{
		TLSClientConfig:     tlsConfig,
		MaxIdleConnsPerHost: conns + 2,
		MaxConnsPerHost:     conns + 2,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	return &client{server: strings.TrimRight(server, "/"), http: &http.Client{Transport: tr, Timeout: 60 * time.Second}}, nil
}

// do sends body (JSON, or nil) and returns the status code; a status not in ok is an error.
func (c *client) do(method, path, contentType string, body any, ok ...int) (int, error) {
	return c.send(method, path, contentType, body, nil, ok...)
}

// send is do that also decodes a successful response into out (unless out is nil).
func (c *client) send(method, path, contentType string, body, out any, ok ...int) (int, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.server+path, r)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "loadworkloads/bench")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	msg, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, code := range ok {
		if resp.StatusCode == code {
			if out != nil && code < 300 {
				if err := json.Unmarshal(msg, out); err != nil {
					return code, fmt.Errorf("%s %s: %v", method, path, err)
				}
			}
			return code, nil
		}
	}
	return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(msg))
}

// create POSTs obj (409 AlreadyExists is fine) and, with status, PUTs /status: the created
// object with its status (a PUT costs the apiserver far less CPU than a merge PATCH).
func (c *client) create(collection, name string, obj map[string]any, status map[string]any) error {
	var created map[string]any
	code, err := c.send("POST", collection+"?fieldValidation=Strict", "application/json", obj, &created, 201, 409)
	if err != nil || status == nil {
		return err
	}
	if code == 409 {
		if _, err := c.send("GET", collection+"/"+name, "", nil, &created, 200); err != nil {
			return err
		}
	}
	created["status"] = status
	_, err = c.send("PUT", collection+"/"+name+"/status?fieldValidation=Strict", "application/json", created, nil, 200)
	return err
}

func meta(name, ns string) map[string]any {
	m := map[string]any{"name": name}
	if ns != "" {
		m["namespace"] = ns
	}
	return m
}

func condition(typ, status, reason, message string, at time.Time) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": message,
		"lastTransitionTime": at.UTC().Format(time.RFC3339)}
}

func micro(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

func nsName(i int) string { return fmt.Sprintf("team-%02d", i) }

func setup(c *client, namespaces int, lease string, duration int) error {
	now := time.Now()
	err := c.create(kueueAPI+"/admissionchecks", checkName, map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": meta(checkName, ""),
		"spec": map[string]any{"controllerName": controllerName},
	}, map[string]any{"conditions": []any{condition("Active", "True", "Active", "The dispatch admission controller is ready", now.Add(-time.Hour))}})
	if err != nil {
		return err
	}
	quota := func(name, q string) map[string]any { return map[string]any{"name": name, "nominalQuota": q} }
	err = c.create(kueueAPI+"/clusterqueues", clusterQueue, map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": meta(clusterQueue, ""),
		"spec": map[string]any{
			"namespaceSelector": map[string]any{},
			"resourceGroups": []any{map[string]any{
				"coveredResources": []any{"cpu", "memory", "nvidia.com/gpu"},
				"flavors": []any{map[string]any{"name": flavor, "resources": []any{
					quota("cpu", "100000"), quota("memory", "400Ti"), quota("nvidia.com/gpu", "20000")}}},
			}},
			"admissionChecksStrategy": map[string]any{"admissionChecks": []any{map[string]any{"name": checkName}}},
		},
	}, nil)
	if err != nil {
		return err
	}
	for i := range namespaces {
		ns := nsName(i)
		if _, err := c.do("POST", "/api/v1/namespaces", "application/json", map[string]any{
			"apiVersion": "v1", "kind": "Namespace", "metadata": meta(ns, ""),
		}, 201, 409); err != nil {
			return err
		}
		err := c.create(kueueAPI+"/namespaces/"+ns+"/localqueues", localQueue, map[string]any{
			"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": meta(localQueue, ns),
			"spec": map[string]any{"clusterQueue": clusterQueue},
		}, nil)
		if err != nil {
			return err
		}
	}
	ns, _, _ := strings.Cut(lease, "/")
	if _, err := c.do("POST", "/api/v1/namespaces", "application/json", map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": meta(ns, ""),
	}, 201, 409); err != nil {
		return err
	}
	return renew(c, lease, duration, time.Now())
}

// renew writes the Lease as a leader's renewal does (creating it first if needed).
func renew(c *client, lease string, duration int, at time.Time) error {
	ns, name, ok := strings.Cut(lease, "/")
	if !ok {
		return fmt.Errorf("-lease %q: expected NAMESPACE/NAME", lease)
	}
	spec := map[string]any{
		"holderIdentity":       "dispatch-admission-6c9f7d8b5-q2w4x_3f2a9c1e-7b4d-4e0a-9f61-2d8c5b7a1e90",
		"leaseDurationSeconds": duration,
		"renewTime":            micro(at),
	}
	code, err := c.do("PATCH", leaseAPI+"/namespaces/"+ns+"/leases/"+name, "application/merge-patch+json",
		map[string]any{"spec": spec}, 200, 404)
	if err != nil || code == 200 {
		return err
	}
	spec["acquireTime"] = micro(at)
	spec["leaseTransitions"] = 1
	_, err = c.do("POST", leaseAPI+"/namespaces/"+ns+"/leases", "application/json", map[string]any{
		"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta(name, ns), "spec": spec,
	}, 201)
	return err
}

// stopped is closed on SIGINT or SIGTERM, or once the process owner (if not 0) is gone.
func stopped(owner int) <-chan struct{} {
	done := make(chan struct{})
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-sigc:
				close(done)
				return
			case <-tick.C:
				if owner > 0 && syscall.Kill(owner, 0) == syscall.ESRCH {
					close(done)
					return
				}
			}
		}
	}()
	return done
}

func renewLoop(c *client, lease string, every time.Duration, duration int, done <-chan struct{}) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := renew(c, lease, duration, time.Now()); err != nil {
			fmt.Fprintln(os.Stderr, "loadworkloads: renew:", err) // a leader retries on its next tick
		}
		select {
		case <-done:
			return nil
		case <-tick.C:
		}
	}
}

// workload returns Workload i and its status. kind: 0 waits at dispatch's check, 1 has no
// quota yet (the check Pending before quota), 2 is admitted (the check Ready).
func workload(i, namespaces, waitingEvery int, now time.Time) (string, string, map[string]any, map[string]any) {
	ns := nsName(i % namespaces)
	kind := kindOf(i, waitingEvery)
	job := fmt.Sprintf("train-%05d", i)
	name := fmt.Sprintf("job-%s-%05x", job, (i*2654435761)&0xfffff)
	uid := ownerUID(i)
	created := now.Add(-time.Duration(600+i%7200) * time.Second)
	labels := map[string]any{"kueue.x-k8s.io/job-uid": uid, "app.kubernetes.io/name": "trainer",
		"app.kubernetes.io/part-of": "ml-platform", "team": ns}
	podSet := func(role string, count int, cpu, mem string, gpus int) map[string]any {
		env := []any{
			map[string]any{"name": "JOB_NAME", "value": job},
			map[string]any{"name": "ROLE", "value": role},
			map[string]any{"name": "WORLD_SIZE", "value": "5"},
			map[string]any{"name": "MASTER_ADDR", "value": job + "-launcher-0." + job + "." + ns + ".svc"},
			map[string]any{"name": "MASTER_PORT", "value": "29500"},
			map[string]any{"name": "NCCL_DEBUG", "value": "WARN"},
			map[string]any{"name": "DATASET_URI", "value": "s3://ml-datasets/imagenet-21k/shards/"},
			map[string]any{"name": "POD_NAME", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}},
			map[string]any{"name": "POD_NAMESPACE", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.namespace"}}},
			map[string]any{"name": "WANDB_API_KEY", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "wandb", "key": "api-key"}}},
		}
		res := map[string]any{"cpu": cpu, "memory": mem}
		if gpus > 0 {
			res["nvidia.com/gpu"] = fmt.Sprint(gpus)
		}
		return map[string]any{
			"name": role, "count": count,
			"template": map[string]any{
				"metadata": map[string]any{
					"labels": map[string]any{"batch.kubernetes.io/job-name": job, "job-name": job,
						"training.kubeflow.org/replica-type": role, "app.kubernetes.io/name": "trainer"},
					"annotations": map[string]any{"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
						"kubectl.kubernetes.io/default-container": "trainer"},
				},
				"spec": map[string]any{
					"restartPolicy": "Never", "serviceAccountName": "trainer",
					"priorityClassName": "batch-high", "terminationGracePeriodSeconds": 60,
					"nodeSelector":    map[string]any{"cloud.google.com/gke-accelerator": "nvidia-tesla-a100", "pool": "training"},
					"tolerations":     []any{map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}},
					"securityContext": map[string]any{"runAsNonRoot": true, "runAsUser": 1000, "fsGroup": 1000},
					"containers": []any{map[string]any{
						"name": "trainer", "image": "registry.example.com/ml/trainer:v2.14.3",
						"imagePullPolicy": "IfNotPresent",
						"command":         []any{"python", "-m", "trainer.launch"},
						"args":            []any{"--config=/etc/trainer/config.yaml", "--epochs=40", "--batch-size=256", "--checkpoint-dir=/data/checkpoints/" + job},
						"env":             env,
						"ports":           []any{map[string]any{"name": "metrics", "containerPort": 9090}, map[string]any{"name": "dist", "containerPort": 29500}},
						"resources":       map[string]any{"requests": res, "limits": res},
						"volumeMounts": []any{
							map[string]any{"name": "config", "mountPath": "/etc/trainer", "readOnly": true},
							map[string]any{"name": "data", "mountPath": "/data"},
							map[string]any{"name": "dshm", "mountPath": "/dev/shm"},
						},
					}},
					"volumes": []any{
						map[string]any{"name": "config", "configMap": map[string]any{"name": job + "-config"}},
						map[string]any{"name": "data", "persistentVolumeClaim": map[string]any{"claimName": "training-data"}},
						map[string]any{"name": "dshm", "emptyDir": map[string]any{"medium": "Memory", "sizeLimit": "16Gi"}},
					},
				},
			},
		}
	}
	obj := map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
		"metadata": map[string]any{
			"name": name, "namespace": ns, "labels": labels,
			"annotations": map[string]any{"kueue.x-k8s.io/job-owner": "batch/Job " + job},
			"ownerReferences": []any{map[string]any{"apiVersion": "batch/v1", "kind": "Job", "name": job,
				"uid": uid, "controller": true, "blockOwnerDeletion": true}},
		},
		"spec": map[string]any{
			"queueName": localQueue, "active": true,
			"podSets": []any{podSet("launcher", 1, "2", "8Gi", 0), podSet("worker", 4, "8", "64Gi", 1)},
		},
	}
	requests := []any{
		map[string]any{"name": "launcher", "resources": map[string]any{"cpu": "2", "memory": "8Gi"}},
		map[string]any{"name": "worker", "resources": map[string]any{"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "4"}},
	}
	at := created.Add(30 * time.Second)
	status := map[string]any{"resourceRequests": requests}
	if kind == 1 {
		status["conditions"] = []any{condition("QuotaReserved", "False", "Pending",
			"couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor a100-on-demand, 4 more needed", at)}
		status["admissionChecks"] = []any{map[string]any{"name": checkName, "state": "Pending", "message": "",
			"lastTransitionTime": at.UTC().Format(time.RFC3339)}}
		return ns, name, obj, status
	}
	flavors := func(gpu bool) map[string]any {
		f := map[string]any{"cpu": flavor, "memory": flavor}
		if gpu {
			f["nvidia.com/gpu"] = flavor
		}
		return f
	}
	status["admission"] = map[string]any{"clusterQueue": clusterQueue, "podSetAssignments": []any{
		map[string]any{"name": "launcher", "count": 1, "flavors": flavors(false), "resourceUsage": requests[0].(map[string]any)["resources"]},
		map[string]any{"name": "worker", "count": 4, "flavors": flavors(true), "resourceUsage": requests[1].(map[string]any)["resources"]},
	}}
	reserved := condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue "+clusterQueue, at)
	if kind == 0 {
		status["conditions"] = []any{reserved,
			condition("Admitted", "False", "UnsatisfiedChecks", "The workload has not all checks ready", at)}
		status["admissionChecks"] = []any{map[string]any{"name": checkName, "state": "Pending",
			"message":            "waiting for dispatch to place the workload on a worker cluster",
			"lastTransitionTime": at.UTC().Format(time.RFC3339)}}
		return ns, name, obj, status
	}
	ready := at.Add(2 * time.Second)
	status["conditions"] = []any{reserved,
		condition("Admitted", "True", "Admitted", "The workload is admitted", ready),
		condition("PodsReady", "True", "PodsReady", "All pods reached readiness and the workload is running", ready.Add(40*time.Second))}
	status["admissionChecks"] = []any{map[string]any{"name": checkName, "state": "Ready",
		"message": "placed on worker cluster " + fmt.Sprintf("gpu-%d", i%3), "lastTransitionTime": ready.UTC().Format(time.RFC3339)}}
	return ns, name, obj, status
}

func loadViaAPI(c *client, from, to, namespaces, concurrency, waitingEvery int) error {
	if from >= to {
		return nil
	}
	start, now := time.Now(), time.Now()
	jobs := make(chan int)
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
		bytesOut atomic.Int64
		done     atomic.Int64
	)
	stop := make(chan struct{})
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				ns, name, obj, status := workload(i, namespaces, waitingEvery, now)
				b, _ := json.Marshal(obj)
				s, _ := json.Marshal(map[string]any{"status": status})
				bytesOut.Add(int64(len(b) + len(s)))
				if err := c.create(kueueAPI+"/namespaces/"+ns+"/workloads", name, obj, status); err != nil {
					once.Do(func() { firstErr = err; close(stop) })
					return
				}
				done.Add(1)
			}
		}()
	}
feed:
	for i := from; i < to; i++ {
		select {
		case jobs <- i:
		case <-stop:
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	n := done.Load()
	secs := time.Since(start).Seconds()
	fmt.Printf("loaded Workloads %d..%d through the API: %d in %.1fs (%.0f/s, POST + PUT /status each), about %.1f KB of JSON sent each\n",
		from, to-1, n, secs, float64(n)/secs, float64(bytesOut.Load())/float64(n)/1024)
	return nil
}

func kindOf(i, waitingEvery int) int {
	switch {
	case i%waitingEvery == 0:
		return 0
	case i%5 == 1:
		return 1
	}
	return 2
}

func ownerUID(i int) string { return fmt.Sprintf("%08x-4e0a-4b2c-9f61-%012x", i*7919, i*104729) }

// etcdURL reads kube-apiserver's --etcd-servers from the test cluster's state folder.
func etcdURL() (string, error) {
	b, err := os.ReadFile(filepath.Join(os.Getenv("DISPATCH_TEST_STATE_DIR"), "kube-apiserver.json"))
	if err != nil {
		return "", fmt.Errorf("no -etcd: %w", err)
	}
	var spec struct{ Args []string }
	if err := json.Unmarshal(b, &spec); err != nil {
		return "", err
	}
	for _, a := range spec.Args {
		if v, ok := strings.CutPrefix(a, "--etcd-servers="); ok {
			return strings.Split(v, ",")[0], nil
		}
	}
	return "", errors.New("no --etcd-servers in kube-apiserver.json")
}

// loadViaEtcd writes Workloads straight into etcd, where kube-apiserver stores them (JSON
// under /registry/kueue.x-k8s.io/workloads/NS/NAME): the apiserver's CPU for a CRD status
// write (about 35 ms each, on top of 9 ms for the create) would otherwise make a 20,000
// load take most of an hour on 2 cores. Each kind of Workload (waiting, without quota,
// admitted) is first written through the API (validated strictly, with managedFields);
// every clone has that template's managedFields, its own metadata, spec and status, so
// the apiserver serves what it would have stored itself.
func loadViaEtcd(c *client, etcd string, from, to, namespaces, concurrency, waitingEvery int) error {
	if from >= to {
		return nil
	}
	if etcd == "" {
		u, err := etcdURL()
		if err != nil {
			return err
		}
		etcd = u
	}
	start, now := time.Now(), time.Now()
	managed := map[int]string{} // kind -> the template's managedFields (JSON)
	templates := map[int]int{}  // kind -> template index
	for i := 0; len(templates) < 3; i++ {
		if _, seen := templates[kindOf(i, waitingEvery)]; !seen {
			templates[kindOf(i, waitingEvery)] = i
		}
	}
	for kind, i := range templates {
		ns, name, obj, status := workload(i, namespaces, waitingEvery, now)
		collection := kueueAPI + "/namespaces/" + ns + "/workloads"
		if err := c.create(collection, name, obj, status); err != nil {
			return err
		}
		var stored struct {
			Metadata struct {
				ManagedFields json.RawMessage `json:"managedFields"`
			} `json:"metadata"`
		}
		if _, err := c.send("GET", collection+"/"+name, "", nil, &stored, 200); err != nil {
			return err
		}
		managed[kind] = strings.ReplaceAll(string(stored.Metadata.ManagedFields), ownerUID(i), "@OWNER@")
	}
	isTemplate := func(i int) bool { return templates[kindOf(i, waitingEvery)] == i }

	type kv struct{ key, value []byte }
	batches := make(chan []kv)
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
		written  atomic.Int64
		size     atomic.Int64
	)
	stop := make(chan struct{})
	hc := &http.Client{Timeout: 60 * time.Second}
	for range max(1, concurrency/4) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range batches {
				ops := make([]any, len(batch))
				for j, p := range batch {
					ops[j] = map[string]any{"requestPut": map[string]any{"key": p.key, "value": p.value}} // []byte: base64
				}
				body, _ := json.Marshal(map[string]any{"success": ops})
				resp, err := hc.Post(etcd+"/v3/kv/txn", "application/json", bytes.NewReader(body))
				if err == nil {
					msg, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						err = fmt.Errorf("etcd txn: %d %s", resp.StatusCode, bytes.TrimSpace(msg))
					}
				}
				if err != nil {
					once.Do(func() { firstErr = err; close(stop) })
					return
				}
				written.Add(int64(len(batch)))
			}
		}()
	}
	const perTxn = 100 // etcd's --max-txn-ops defaults to 128
	batch := make([]kv, 0, perTxn)
	flush := func() bool {
		if len(batch) == 0 {
			return true
		}
		select {
		case batches <- batch:
			batch = make([]kv, 0, perTxn)
			return true
		case <-stop:
			return false
		}
	}
feed:
	for i := from; i < to; i++ {
		if isTemplate(i) {
			continue
		}
		ns, name, obj, status := workload(i, namespaces, waitingEvery, now)
		md := obj["metadata"].(map[string]any)
		md["uid"] = fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", i, i%0xffff, i%0xfff, (i/7)%0xfff, i*2654435761%0xffffffffffff)
		md["creationTimestamp"] = now.Add(-time.Duration(600+i%7200) * time.Second).UTC().Format(time.RFC3339)
		md["generation"] = 1
		md["managedFields"] = json.RawMessage(strings.ReplaceAll(managed[kindOf(i, waitingEvery)], "@OWNER@", ownerUID(i)))
		obj["status"] = status
		value, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		size.Add(int64(len(value)))
		batch = append(batch, kv{[]byte("/registry/kueue.x-k8s.io/workloads/" + ns + "/" + name), value})
		if len(batch) == perTxn && !flush() {
			break feed
		}
	}
	if firstErr == nil {
		flush()
	}
	close(batches)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	n := written.Load()
	secs := time.Since(start).Seconds()
	viaAPI := 0
	for _, i := range templates {
		if i >= from && i < to {
			viaAPI++
		}
	}
	fmt.Printf("loaded Workloads %d..%d in %.1fs (%.0f/s): %d into etcd, %d through the API; %.1f KB stored each (with managedFields)\n",
		from, to-1, secs, float64(n+int64(viaAPI))/secs, n, viaAPI, float64(size.Load())/float64(max(n, 1))/1024)
	return nil
}

// ---- issue 5's measures ----

type row struct {
	received time.Time
	Time     string `json:"time"`
	Event    string `json:"event"`
	Lease    struct {
		RenewTime            string `json:"renewTime"`
		LeaseDurationSeconds int    `json:"leaseDurationSeconds"`
	} `json:"lease"`
}

func (r row) at() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, r.Time)
	return t
}

type watcher struct {
	cmd  *exec.Cmd
	rows chan row
}

func startWatch(argv []string, lease string) (*watcher, error) {
	cmd := exec.Command(argv[0], append(append([]string{}, argv[1:]...), "--lease", lease)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w := &watcher{cmd: cmd, rows: make(chan row, 64)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var r row
			if json.Unmarshal(sc.Bytes(), &r) == nil {
				r.received = time.Now()
				w.rows <- r
			}
		}
		close(w.rows)
	}()
	return w, nil
}

// next returns the next row with the event, skipping others, or an error after timeout.
func (w *watcher) next(event string, timeout time.Duration) (row, error) {
	deadline := time.After(timeout)
	for {
		select {
		case r, ok := <-w.rows:
			if !ok {
				return row{}, fmt.Errorf("the watch ended before a %q row", event)
			}
			if r.Event == event {
				return r, nil
			}
		case <-deadline:
			return row{}, fmt.Errorf("no %q row within %v", event, timeout)
		}
	}
}

// stop sends SIGTERM and returns the CPU time the process used.
func (w *watcher) stop() time.Duration {
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	_ = w.cmd.Wait()
	if w.cmd.ProcessState == nil {
		return 0
	}
	return w.cmd.ProcessState.UserTime() + w.cmd.ProcessState.SystemTime()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func summary(what string, ds []time.Duration, goal string) {
	if len(ds) == 0 {
		fmt.Printf("%-58s no samples\n", what)
		return
	}
	sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
	med := ds[len(ds)/2]
	if len(ds)%2 == 0 {
		med = (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
	}
	fmt.Printf("%-58s median %9s   max %9s   (n=%d; goal %s)\n", what, ms(med), ms(ds[len(ds)-1]), len(ds), goal)
}

func watchLatency(c *client, argv []string, samples, staleSamples int, every time.Duration) error {
	if len(argv) == 0 {
		return errors.New("watchlatency: give the watch command after --, e.g. -- kubectl-dispatch lease --watch -o json")
	}
	// Renewals: a healthy Lease renewed every interval; each renewal's write, timed from just
	// before the request to just after its response, against the plugin's row.
	const renewLease = "dispatch-system/bench-watch-renew"
	if err := renew(c, renewLease, 15, time.Now()); err != nil {
		return err
	}
	w, err := startWatch(argv, renewLease)
	if err != nil {
		return err
	}
	if _, err := w.next("observed", 10*time.Second); err != nil {
		w.stop()
		return err
	}
	var fromStart, fromEnd, fromEndRecv []time.Duration
	began := time.Now()
	for range samples {
		time.Sleep(every)
		t0 := time.Now()
		if err := renew(c, renewLease, 15, t0); err != nil {
			w.stop()
			return err
		}
		t1 := time.Now()
		r, err := w.next("renewed", 5*time.Second)
		if err != nil {
			w.stop()
			return err
		}
		fromStart = append(fromStart, r.at().Sub(t0))
		fromEnd = append(fromEnd, r.at().Sub(t1))
		fromEndRecv = append(fromEndRecv, r.received.Sub(t1))
	}
	watched := time.Since(began)
	cpu := w.stop()

	// Stale: a Lease of leaseDurationSeconds 1 (deadline renewTime + 2 s), left alone; the
	// plugin must print the stale row on its own timer. Renewing it again makes it fresh.
	const staleLease = "dispatch-system/bench-watch-stale"
	if err := renew(c, staleLease, 1, time.Now()); err != nil {
		return err
	}
	w, err = startWatch(argv, staleLease)
	if err != nil {
		return err
	}
	var staleDelay, staleRecv []time.Duration
	for i := range staleSamples {
		if i > 0 {
			if err := renew(c, staleLease, 1, time.Now()); err != nil {
				w.stop()
				return err
			}
		}
		r, err := w.next("stale", 10*time.Second)
		if err != nil {
			w.stop()
			return err
		}
		renewed, err := time.Parse(time.RFC3339Nano, r.Lease.RenewTime)
		if err != nil {
			w.stop()
			return fmt.Errorf("stale row: renewTime %q: %v", r.Lease.RenewTime, err)
		}
		deadline := renewed.Add(2 * time.Duration(r.Lease.LeaseDurationSeconds) * time.Second)
		staleDelay = append(staleDelay, r.at().Sub(deadline))
		staleRecv = append(staleRecv, r.received.Sub(deadline))
	}
	w.stop()

	summary("renewal write (response) -> its row (row's time)", fromEnd, "<= 50 ms")
	summary("renewal write (request sent) -> its row (row's time)", fromStart, "<= 50 ms")
	summary("renewal write (response) -> its row read by the bench", fromEndRecv, "<= 50 ms")
	summary("stale deadline -> stale row (row's time)", staleDelay, "<= 1 s")
	summary("stale deadline -> stale row read by the bench", staleRecv, "<= 1 s")
	fmt.Printf("%-58s %s over %.0fs of watching (%d renewals)\n", "CPU time of the watch (user + system)",
		ms(cpu), watched.Seconds(), samples)
	return nil
}

// ---- an unreachable cluster ----

func blackhole(addr string, done <-chan struct{}) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	var mu sync.Mutex
	var held []net.Conn // kept open, never read or answered
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, conn)
			mu.Unlock()
		}
	}()
	<-done
	ln.Close()
	mu.Lock()
	for _, conn := range held {
		conn.Close()
	}
	mu.Unlock()
	return nil
}

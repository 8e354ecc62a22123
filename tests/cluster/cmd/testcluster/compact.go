package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// cmdCompact compacts the cluster's etcd at a new revision, through etcd's own HTTP gateway
// to its v3 API (no etcd client library, so tests/cluster/go.mod gains nothing): a put moves
// the revision past every resourceVersion handed out so far, and a physical compaction at it
// removes them all (a watch from any of them, which reads from the next revision, too).
func cmdCompact(dir string) int {
	if err := checkStateDir(dir); err != nil {
		return fail("%v", err)
	}
	url, err := etcdURL(dir)
	if err != nil {
		return fail("compact: %v", err)
	}
	key := base64.StdEncoding.EncodeToString([]byte("/testcluster/compact"))
	value := base64.StdEncoding.EncodeToString([]byte(time.Now().Format(time.RFC3339Nano)))
	var put struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	// Two writes: a watch from resourceVersion R reads from revision R+1, so the compaction
	// must pass R+1 for the last R handed out.
	for range 2 {
		if err := etcdCall(url+"/v3/kv/put", map[string]any{"key": key, "value": value}, &put); err != nil {
			return fail("compact: put: %v", err)
		}
	}
	if put.Header.Revision == "" {
		return fail("compact: etcd returned no revision")
	}
	if err := etcdCall(url+"/v3/kv/compaction", map[string]any{"revision": put.Header.Revision, "physical": true}, nil); err != nil {
		return fail("compact: %v", err)
	}
	fmt.Println(put.Header.Revision)
	return 0
}

// etcdURL is kube-apiserver's --etcd-servers, from DIR/kube-apiserver.json.
func etcdURL(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, apiserverName+".json"))
	if err != nil {
		return "", err
	}
	var spec apiserverSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return "", err
	}
	for _, a := range spec.Args {
		if v, ok := strings.CutPrefix(a, "--etcd-servers="); ok {
			return strings.Split(v, ",")[0], nil
		}
	}
	return "", errors.New("kube-apiserver has no --etcd-servers")
}

func etcdCall(url string, body any, out any) error {
	b, _ := json.Marshal(body)
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var raw bytes.Buffer
	_, _ = raw.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d: %s", url, resp.StatusCode, strings.TrimSpace(raw.String()))
	}
	if out != nil {
		return json.Unmarshal(raw.Bytes(), out)
	}
	return nil
}

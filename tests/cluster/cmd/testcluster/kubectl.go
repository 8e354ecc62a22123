package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// kubectl runs kubectl (TESTCLUSTER_KUBECTL, else kubectl on PATH) as admin against the
// cluster. The error carries kubectl's output.
func kubectl(kubeconfig string, args ...string) error {
	bin := os.Getenv("TESTCLUSTER_KUBECTL")
	if bin == "" {
		bin = "kubectl"
	}
	cmd := exec.CommandContext(shutdownCtx, bin, append([]string{"--kubeconfig", kubeconfig, "--context", "admin"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

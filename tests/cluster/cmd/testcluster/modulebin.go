package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
)

// moduleBinary is where the cache keeps the binary NAME built unoptimized from the Go module in
// modDir (an older kube-apiserver, a Kueue manager): NAME-noopt-HASH, HASH the first 12 hex
// digits of the SHA-256 of the module's go.mod and go.sum. So a change to what the module pins
// builds the binary again, on a machine whose cache holds the build of the old pins, instead of
// running that one.
func moduleBinary(cache, name, modDir string) (string, error) {
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(modDir, f))
		if err != nil {
			return "", err
		}
		h.Write([]byte(f + "\x00"))
		h.Write(b)
		h.Write([]byte{0})
	}
	return filepath.Join(cache, name+unoptimizedSuffix+"-"+hex.EncodeToString(h.Sum(nil))[:12]), nil
}

// removeOtherBuilds removes the cache's other builds of bin's NAME (older pins, or the
// unhashed NAME-noopt of before): a process running one keeps it open by its inode.
func removeOtherBuilds(bin string) {
	base := filepath.Base(bin)
	prefix := base[:strings.LastIndex(base, "-")]
	others, _ := filepath.Glob(filepath.Join(filepath.Dir(bin), prefix+"*"))
	for _, other := range others {
		rest := strings.TrimPrefix(filepath.Base(other), prefix)
		if other != bin && !strings.Contains(rest, ".tmp.") && (rest == "" || (len(rest) == 13 && rest[0] == '-')) {
			os.Remove(other)
		}
	}
}

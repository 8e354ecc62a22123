package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// reap is the hidden `_reap` subcommand, started detached by `start --owner-pid` (and by
// `run`, owning itself): it polls the owner every 200 ms and tears the cluster down once
// the owner is gone, however it died. A recycled pid is told apart by its start time.
// It exits quietly when the folder disappears (someone ran stop).
func reap(dir string, owner int, ownerStart string) int {
	for {
		if !exists(filepath.Join(dir, markerFile)) {
			return 0
		}
		if !alive(owner) || startTime(owner) != ownerStart {
			if err := teardown(dir); err != nil {
				fmt.Fprintln(os.Stderr, "testcluster reaper:", err)
				return 1
			}
			return 0
		}
		time.Sleep(200 * time.Millisecond)
	}
}

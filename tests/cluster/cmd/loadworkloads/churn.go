package main

// ---- a busy cluster: Workload statuses that keep changing (issue 21's P8) ----
//
// churn moves admitted Workloads of the load to dispatch's Pending check and back, at a fixed
// rate: in each round it moves -moves of them to Pending one write at a time (the count of
// Workloads waiting at the check goes up by one a write), then back in the same order (down by
// one a write). So every write has its own count, and a watcher's line that shows a count says
// which writes it reflects, even when the watcher folds several writes into one line.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// churner knows which Workloads of the load it moves: admitted ones (kind 2) from [from, to).
type churner struct {
	c          *client
	targets    [][2]string // namespace, name
	moves      int
	namespaces int
}

func newChurner(c *client, from, to, namespaces, waitingEvery, moves int) (*churner, error) {
	ch := &churner{c: c, moves: moves, namespaces: namespaces}
	now := time.Now()
	for i := from; i < to && len(ch.targets) < moves; i++ {
		if kindOf(i, waitingEvery) != 2 {
			continue
		}
		ns, name, _, _ := workload(i, namespaces, waitingEvery, now)
		ch.targets = append(ch.targets, [2]string{ns, name})
	}
	if len(ch.targets) < moves || moves < 1 {
		return nil, fmt.Errorf("churn: -moves %d, but [%d, %d) holds only %d admitted Workloads", moves, from, to, len(ch.targets))
	}
	return ch, nil
}

// write is one status change: the count of Workloads waiting at the check it leads to
// (relative to the count before churn began), when it was sent and when its response came.
type write struct {
	delta    int
	sent     time.Time
	answered time.Time
}

// move patches one Workload's status: to dispatch's Pending check (quota reserved, not
// admitted), or back to admitted with the check Ready.
func (ch *churner) move(t [2]string, pending bool, at time.Time) error {
	reserved := condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue "+clusterQueue, at)
	var status map[string]any
	if pending {
		status = map[string]any{
			"conditions": []any{reserved, condition("Admitted", "False", "UnsatisfiedChecks", "The workload has not all checks ready", at)},
			"admissionChecks": []any{map[string]any{"name": checkName, "state": "Pending",
				"message": "waiting for dispatch to place the workload on a worker cluster", "lastTransitionTime": at.UTC().Format(time.RFC3339)}},
		}
	} else {
		status = map[string]any{
			"conditions": []any{reserved, condition("Admitted", "True", "Admitted", "The workload is admitted", at)},
			"admissionChecks": []any{map[string]any{"name": checkName, "state": "Ready",
				"message": "placed on worker cluster gpu-0", "lastTransitionTime": at.UTC().Format(time.RFC3339)}},
		}
	}
	path := fmt.Sprintf("%s/namespaces/%s/workloads/%s/status", kueueAPI, t[0], t[1])
	_, err := ch.c.do("PATCH", path, "application/merge-patch+json", map[string]any{"status": status}, 200)
	return err
}

// run writes at rate per second for the duration (a whole number of rounds is not needed: it
// stops where the time ends, then puts every moved Workload back), and returns the writes.
func (ch *churner) run(rate float64, total time.Duration, done <-chan struct{}) ([]write, error) {
	if rate <= 0 {
		return nil, errors.New("churn: -rate must be above 0")
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	end := time.After(total)
	var writes []write
	step, delta := 0, 0
	for {
		select {
		case <-end:
			return writes, ch.restore(step)
		case <-done:
			return writes, ch.restore(step)
		case <-tick.C:
		}
		up := step < ch.moves
		t := ch.targets[step%ch.moves]
		sent := time.Now()
		if err := ch.move(t, up, sent); err != nil {
			return writes, err
		}
		if up {
			delta++
		} else {
			delta--
		}
		writes = append(writes, write{delta: delta, sent: sent, answered: time.Now()})
		step = (step + 1) % (2 * ch.moves)
	}
}

// restore puts back the Workloads still at the check when the next step of the round is step:
// targets [0, step) in the round's first half, [step-moves, moves) in its second.
func (ch *churner) restore(step int) error {
	lo, hi := 0, step
	if step > ch.moves {
		lo, hi = step-ch.moves, ch.moves
	}
	for i := lo; i < hi; i++ {
		if err := ch.move(ch.targets[i], false, time.Now()); err != nil {
			return err
		}
	}
	return nil
}

// countLine is a line of `gate --watch` that says how many Workloads wait at the check:
// "12:00:00Z 3 workloads wait at dispatch's Pending check".
var countLine = regexp.MustCompile(`(\d+) workloads? waits? at dispatch's Pending check`)

type seen struct {
	count int
	at    time.Time
}

// churnWatch runs the watch command, waits for its first count line, churns, and reports the
// command's CPU time and peak RSS, and (when its lines carry counts) each write's delay from
// its response to the first line that shows its count.
func churnWatch(ch *churner, argv []string, rate float64, total time.Duration, settle time.Duration) error {
	if len(argv) == 0 {
		return errors.New("churnwatch: give the watch command after --")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	var mu sync.Mutex
	var lines []seen
	var firstLine = make(chan struct{})
	var once sync.Once
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			now := time.Now()
			once.Do(func() { close(firstLine) })
			if m := countLine.FindSubmatch(sc.Bytes()); m != nil {
				n, _ := strconv.Atoi(string(m[1]))
				mu.Lock()
				lines = append(lines, seen{n, now})
				mu.Unlock()
			}
		}
	}()
	select {
	case <-firstLine:
	case <-time.After(10 * time.Minute):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return errors.New("churnwatch: the watch printed nothing in 10 minutes")
	}
	ready := time.Since(started)
	time.Sleep(settle) // the first list's pages and the watches' start
	mu.Lock()
	base := -1
	if len(lines) > 0 {
		base = lines[len(lines)-1].count
	}
	mu.Unlock()
	writes, err := ch.run(rate, total, nil)
	time.Sleep(2 * time.Second) // the last writes' lines
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	if err != nil {
		return err
	}
	st := cmd.ProcessState
	cpu := st.UserTime() + st.SystemTime()
	peak := int64(0)
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		peak = ru.Maxrss * 1024
	}
	fmt.Printf("%-58s %d writes over %s (%.1f a second; asked for %.1f)\n", "churn", len(writes), total,
		float64(len(writes))/total.Seconds(), rate)
	fmt.Printf("%-58s %s\n", "the watch's first line after", ms(ready))
	fmt.Printf("%-58s %s\n", "CPU time of the watch (user + system)", ms(cpu))
	fmt.Printf("%-58s %.1f MiB\n", "peak RSS of the watch", float64(peak)/(1<<20))
	if base < 0 {
		fmt.Printf("%-58s none (its lines carry no count)\n", "write (response) -> the line that shows it")
		return nil
	}
	mu.Lock()
	defer mu.Unlock()
	var delays []time.Duration
	missed := 0
	for _, w := range writes {
		want := base + w.delta
		found := false
		for _, l := range lines {
			if l.at.Before(w.sent) || l.count != want {
				continue
			}
			// The watch event can leave the server before the write's response does: a
			// line read before the response counts as no delay.
			d := l.at.Sub(w.answered)
			if d < 0 {
				d = 0
			}
			delays = append(delays, d)
			found = true
			break
		}
		if !found {
			missed++
		}
	}
	percentiles("write (response) -> the line that shows it", delays, "p50 <= 20 ms, p99 <= 100 ms")
	fmt.Printf("%-58s %d of %d (folded into a later line, or never shown)\n", "writes with no line of their count", missed, len(writes))
	return nil
}

func percentiles(what string, ds []time.Duration, goal string) {
	if len(ds) == 0 {
		fmt.Printf("%-58s no samples\n", what)
		return
	}
	sorted := append([]time.Duration(nil), ds...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a] < sorted[b] })
	at := func(p float64) time.Duration { return sorted[int(p*float64(len(sorted)-1)+0.5)] }
	fmt.Printf("%-58s p50 %9s   p99 %9s   max %9s   (n=%d; goal %s)\n", what, ms(at(0.5)), ms(at(0.99)),
		ms(sorted[len(sorted)-1]), len(sorted), goal)
}

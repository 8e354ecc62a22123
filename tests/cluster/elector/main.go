// Command testelector is a leader-election candidate for kubectl-dispatch's tests: it runs
// client-go's own leader election (k8s.io/client-go/tools/leaderelection with a LeaseLock),
// exactly as dispatch-admission does through controller-runtime, so the Lease the plugin
// judges is written by the real code, not by a fixture. Run it as
// `tests/cluster/testcluster elector ...`, which builds it. It is its own Go module so that
// its dependencies cannot move the versions the kube-apiserver build uses; client-go is pinned
// to the version of k8s.io/kubernetes in tests/cluster/go.mod.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

const usage = `usage:
  testcluster elector --namespace NS --name NAME [--identity ID] [--lease-duration D]
                      [--renew-deadline D] [--retry-period D] [--release-on-cancel]
                      [--kubeconfig PATH]
      campaign for the Lease NS/NAME with client-go's leader election (LeaseLock), as
      dispatch-admission does, and renew it while leading. Durations are Go durations (4s).
      --identity is the holderIdentity, conventionally <pod name>_<uid> (default: the host
      name and a random UUID). --lease-duration defaults to 15s, controller-runtime's
      default; --renew-deadline and --retry-period default to 2/3 and 2/15 of it, the ratios
      of controller-runtime's defaults (15s, 10s, 2s), so a short duration keeps their shape.
      --release-on-cancel releases the Lease (empty holder, duration 1s) when it stops.
      Prints one line per event on stdout:
        leading ID            this candidate acquired the Lease
        leader ID             the Lease's holder as observed (itself included)
        stopped leading       leadership ended (also when it never began)
        exit: CAUSE           the last line: terminated, interrupt, standard input closed,
                              or lost (leadership lost while running; exits 1)
      Stops on SIGTERM/SIGINT or when its standard input closes (the test that started it
      died): leader election's context is cancelled, which releases the Lease only with
      --release-on-cancel; then exits 0. A SIGKILL leaves the Lease as it was.
      klog's messages (client-go's own) go to stderr.
`

func main() { os.Exit(realMain(os.Args[1:])) }

// timings fills in the renew deadline and retry period a zero value leaves to the default.
func timings(duration, renew, retry time.Duration) (time.Duration, time.Duration, error) {
	if duration < time.Second {
		return 0, 0, fmt.Errorf("--lease-duration must be at least 1s (the Lease stores whole seconds), not %v", duration)
	}
	if renew == 0 {
		renew = duration * 2 / 3
	}
	if retry == 0 {
		retry = duration * 2 / 15
	}
	// client-go's own rules, checked here so the message names the flags.
	switch {
	case duration <= renew:
		return 0, 0, fmt.Errorf("--lease-duration (%v) must be greater than --renew-deadline (%v)", duration, renew)
	case float64(renew) <= leaderelection.JitterFactor*float64(retry):
		return 0, 0, fmt.Errorf("--renew-deadline (%v) must be greater than %v x --retry-period (%v)", renew, leaderelection.JitterFactor, retry)
	case retry < time.Millisecond:
		return 0, 0, fmt.Errorf("--retry-period must be at least 1ms, not %v", retry)
	}
	return renew, retry, nil
}

func realMain(args []string) int {
	fs := flag.NewFlagSet("testcluster elector", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file")
	namespace := fs.String("namespace", "", "the Lease's namespace")
	name := fs.String("name", "", "the Lease's name")
	identity := fs.String("identity", "", "holderIdentity")
	duration := fs.Duration("lease-duration", 15*time.Second, "lease duration")
	renew := fs.Duration("renew-deadline", 0, "renew deadline (default 2/3 of the lease duration)")
	retry := fs.Duration("retry-period", 0, "retry period (default 2/15 of the lease duration)")
	release := fs.Bool("release-on-cancel", false, "release the Lease when stopped")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "testcluster elector: "+format+"\n%s", append(a, usage)...)
		return 2
	}
	if fs.NArg() > 0 {
		return bad("unexpected arguments %q", fs.Args())
	}
	if *namespace == "" || *name == "" {
		return bad("--namespace and --name are required")
	}
	if *kubeconfig == "" {
		return bad("--kubeconfig or KUBECONFIG is required")
	}
	renewDeadline, retryPeriod, err := timings(*duration, *renew, *retry)
	if err != nil {
		return bad("%v", err)
	}
	if *identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return fail("%v", err)
		}
		*identity = host + "_" + uuid()
	}

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fail("%v", err)
	}
	config.UserAgent = "testelector/" + *identity
	client, err := coordinationv1.NewForConfig(config)
	if err != nil {
		return fail("%v", err)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: *namespace, Name: *name},
		Client:     client,
		LockConfig: resourcelock.ResourceLockConfig{Identity: *identity},
	}

	var mu sync.Mutex
	say := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", a...)
		_ = os.Stdout.Sync()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cause := make(chan string, 3)
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	go func() { cause <- (<-sigc).String() }()
	go func() {
		// A test that dies closes our stdin (a pipe it holds): we go with it.
		_, _ = io.Copy(io.Discard, os.Stdin)
		cause <- "standard input closed"
	}()
	why := "lost"
	go func() {
		c := <-cause
		mu.Lock()
		why = c
		mu.Unlock()
		cancel()
	}()

	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   *duration,
		RenewDeadline:   renewDeadline,
		RetryPeriod:     retryPeriod,
		ReleaseOnCancel: *release,
		Name:            *namespace + "/" + *name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { say("leading %s", *identity) },
			OnStoppedLeading: func() { say("stopped leading") },
			OnNewLeader:      func(id string) { say("leader %s", id) },
		},
	})
	if err != nil {
		return fail("%v", err)
	}
	// Run returns when the context is cancelled (after releasing, with --release-on-cancel)
	// or when leadership is lost (the renew deadline passed without a renewal).
	elector.Run(ctx)
	mu.Lock()
	defer mu.Unlock()
	if ctx.Err() == nil {
		// Leadership was lost while running: a controller-runtime manager exits with an
		// error then, and so does this.
		fmt.Println("exit: lost")
		return 1
	}
	fmt.Printf("exit: %s\n", why)
	return 0
}

func fail(format string, a ...any) int {
	fmt.Fprintf(os.Stderr, "testcluster elector: "+format+"\n", a...)
	return 1
}

// uuid is a random (version 4) UUID, as a controller's identity carries one per process.
func uuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

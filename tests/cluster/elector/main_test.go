package main

import (
	"testing"
	"time"
)

func TestTimings(t *testing.T) {
	for _, c := range []struct {
		duration, renew, retry time.Duration
		wantRenew, wantRetry   time.Duration
		wantErr                bool
	}{
		// controller-runtime's defaults, and the same ratios at 4s.
		{15 * time.Second, 0, 0, 10 * time.Second, 2 * time.Second, false},
		{4 * time.Second, 0, 0, 2666666666, 533333333, false},
		{4 * time.Second, 3 * time.Second, time.Second, 3 * time.Second, time.Second, false},
		{500 * time.Millisecond, 0, 0, 0, 0, true},
		{4 * time.Second, 4 * time.Second, 0, 0, 0, true},
		{4 * time.Second, 0, 3 * time.Second, 0, 0, true},
	} {
		renew, retry, err := timings(c.duration, c.renew, c.retry)
		if (err != nil) != c.wantErr || renew != c.wantRenew || retry != c.wantRetry {
			t.Errorf("timings(%v, %v, %v) = %v, %v, %v", c.duration, c.renew, c.retry, renew, retry, err)
		}
	}
}

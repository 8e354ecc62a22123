package main

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	good := "# HELP x_seconds A thing.\n# TYPE x_seconds gauge\nx_seconds{a=\"q\\\"\\\\\\n\"} 1.5\n"
	families, err := check([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(families) != 1 || families[0].Metrics[0].Labels["a"] != "q\"\\\n" || families[0].Metrics[0].Value != 1.5 {
		t.Fatalf("%+v", families)
	}
	for _, bad := range []string{
		"x_seconds 1",                                          // no line feed
		"# TYPE x gauge\nx{a=\"b} 1\n",                         // broken label
		"# TYPE x gauge\nx 1\n# TYPE x gauge\nx 2\n",           // family twice
		"# HELP x_total X.\n# TYPE x_total gauge\nx_total 1\n", // lint: gauge named like a counter
		"# TYPE x_seconds gauge\nx_seconds 1\n",                // lint: no HELP
	} {
		if _, err := check([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		} else if strings.TrimSpace(err.Error()) == "" {
			t.Errorf("empty error for %q", bad)
		}
	}
}

// Command metricscheck reads Prometheus text exposition (format 0.0.4) on stdin and checks it
// with Prometheus' own code: github.com/prometheus/common/expfmt's text parser (with the
// legacy metric-name rules a 0.0.4 scrape uses) and client_golang's promlint (the linter
// behind `promtool check metrics`). Any parse error or lint problem is printed on stderr and
// exits 1. Otherwise it prints the families as JSON on stdout, for the Rust tests to compare
// with the cluster:
//
//	[{"name": ..., "help": ..., "type": "GAUGE", "metrics": [{"labels": {...}, "value": 1}]}]
//
// Run it as `tests/cluster/testcluster metricscheck`, which builds it. It is its own Go
// module so that its dependencies cannot move the versions the kube-apiserver build uses.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

type metric struct {
	Labels map[string]string `json:"labels"`
	Value  float64           `json:"value"`
}

type family struct {
	Name    string   `json:"name"`
	Help    string   `json:"help"`
	Type    string   `json:"type"`
	Metrics []metric `json:"metrics"`
}

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: metricscheck < exposition.txt")
		os.Exit(2)
	}
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading stdin: %v", err)
	}
	families, err := check(input)
	if err != nil {
		fail("%v", err)
	}
	out, err := json.Marshal(families)
	if err != nil {
		fail("%v", err)
	}
	fmt.Println(string(out))
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "metricscheck: "+format+"\n", args...)
	os.Exit(1)
}

// check parses and lints one exposition; the families come back sorted by name.
func check(input []byte) ([]family, error) {
	if len(input) > 0 && input[len(input)-1] != '\n' {
		return nil, fmt.Errorf("the exposition does not end with a line feed")
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	parsed, err := parser.TextToMetricFamilies(bytes.NewReader(input))
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	problems, err := promlint.New(bytes.NewReader(input)).Lint()
	if err != nil {
		return nil, fmt.Errorf("lint: %w", err)
	}
	if len(problems) > 0 {
		var b bytes.Buffer
		for _, p := range problems {
			fmt.Fprintf(&b, "\n  %s: %s", p.Metric, p.Text)
		}
		return nil, fmt.Errorf("lint problems:%s", b.String())
	}
	families := make([]family, 0, len(parsed))
	for name, mf := range parsed {
		f := family{Name: name, Help: mf.GetHelp(), Type: mf.GetType().String()}
		if mf.Help == nil {
			return nil, fmt.Errorf("%s has no HELP line", name)
		}
		for _, m := range mf.Metric {
			f.Metrics = append(f.Metrics, metric{Labels: labels(m), Value: value(mf.GetType(), m)})
		}
		families = append(families, f)
	}
	sort.Slice(families, func(i, j int) bool { return families[i].Name < families[j].Name })
	return families, nil
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.Label {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func value(t dto.MetricType, m *dto.Metric) float64 {
	switch t {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}

// printcheck: kubectl's own printers on one JSON document, the oracle for the plugin's
// -o jsonpath and -o custom-columns. It reads the document on stdin, decodes it as kubectl
// decodes an object it read from the server (k8s.io/apimachinery's JSON: integers int64, other
// numbers float64), and prints what the printer prints on stdout, exit 0. On an error it prints
// one line on stderr, exit 1:
//
//	parse: MESSAGE      the template (or spec) does not parse
//	execute: MESSAGE    it parses, but evaluating it on the document fails
//
// A document with an "items" array is a list, printed as kubectl prints a list it read (custom
// columns: a row per item, aligned together). MESSAGE is client-go's own error text (for jsonpath: util/jsonpath's, without kubectl's
// debugging dump; for custom-columns: kubectl's CustomColumnsPrinter's).
//
// Usage: printcheck -o jsonpath=TEMPLATE|jsonpath-file=FILE|custom-columns=SPEC|custom-columns-file=FILE
//
//	[--allow-missing-template-keys=BOOL] [--no-headers] < document.json
//
// printcheck -o human-duration < nanoseconds: k8s.io/apimachinery's duration.HumanDuration
// (kubectl's AGE column) of each integer on stdin (nanoseconds, as a time.Duration holds them),
// one line each, the oracle of the plugin's durations in tables and messages.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/util/jsonpath"
	"k8s.io/kubectl/pkg/cmd/get"
)

func fail(kind string, err error) {
	// One line: the messages themselves never hold a newline, but a template may.
	fmt.Fprintf(os.Stderr, "%s: %s\n", kind, strings.TrimRight(err.Error(), "\n"))
	os.Exit(1)
}

func main() {
	output := flag.String("o", "", "the output format, as kubectl's -o")
	allowMissing := flag.Bool("allow-missing-template-keys", true, "as kubectl's flag")
	noHeaders := flag.Bool("no-headers", false, "as kubectl's flag")
	flag.Parse()
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("input", err)
	}
	if *output == "human-duration" {
		humanDurations(string(data))
		return
	}
	var doc map[string]interface{}
	if err := utiljson.Unmarshal(data, &doc); err != nil {
		fail("input", err)
	}
	format, arg, _ := strings.Cut(*output, "=")
	if strings.HasSuffix(format, "-file") {
		text, err := os.ReadFile(arg)
		if err != nil {
			fail("input", err)
		}
		arg = string(text)
		format = strings.TrimSuffix(format, "-file")
		if format == "custom-columns" {
			format = "custom-columns-file"
		}
	}
	var out bytes.Buffer
	switch format {
	case "jsonpath":
		j := jsonpath.New("out").AllowMissingKeys(*allowMissing)
		if err := j.Parse(arg); err != nil {
			fail("parse", err)
		}
		if err := j.Execute(&out, doc); err != nil {
			fail("execute", err)
		}
	case "custom-columns", "custom-columns-file":
		var p *get.CustomColumnsPrinter
		if format == "custom-columns" {
			p, err = get.NewCustomColumnsPrinterFromSpec(arg, unstructured.UnstructuredJSONScheme, *noHeaders)
		} else {
			p, err = get.NewCustomColumnsPrinterFromTemplate(strings.NewReader(arg), unstructured.UnstructuredJSONScheme)
			if p != nil {
				p.NoHeaders = *noHeaders
			}
		}
		if err != nil {
			fail("parse", err)
		}
		if err := p.PrintObj(object(doc), &out); err != nil {
			fail("execute", err)
		}
	default:
		fail("usage", fmt.Errorf("unknown output format %q", format))
	}
	os.Stdout.Write(out.Bytes())
}

// object is the document as kubectl holds what it read: a list (a document with an "items"
// array, as `kubectl get` lists objects) as an UnstructuredList, whose items the custom-columns
// printer prints a row each through its one tab writer; anything else as one object.
func object(doc map[string]interface{}) runtime.Object {
	items, ok := doc["items"].([]interface{})
	if !ok {
		return &unstructured.Unstructured{Object: doc}
	}
	list := &unstructured.UnstructuredList{Object: map[string]interface{}{}}
	for k, v := range doc {
		if k != "items" {
			list.Object[k] = v
		}
	}
	for _, item := range items {
		m, _ := item.(map[string]interface{})
		list.Items = append(list.Items, unstructured.Unstructured{Object: m})
	}
	return list
}

// humanDurations prints HumanDuration of each whitespace-separated count of nanoseconds.
func humanDurations(text string) {
	var out bytes.Buffer
	for _, field := range strings.Fields(text) {
		n, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			fail("input", err)
		}
		fmt.Fprintln(&out, duration.HumanDuration(time.Duration(n)))
	}
	os.Stdout.Write(out.Bytes())
}

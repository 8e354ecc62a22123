package main

import "testing"

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:6443":     "127.0.0.1:6443",
		"127.1.2.3:80":       "127.1.2.3:80",
		"localhost:6443":     "127.0.0.1:6443",
		"LocalHost:1":        "127.0.0.1:1",
		"[::1]:6443":         "[::1]:6443",
		"10.0.0.1:443":       "",
		"192.0.2.1:443":      "",
		"example.com:80":     "",
		"dispatch.test:6443": "127.0.0.1:6443",
		"API.Test:1":         "127.0.0.1:1",
		"test:1":             "",
		"[::]:80":            "",
		"0.0.0.0:80":         "",
		"127.0.0.1":          "",
	} {
		got, err := loopback(addr)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("loopback(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
}

package main

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// latency forwards each TCP connection accepted on addr to target and holds every chunk of
// bytes for delay in each direction: a cluster delay away (one way), at loopback bandwidth.
// It prints the address it listens on. The TCP handshake with the proxy itself is not
// delayed; everything after it (TLS, every request and response) is.
func latency(addr, target string, delay time.Duration, done <-chan struct{}) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go forward(conn, target, delay)
		}
	}()
	<-done
	return ln.Close()
}

func forward(client net.Conn, target string, delay time.Duration) {
	server, err := net.Dial("tcp", target)
	if err != nil {
		client.Close()
		return
	}
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			client.Close()
			server.Close()
		})
	}
	go delayed(server, client, delay, closeBoth)
	go delayed(client, server, delay, closeBoth)
}

// delayed copies src to dst, each chunk written delay after it was read.
func delayed(dst, src net.Conn, delay time.Duration, closeBoth func()) {
	type chunk struct {
		due time.Time
		b   []byte
	}
	chunks := make(chan chunk, 4096)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 64<<10)
			n, err := src.Read(buf)
			if n > 0 {
				chunks <- chunk{time.Now().Add(delay), buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range chunks {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	closeBoth()
}

package main

import (
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// link is one direction of the far link: a delay, and a bandwidth all connections share
// (bits per second; 0 is loopback's).
type link struct {
	delay time.Duration
	rate  float64
	mu    sync.Mutex
	free  time.Time // when the link has sent everything queued so far
}

// due reserves the link for n bytes read now and returns when they arrive at the far end:
// after the bytes queued before them have gone, their own transmission time, and the delay.
func (l *link) due(n int) time.Time {
	now := time.Now()
	if l.rate <= 0 {
		return now.Add(l.delay)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	start := l.free
	if start.Before(now) {
		start = now
	}
	l.free = start.Add(time.Duration(float64(n) * 8 / l.rate * float64(time.Second)))
	return l.free.Add(l.delay)
}

// latency forwards each TCP connection accepted on addr to target, each chunk of bytes held
// for delay in each direction and, with rate > 0, sent at no more than rate bits per second
// per direction: a cluster far away over a link of that bandwidth. It prints the address it
// listens on. With logPath, each connection appends "down=N up=M" (bytes from and to the
// target) to that file when it closes. The TCP handshake with the proxy is not delayed;
// everything after it (TLS, every request and response) is.
func latency(addr, target string, delay time.Duration, rate float64, logPath string, done <-chan struct{}) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	var log *os.File
	if logPath != "" {
		if log, err = os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return err
		}
		defer log.Close()
	}
	up, down := &link{delay: delay, rate: rate}, &link{delay: delay, rate: rate}
	fmt.Println(ln.Addr().String())
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go forward(conn, target, up, down, log)
		}
	}()
	<-done
	return ln.Close()
}

func forward(client net.Conn, target string, up, down *link, log *os.File) {
	server, err := net.Dial("tcp", target)
	if err != nil {
		client.Close()
		return
	}
	var once sync.Once
	var sent, received atomic.Int64
	closeBoth := func() {
		once.Do(func() {
			client.Close()
			server.Close()
			if log != nil {
				fmt.Fprintf(log, "down=%d up=%d\n", received.Load(), sent.Load())
			}
		})
	}
	go delayed(server, client, up, &sent, closeBoth)
	go delayed(client, server, down, &received, closeBoth)
}

// delayed copies src to dst over l, counting the bytes in moved.
func delayed(dst, src net.Conn, l *link, moved *atomic.Int64, closeBoth func()) {
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
				moved.Add(int64(n))
				chunks <- chunk{l.due(n), buf[:n]}
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

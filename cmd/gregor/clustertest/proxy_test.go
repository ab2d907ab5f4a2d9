package clustertest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer answers every line with the same line, on a real socket.
func echoServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, line string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	got, err := r.ReadString('\n')
	if err != nil || got != line+"\n" {
		t.Fatalf("echo of %q: %q, %v", line, got, err)
	}
}

// expectSilence checks that nothing arrives on c for a while: a cut proxy
// holds the bytes. (Only a broken proxy could make this fail.)
func expectSilence(t *testing.T, c net.Conn, r *bufio.Reader) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if got, err := r.ReadString('\n'); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read through a cut proxy: %q, %v; want a timeout", got, err)
	}
}

func TestProxyCutHoldsAndResumeDelivers(t *testing.T) {
	p, err := NewProxy("127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	roundTrip(t, c, r, "before")

	p.Cut()
	if !p.IsCut() {
		t.Fatal("IsCut false after Cut")
	}
	c.Write([]byte("during\n"))
	expectSilence(t, c, r)
	// A connection opened while cut is accepted but goes nowhere.
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	r2 := bufio.NewReader(c2)
	c2.Write([]byte("new\n"))
	expectSilence(t, c2, r2)

	p.Resume()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "during\n" {
		t.Fatalf("held bytes after Resume: %q, %v", got, err)
	}
	c2.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got, err := r2.ReadString('\n'); err != nil || got != "new\n" {
		t.Fatalf("connection opened while cut, after Resume: %q, %v", got, err)
	}
	roundTrip(t, c, r, "after")
}

func TestProxyDropAndClose(t *testing.T) {
	p, err := NewProxy("127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	roundTrip(t, c, r, "one")
	p.DropConnections()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("read on a dropped connection succeeded")
	}
	c.Close()

	// New connections still work after a drop; Close ends them, even cut.
	c, err = net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r = bufio.NewReader(c)
	roundTrip(t, c, r, "two")
	p.Cut()
	p.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.ReadString('\n'); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after Close: %v, want the connection closed", err)
	}
	if _, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Fatal("a closed proxy still accepts connections")
	}
}

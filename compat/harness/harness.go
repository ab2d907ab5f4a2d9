// Package harness starts the real gregor binary for process-level and
// compatibility tests: built once per test binary, run on a free loopback
// port with a temp data dir, killed with SIGKILL or stopped with SIGTERM.
package harness

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Binary builds cmd/gregor once and returns the path of the executable.
var Binary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "gregor-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "gregor")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/gregor-broker/gregor/cmd/gregor").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// ListeningRE matches the log line that reports a bound client listener.
var ListeningRE = regexp.MustCompile(`msg=listening listener=(?:SASL_)?(?:PLAINTEXT|SSL) addr=(\S+)`)

// listenerRE matches every bound listener's log line, with its name.
var listenerRE = regexp.MustCompile(`msg=listening listener=(\S+) addr=(\S+)`)

// Process is a running gregor binary.
type Process struct {
	Cmd  *exec.Cmd
	Addr string // host:port of the first client listener

	mu        sync.Mutex
	listeners map[string]string // name -> host:port, as logged
	Logs      string            // path of the captured stderr
}

// Start runs `gregor serve` on 127.0.0.1 with a free port and its data in
// dir, plus key=value overrides, and waits until it listens. The process
// is killed when the test ends.
func Start(t testing.TB, dir string, overrides ...string) *Process {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "log.dirs=" + dir}
	for _, o := range overrides {
		args = append(args, "--override", o)
	}
	cmd := exec.Command(bin, args...)
	// The broker dies with the test binary, even when a test times out.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs, err := os.CreateTemp(t.TempDir(), "gregor-log")
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{Cmd: cmd, Logs: logs.Name(), listeners: map[string]string{}}
	t.Cleanup(p.Kill)
	found := make(chan string, 1)
	go func() {
		defer logs.Close()
		sc := bufio.NewScanner(io.TeeReader(stderr, logs))
		for sc.Scan() {
			if m := listenerRE.FindStringSubmatch(sc.Text()); m != nil {
				p.mu.Lock()
				p.listeners[m[1]] = m[2]
				p.mu.Unlock()
			}
			if m := ListeningRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case p.Addr = <-found:
	case <-time.After(60 * time.Second):
		t.Fatalf("gregor did not start; logs in %s", p.Logs)
	}
	return p
}

// ListenerAddr waits for the listener called name (port 0 in its
// overrides, say) to be bound and returns its host:port.
func (p *Process) ListenerAddr(t testing.TB, name string) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		p.mu.Lock()
		addr, ok := p.listeners[name]
		p.mu.Unlock()
		if ok {
			return addr
		}
	}
	t.Fatalf("gregor logged no listener %s; logs in %s", name, p.Logs)
	return ""
}

// Kill ends the process with SIGKILL, as a crash would.
func (p *Process) Kill() {
	if p.Cmd.ProcessState == nil {
		p.Cmd.Process.Signal(syscall.SIGKILL)
		p.Cmd.Wait()
	}
}

// Stop ends the process with SIGTERM and returns its exit error.
func (p *Process) Stop() error {
	p.Cmd.Process.Signal(syscall.SIGTERM)
	return p.Cmd.Wait()
}

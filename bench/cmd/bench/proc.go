package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// server is one running broker process: Gregor, Apache Kafka or kfake.
type server struct {
	name    string // system name
	addr    string // client address, 127.0.0.1:port
	cmd     *exec.Cmd
	started time.Time // just before exec
	ready   time.Duration
	exited  chan struct{}
	logPath string
}

// cpuSeconds is the CPU time the server's process has used.
func (s *server) cpuSeconds() float64 { return cpuSecondsOf(s.cmd.Process.Pid) }

// cpuSecondsOf is the CPU time a process has used, all its threads (live
// and exited) together, read from its CPU-time clock in nanoseconds:
// /proc/<pid>/stat counts in 10 ms ticks, too coarse for a consume that
// lasts a tenth of a second.
func cpuSecondsOf(pid int) float64 {
	clock := uintptr(^pid<<3 | 2) // the kernel's MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clock, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}

// memKB reads VmRSS and VmHWM (KiB) from /proc/<pid>/status.
func (s *server) memKB() (rss, hwm int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			rss = n
		case "VmHWM":
			hwm = n
		}
	}
	return rss, hwm
}

// openFiles counts the process's open file descriptors.
func (s *server) openFiles() int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid))
	return len(ents)
}

// stop asks the process to end (SIGTERM), and kills it after a grace period.
func (s *server) stop() {
	if s == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(60 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// kill9 kills the process with SIGKILL and waits for it.
func (s *server) kill9() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// startProcess execs cmd and waits until the broker answers a Metadata
// request listing itself; ready is the time from exec to that answer.
func startProcess(name, addr string, cmd *exec.Cmd, logPath string, timeout time.Duration) (*server, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s := &server{name: name, addr: addr, cmd: cmd, exited: make(chan struct{}), logPath: logPath}
	s.started = time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() { _ = cmd.Wait(); logf.Close(); close(s.exited) }()
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-s.exited:
			return nil, fmt.Errorf("%s exited during start-up; see %s", name, logPath)
		default:
		}
		if probeReady(addr) == nil {
			s.ready = time.Since(s.started)
			return s, nil
		}
		if time.Now().After(deadline) {
			s.kill9()
			return nil, fmt.Errorf("%s did not answer within %s; see %s", name, timeout, logPath)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

var errNotReady = errors.New("not ready")

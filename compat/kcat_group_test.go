package compat

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
)

// kcatMember is a `kcat -G` process: librdkafka's balanced consumer,
// printing each value it consumes on a line and riding out broker restarts
// (-E). Offsets are auto-committed every 5 s (kcat applies -X
// auto.commit.interval.ms to the legacy topic property, not the consumer's,
// so librdkafka's default stays) and on a clean exit.
type kcatMember struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when stdout is drained

	mu     sync.Mutex
	stderr bytes.Buffer
}

func (k *kcatMember) Write(b []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.stderr.Write(b)
}

func startKcatMember(t *testing.T, addr, name, group, topic string, seen *consumed, config ...string) *kcatMember {
	t.Helper()
	args := []string{"-b", addr, "-G", group, "-u", "-E", "-f", "%s\\n",
		"-X", "client.id=" + name,
		"-X", "auto.offset.reset=earliest",
		"-X", "heartbeat.interval.ms=200",
		"-X", "session.timeout.ms=6000",
		"-X", "fetch.wait.max.ms=100",
	}
	for _, c := range config {
		args = append(args, "-X", c)
	}
	k := &kcatMember{name: name, done: make(chan struct{})}
	k.cmd = exec.Command("kcat", append(args, topic)...)
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	k.cmd.Stderr = k
	stdout, err := k.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(k.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			seen.add(name, sc.Text())
		}
	}()
	t.Cleanup(func() {
		k.signal(syscall.SIGKILL)
		if t.Failed() {
			k.mu.Lock()
			t.Logf("%s stderr:\n%s", name, k.stderr.String())
			k.mu.Unlock()
		}
	})
	return k
}

// signal sends sig and waits for the process to exit.
func (k *kcatMember) signal(sig os.Signal) error {
	if k.cmd.ProcessState != nil {
		return nil
	}
	k.cmd.Process.Signal(sig)
	<-k.done
	return k.cmd.Wait()
}

// TestKcatGroup runs two `kcat -G` processes over a 4-partition topic with
// librdkafka's default eager assignors (range, roundrobin) and with
// cooperative-sticky: every record once across both, offsets committed at
// the end, and when one exits cleanly the other takes every partition.
func TestKcatGroup(t *testing.T) {
	version := kcatVersion(t)
	p := harness.Start(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	for _, c := range []struct{ assignor, protocol string }{
		{"range,roundrobin", "range"},
		{"cooperative-sticky", "cooperative-sticky"},
	} {
		t.Run(c.protocol, func(t *testing.T) {
			t.Parallel()
			// Each case is the group and commit columns of kcat's row.
			defer func() {
				record(kcatClientName, version, "group", !t.Failed(), failedNote(t))
				record(kcatClientName, version, "commit", !t.Failed(), failedNote(t))
			}()
			topic, group := "kcat-g-"+c.protocol, "kcat-group-"+c.protocol
			adm := newAdmin(t, p.Addr)
			createTopic(t, adm, topic)
			seen := newConsumed()
			strategy := "partition.assignment.strategy=" + c.assignor
			k1 := startKcatMember(t, p.Addr, "k1", group, topic, seen, strategy)
			k2 := startKcatMember(t, p.Addr, "k2", group, topic, seen, strategy)
			g := waitStableSplit(t, adm, group, topic, 2)
			if got := byClient(g, topic); len(got["k1"]) != 2 || len(got["k2"]) != 2 {
				t.Fatalf("assignment %v, want two partitions each", got)
			}
			if g.Protocol != c.protocol {
				t.Errorf("protocol %q, want %q", g.Protocol, c.protocol)
			}

			first := produceSpread(t, p.Addr, topic, "first", 25)
			waitFor(t, "every record consumed", 20*time.Second, func() bool { return seen.has(first) })
			waitCommittedAtEnd(t, adm, group, topic)
			seen.checkExactlyOnce(t, first)
			if n := seen.members(); n != 2 {
				t.Errorf("%d kcat processes consumed records, want both", n)
			}

			// k2 exits cleanly (SIGTERM: commit, LeaveGroup).
			if err := k2.signal(syscall.SIGTERM); err != nil {
				t.Fatalf("k2 exit: %v", err)
			}
			waitFor(t, "k1 holding every partition alone", 25*time.Second, func() bool {
				g := describe(t, adm, group)
				return g.State == "Stable" && len(g.Members) == 1 && len(byClient(g, topic)["k1"]) == groupPartitions
			})
			second := produceSpread(t, p.Addr, topic, "second", 25)
			waitFor(t, "records produced after k2 left consumed", 20*time.Second, func() bool { return seen.has(second) })
			waitCommittedAtEnd(t, adm, group, topic)
			seen.checkExactlyOnce(t, append(first, second...))
			if err := k1.signal(syscall.SIGTERM); err != nil {
				t.Fatalf("k1 exit: %v", err)
			}
			waitFor(t, "the group empty", 20*time.Second, func() bool { return describe(t, adm, group).State == "Empty" })
			checkEmptyConsumerGroup(t, adm, group)
			if got := committed(t, adm, group, topic); len(got) != groupPartitions || got[1] != 50 || got[2] != 50 {
				t.Fatalf("committed offsets %v after both exited, want 50 on each partition", got)
			}
		})
	}
}

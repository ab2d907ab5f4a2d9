package clustertest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/gregor-broker/gregor/internal/freeport"
)

// DefaultOverrides are the settings every test cluster runs with, before
// Options.Overrides: Kafka's cluster keys with timeouts short enough that
// a dead or paused node is noticed within seconds.
var DefaultOverrides = []string{
	"min.insync.replicas=2",
	"default.replication.factor=3",
	"offsets.topic.replication.factor=3",
	"offsets.topic.num.partitions=3",
	"replica.lag.time.max.ms=3000",
	"broker.session.timeout.ms=3000",
	"broker.heartbeat.interval.ms=500",
	"replica.fetch.wait.max.ms=200",
}

// startTimeout bounds how long a node may take to bind its listener.
const startTimeout = 60 * time.Second

// Options shape a test cluster.
type Options struct {
	Nodes     int      // how many voters, broker and controller; 3 when zero
	Proxy     bool     // put a Proxy in front of every PLAINTEXT listener and advertise it
	Overrides []string // key=value for every node, after DefaultOverrides
	LogDirs   int      // log dirs per node: 1 when zero, Dir itself; more are Dir/logs-1, Dir/logs-2, …

	// Properties, when set, names each node's server.properties (index
	// 0 for node 1); the harness's own keys override the file's.
	Properties []string

	// DynamicQuorum gives the nodes controller.quorum.bootstrap.servers
	// instead of controller.quorum.voters, as Kafka 4's docs configure a
	// cluster whose dirs kafka-storage format --initial-controllers
	// prepared (Configure, format, then Launch).
	DynamicQuorum bool

	// DedicatedControllers gives the voters the controller role alone,
	// and Brokers adds that many nodes with the broker role alone (ids
	// after the voters'): Kafka's production layout.
	DedicatedControllers bool
	Brokers              int
}

// Cluster is a set of gregor processes that form one cluster.
type Cluster struct {
	t         testing.TB
	Nodes     []*Node
	opts      Options
	base      string
	voters    string // controller.quorum.voters of every node
	bootstrap string // or controller.quorum.bootstrap.servers (Options.DynamicQuorum)
}

// Node is one gregor process of a Cluster. Its ports and log dir stay the
// same across restarts.
type Node struct {
	ID             int32
	Dir            string   // the first of LogDirs, where the metadata is kept
	LogDirs        []string // log.dirs
	Port           int      // PLAINTEXT listener
	ControllerPort int      // CONTROLLER listener
	roles          string   // process.roles, before any override (hasRole: after)
	Proxy          *Proxy   // in front of Port when Options.Proxy, else nil
	LogPath        string   // every start's stderr, appended

	args []string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when the current process has exited
	waitErr *error        // the current process's exit error, set before done closes
	paused  bool
	starts  int
	logFrom int64 // size of LogPath when the current process started
}

// Start runs a cluster of opts.Nodes gregor processes on 127.0.0.1 and
// waits until each one listens. Every process is killed when the test
// ends; if the test failed, the tail of each node's log is printed first.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c := Configure(t, opts)
	c.Launch(t)
	return c
}

// Launch starts every configured node and waits until each one listens.
func (c *Cluster) Launch(t testing.TB) {
	t.Helper()
	for _, n := range c.Nodes {
		if err := n.start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range c.Nodes {
		if err := n.waitListening(startTimeout); err != nil {
			t.Fatal(err)
		}
	}
}

// Configure picks the ports and dirs of a cluster and registers its
// cleanup, without starting any process.
func Configure(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if _, err := Binary(); err != nil {
		t.Fatal(err)
	}
	n := opts.Nodes
	if n == 0 {
		n = 3
	}
	perNode := 2
	if opts.Proxy {
		perNode = 3
	}
	ports, err := freeport.Ports((n + opts.Brokers) * perNode)
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, opts: opts, base: t.TempDir()}
	voterRoles := rolesCombined
	if opts.DedicatedControllers {
		voterRoles = rolesController
	}
	var voters, bootstrap []string
	for i := 0; i < n+opts.Brokers; i++ {
		roles := voterRoles
		if i >= n {
			roles = rolesBroker
		}
		node, err := c.newNode(int32(i+1), roles, ports[i*perNode:(i+1)*perNode])
		if err != nil {
			t.Fatal(err)
		}
		if i < n {
			voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", node.ID, node.ControllerPort))
			bootstrap = append(bootstrap, fmt.Sprintf("127.0.0.1:%d", node.ControllerPort))
		}
		c.Nodes = append(c.Nodes, node)
	}
	c.voters, c.bootstrap = strings.Join(voters, ","), strings.Join(bootstrap, ",")
	for _, node := range c.Nodes {
		c.setArgs(node)
	}
	// Cleanups run last-registered first: the processes die before the
	// temp dir (registered above) is removed.
	t.Cleanup(func() {
		if t.Failed() {
			kept := keepLogs(t, c.Nodes)
			for _, node := range c.Nodes {
				t.Logf("node %d log (%s), last lines:\n%s", node.ID, node.LogPath, Tail(node.LogPath, 40))
			}
			if kept != "" {
				t.Logf("the nodes' whole logs are kept in %s", kept)
			}
		}
		for _, node := range c.Nodes {
			node.Kill()
			if node.Proxy != nil {
				node.Proxy.Close()
			}
		}
	})
	return c
}

// keepLogs copies a failed test's node logs out of its temp dir, which is
// removed after it, into a directory of their own under the system's temp
// dir, and returns that directory ("" if nothing could be kept).
func keepLogs(t testing.TB, nodes []*Node) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	dir, err := os.MkdirTemp("", "gregor-failed-"+name+"-")
	if err != nil {
		return ""
	}
	for _, node := range nodes {
		if b, err := os.ReadFile(node.LogPath); err == nil {
			os.WriteFile(filepath.Join(dir, filepath.Base(node.LogPath)), b, 0o644)
		}
	}
	return dir
}

// The process.roles of a node.
const (
	rolesCombined   = "broker,controller"
	rolesController = "controller"
	rolesBroker     = "broker"
)

// newNode picks node id's dirs; ports are its PLAINTEXT and CONTROLLER
// ports and, with Options.Proxy, its proxy's.
func (c *Cluster) newNode(id int32, roles string, ports []int) (*Node, error) {
	dir := filepath.Join(c.base, fmt.Sprintf("node%d", id))
	logDirs := []string{dir}
	if c.opts.LogDirs > 1 {
		logDirs = nil
		for j := range c.opts.LogDirs {
			logDirs = append(logDirs, filepath.Join(dir, fmt.Sprintf("logs-%d", j+1)))
		}
	}
	node := &Node{
		ID:             id,
		Dir:            logDirs[0],
		LogDirs:        logDirs,
		Port:           ports[0],
		ControllerPort: ports[1],
		roles:          roles,
		LogPath:        filepath.Join(c.base, fmt.Sprintf("node%d.log", id)),
	}
	if c.opts.Proxy {
		p, err := NewProxy(fmt.Sprintf("127.0.0.1:%d", ports[2]), node.directAddr())
		if err != nil {
			return nil, err
		}
		node.Proxy = p
	}
	return node, nil
}

// Properties are node's settings, as key=value lines of a
// server.properties (without Options.Properties' files).
func (c *Cluster) Properties(node *Node) []string {
	quorum := "controller.quorum.voters=" + c.voters
	if c.opts.DynamicQuorum {
		quorum = "controller.quorum.bootstrap.servers=" + c.bootstrap
	}
	client := "PLAINTEXT://127.0.0.1:" + strconv.Itoa(node.Port)
	controller := "CONTROLLER://127.0.0.1:" + strconv.Itoa(node.ControllerPort)
	listeners := client + "," + controller
	switch node.roles {
	case rolesController:
		listeners = controller
	case rolesBroker:
		listeners = client
	}
	kv := []string{
		"node.id=" + strconv.Itoa(int(node.ID)),
		"process.roles=" + node.roles,
		"listeners=" + listeners,
		"controller.listener.names=CONTROLLER",
		quorum,
		"log.dirs=" + strings.Join(node.LogDirs, ","),
	}
	if node.roles != rolesController {
		kv = append(kv, "advertised.listeners=PLAINTEXT://"+node.Addr())
	}
	kv = append(kv, DefaultOverrides...)
	return append(kv, c.opts.Overrides...)
}

func (c *Cluster) setArgs(node *Node) {
	node.args = []string{"serve"}
	if i := int(node.ID) - 1; i < len(c.opts.Properties) {
		node.args = append(node.args, c.opts.Properties[i])
	}
	for _, o := range c.Properties(node) {
		node.args = append(node.args, "--override", o)
	}
}

// AddNode starts one more node, broker and controller, that is not in
// controller.quorum.voters: it joins the quorum as an observer, to be
// made a voter with AddRaftVoter (kafka-metadata-quorum add-controller).
// overrides (key=value) come after the cluster's settings.
func (c *Cluster) AddNode(t testing.TB, overrides ...string) *Node {
	t.Helper()
	return c.addNode(t, rolesCombined, overrides)
}

// AddController starts one more node with the controller role alone, a
// dedicated controller as Kafka's production clusters run them. As
// AddNode's, it is not a voter: it follows the quorum as an observer until
// AddRaftVoter makes it one. It has no client listener (Addr names none).
func (c *Cluster) AddController(t testing.TB) *Node {
	t.Helper()
	return c.addNode(t, rolesController, nil)
}

func (c *Cluster) addNode(t testing.TB, roles string, overrides []string) *Node {
	t.Helper()
	perNode := 2
	if c.opts.Proxy {
		perNode = 3
	}
	ports, err := freeport.Ports(perNode)
	if err != nil {
		t.Fatal(err)
	}
	node, err := c.newNode(int32(len(c.Nodes)+1), roles, ports)
	if err != nil {
		t.Fatal(err)
	}
	c.setArgs(node)
	for _, o := range overrides {
		node.args = append(node.args, "--override", o)
	}
	c.Nodes = append(c.Nodes, node)
	if err := node.start(); err != nil {
		t.Fatal(err)
	}
	if err := node.waitListening(startTimeout); err != nil {
		t.Fatal(err)
	}
	return node
}

// Binary is the gregor executable the nodes run: $GREGOR_BINARY when set
// (a binary built once for a long chaos run), else cmd/gregor built once
// per test binary by compat/harness.
func Binary() (string, error) {
	if bin := os.Getenv("GREGOR_BINARY"); bin != "" {
		return bin, nil
	}
	return harness.Binary()
}

// Seeds are the client addresses of every node with the broker role,
// for kgo.SeedBrokers.
func (c *Cluster) Seeds() []string {
	var s []string
	for _, n := range c.Nodes {
		if n.broker() {
			s = append(s, n.Addr())
		}
	}
	return s
}

// Node returns the node with the given id, or fails the test.
func (c *Cluster) Node(id int32) *Node {
	for _, n := range c.Nodes {
		if n.ID == id {
			return n
		}
	}
	c.t.Fatalf("no node %d in the cluster", id)
	return nil
}

// Running are the nodes whose process runs and is not paused.
func (c *Cluster) Running() []*Node {
	var out []*Node
	for _, n := range c.Nodes {
		if n.State() == StateRunning {
			out = append(out, n)
		}
	}
	return out
}

// Addr is where clients reach the node: its proxy if it has one.
func (n *Node) Addr() string {
	if n.Proxy != nil {
		return n.Proxy.Addr()
	}
	return n.directAddr()
}

func (n *Node) directAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port)) }

// NodeState is what a node's process is doing.
type NodeState int

const (
	StateDown    NodeState = iota // never started, killed or stopped
	StateRunning                  // running
	StatePaused                   // stopped with SIGSTOP
)

func (s NodeState) String() string {
	return [...]string{"down", "running", "paused"}[s]
}

// State reports whether the node runs, is paused or is down.
func (n *Node) State() NodeState {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stateLocked()
}

func (n *Node) stateLocked() NodeState {
	if n.done == nil {
		return StateDown
	}
	select {
	case <-n.done:
		return StateDown
	default:
	}
	if n.paused {
		return StatePaused
	}
	return StateRunning
}

// start launches the process, appending its stderr to LogPath.
func (n *Node) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stateLocked() != StateDown {
		return fmt.Errorf("node %d: start while %s", n.ID, n.stateLocked())
	}
	bin, err := Binary()
	if err != nil {
		return err
	}
	logs, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logs.Close() // the child holds its own copy
	from, err := logs.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	n.starts++
	fmt.Fprintf(logs, "=== clustertest: start %d of node %d at %s\n", n.starts, n.ID, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(bin, n.args...)
	cmd.Stdout = logs
	cmd.Stderr = logs
	// The node dies with the test binary, even when a test times out.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("node %d: %w", n.ID, err)
	}
	done, waitErr := make(chan struct{}), new(error)
	go func() {
		*waitErr = cmd.Wait()
		close(done)
	}()
	n.cmd, n.done, n.waitErr, n.paused, n.logFrom = cmd, done, waitErr, false, from
	return nil
}

// waitListening polls the node's log (from this start on) until it
// reports the PLAINTEXT listener bound at its port, so that a port taken
// meanwhile by another process is not mistaken for the node, and fails
// early when the process exits.
func (n *Node) waitListening(timeout time.Duration) error {
	n.mu.Lock()
	done, from := n.done, n.logFrom
	n.mu.Unlock()
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-done:
			return fmt.Errorf("node %d exited while starting:\n%s", n.ID, Tail(n.LogPath, 30))
		default:
		}
		if n.loggedListening(from) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d not listening on %s after %v:\n%s", n.ID, n.listenAddr(), timeout, Tail(n.LogPath, 30))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// loggedListening reports whether the log past offset from has the
// broker's line for a PLAINTEXT listener bound at the node's port.
func (n *Node) loggedListening(from int64) bool {
	re := harness.ListeningRE
	if !n.broker() {
		re = controllerListeningRE
	}
	return n.logged(from, func(line string) bool {
		m := re.FindStringSubmatch(line)
		return m != nil && m[1] == n.listenAddr()
	})
}

// controllerListeningRE matches the log line of a bound CONTROLLER listener.
var controllerListeningRE = regexp.MustCompile(`msg=listening listener=CONTROLLER addr=(\S+)`)

// listenAddr is the listener whose "listening" log line says the node
// started: its client listener, or a dedicated controller's CONTROLLER one.
func (n *Node) listenAddr() string {
	if !n.broker() {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.ControllerPort))
	}
	return n.directAddr()
}

// Registered reports whether the node, in the process running now, has
// registered with the controller as a broker. A node restarted after a
// kill registers only once the controller ended its previous process's
// session (DUPLICATE_BROKER_REGISTRATION until then, as in Kafka);
// meanwhile Metadata still names that process's partitions' leaders.
func (n *Node) Registered() bool {
	n.mu.Lock()
	from := n.logFrom
	n.mu.Unlock()
	return n.logged(from, func(line string) bool { return strings.Contains(line, `msg="registered with the controller"`) })
}

// broker reports whether the node has the broker role.
func (n *Node) broker() bool { return n.hasRole(rolesBroker) }

// hasRole reports whether the node's process.roles, overrides included,
// name role.
func (n *Node) hasRole(role string) bool {
	roles := ""
	for _, a := range n.args {
		if r, ok := strings.CutPrefix(a, "process.roles="); ok {
			roles = r
		}
	}
	return slices.Contains(strings.Split(roles, ","), role)
}

// logged reports whether a line of the log past offset from matches.
func (n *Node) logged(from int64, match func(line string) bool) bool {
	f, err := os.Open(n.LogPath)
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return false
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if match(sc.Text()) {
			return true
		}
	}
	return false
}

// Restart starts a node that is down again, with the same dir, ports and
// settings, and waits until it listens.
func (n *Node) Restart() error {
	if err := n.start(); err != nil {
		return err
	}
	return n.waitListening(startTimeout)
}

// Kill ends the process with SIGKILL, as a crash would, and waits for it
// to be gone. Killing a node that is down does nothing.
func (n *Node) Kill() {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if done == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Stop ends the process with SIGTERM (a clean shutdown: Kafka's controlled
// shutdown in a cluster) and returns its exit error. A paused node is
// continued so that it can act on the signal. After timeout it gets
// SIGQUIT, so that the Go runtime writes every goroutine's stack to its
// log (returned in the error: the log goes with the test's directory),
// and is then killed.
func (n *Node) Stop(timeout time.Duration) error {
	n.mu.Lock()
	cmd, done, waitErr, paused := n.cmd, n.done, n.waitErr, n.paused
	n.paused = false
	n.mu.Unlock()
	if done == nil {
		return errors.New("node was never started")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if paused {
		cmd.Process.Signal(syscall.SIGCONT)
	}
	select {
	case <-done:
		return *waitErr
	case <-time.After(timeout):
		cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
		n.Kill()
		return fmt.Errorf("node %d did not exit within %v of SIGTERM; its goroutines at SIGQUIT:\n%s", n.ID, timeout, Tail(n.LogPath, 3000))
	}
}

// Pause freezes the process with SIGSTOP: its sockets stay open but it
// answers nothing, like a node in a long GC pause or a hung disk. It
// returns once the kernel reports every thread of the process stopped.
func (n *Node) Pause() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stateLocked() != StateRunning {
		return nil
	}
	if err := n.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("node %d: SIGSTOP: %w", n.ID, err)
	}
	n.paused = true
	return waitThreads(n.cmd.Process.Pid, true)
}

// Resume continues a paused process with SIGCONT and returns once no
// thread of it is stopped.
func (n *Node) Resume() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stateLocked() != StatePaused {
		return nil
	}
	if err := n.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("node %d: SIGCONT: %w", n.ID, err)
	}
	n.paused = false
	return waitThreads(n.cmd.Process.Pid, false)
}

// waitThreads polls /proc until every thread of pid is stopped (state T)
// or none is.
func waitThreads(pid int, stopped bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		all, none, err := threadStates(pid)
		if err != nil || (stopped && all) || (!stopped && none) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d: threads not all %s after 10s", pid, map[bool]string{true: "stopped", false: "running"}[stopped])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// threadStates reads /proc/pid/task/*/stat and reports whether all
// threads, or none, are in state T (stopped by a signal).
func threadStates(pid int) (all, none bool, err error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(tasks) == 0 {
		return false, false, fmt.Errorf("pid %d: no threads in /proc (%v)", pid, err)
	}
	all, none = true, true
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread exited
		}
		// The state follows the command name, which is in parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) {
			continue
		}
		if b[i+2] == 'T' {
			none = false
		} else {
			all = false
		}
	}
	return all, none, nil
}

// Pid is the process id of the current process, or 0.
func (n *Node) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stateLocked() == StateDown {
		return 0
	}
	return n.cmd.Process.Pid
}

// Tail returns the last n lines of a file, or why it could not be read.
func Tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 2*n {
			lines = append(lines[:0], lines[len(lines)-n:]...)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

package broker

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gregor-broker/gregor/acl"
	"github.com/gregor-broker/gregor/internal/loglevel"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/gregor-broker/gregor/quota"
)

// Broker is one Gregor node: its listeners, its log dirs and the topics in
// them. New starts serving; Close stops.
type Broker struct {
	cfg    Config
	logger *slog.Logger
	// loggers are the named loggers whose levels change at runtime
	// (broker_loggers.go); logger is their root.
	loggers          *loglevel.Levels
	requestLogger    *slog.Logger // kafka.request.logger (request_logger.go)
	authorizerLogger *slog.Logger // kafka.authorizer.logger (authorizer_logger.go)

	dirs *logstore.Dirs
	// voterDirectoryID is a single node's directory id as the only voter
	// of its quorum: its metadata dir's (DescribeQuorum).
	voterDirectoryID [16]byte
	// cleanerThrottle is log.cleaner.io.max.bytes.per.second, shared by
	// the dirs' cleaners (applyDirSettings).
	cleanerThrottle *logstore.IOThrottle
	throttles       throttles // replication and log-dir moves (replication_throttle.go)
	meta            *metaStore
	live            liveConfig // cfg with the dynamic broker configs applied
	topics          *topicRegistry
	sessions        *fetchSessionCache
	producerIDs     *producerIDAllocator
	groups          *groupCoordinator
	txns            *txnCoordinator
	// Share groups (KIP-932): the share coordinator's state topic, the
	// share-partitions led here, and the members' share sessions.
	shareState    *shareStateCoordinator
	shares        *sharePartitions
	shareSessions *shareSessions
	quotas        *quota.Manager
	requestMemory *requestMemory                 // queued.max.request.bytes; nil: no limit
	authorizer    atomic.Pointer[acl.Authorizer] // nil without authorizer.class.name
	raftStreams   raftStreams                    // handed to the controller, rechecked as the ACLs change
	cluster       *cluster                       // nil on a single node
	registry      map[int16]handler              // the client listeners' handlers
	// controllerRegistry is the CONTROLLER listener's (registry_controller.go).
	controllerRegistry map[int16]handler
	ready              chan struct{} // closed once New has set everything up
	// serving is closed once client requests are answered: at start on a
	// single node; in a cluster once the broker has caught up with the
	// metadata (cluster.go), as Kafka enables request processing only
	// after its initial catch-up.
	serving     chan struct{}
	servingOnce sync.Once
	fatal       chan error // why the broker must halt (log_dir_failure.go)
	// stopTokens ends a single node's expired-token removal.
	stopTokens chan struct{}

	listeners []*listener
	wg        sync.WaitGroup

	mu    sync.Mutex // guards conns, opening and closed
	conns map[*conn]struct{}
	// opening are the accepted sockets not yet a conn: their TLS
	// handshake, or the read of their first bytes (raft's or a client's),
	// is under way; a stop closes them rather than waiting for it.
	opening map[net.Conn]struct{}
	// connCounts are the connections per address (connlimits.go).
	connCounts connCounts
	closed     bool
}

type listener struct {
	name       string
	ln         net.Listener
	controller bool // the CONTROLLER listener: raft and the controller's APIs
	raft       bool // a broker-only node's client listener that raft streams come to too
	security   ListenerSecurity
}

// New opens the log dirs (recovering them if the last shutdown was not
// clean), binds every client listener and starts accepting connections.
func New(cfg Config, logger *slog.Logger) (*Broker, error) {
	return NewContext(context.Background(), cfg, logger)
}

// NewContext is New, given up when ctx ends while a node of a cluster
// waits for its controller quorum (which may never answer).
func NewContext(ctx context.Context, cfg Config, logger *slog.Logger) (*Broker, error) {
	if logger == nil {
		logger = slog.Default()
	}
	if cfg.values == nil {
		return nil, errors.New("broker: config must come from DefaultConfig or ParseConfig")
	}
	loggers := loglevel.New(logger.Handler())
	loggers.Logger(kafkaLoggerName)
	loggers.Logger(apacheLoggerName)
	b := &Broker{cfg: cfg, logger: loggers.Logger(loglevel.Root), loggers: loggers, requestLogger: loggers.LoggerAt(requestLoggerName, "WARN"),
		authorizerLogger: loggers.LoggerAt(authorizerLoggerName, "INFO"), conns: map[*conn]struct{}{}, opening: map[net.Conn]struct{}{}, quotas: quota.NewManager(cfg.Quota),
		requestMemory: newRequestMemory(cfg.QueuedMaxRequestBytes), connCounts: connCounts{perIP: map[string]int{}},
		cleanerThrottle: logstore.NewIOThrottle(cfg.CleanerIOMaxBytesPerSec)}
	b.installACLs(nil) // until the stored ACLs are read: super users only
	b.controllerRegistry = b.controllerListenerHandlers()
	b.registry = b.clientHandlers()
	if err := b.bind(); err != nil {
		b.closeListeners()
		return nil, err
	}
	dirPath := cfg.metadataDir()
	clusterID := newClusterID()
	b.ready = make(chan struct{})
	b.serving = make(chan struct{})
	if cfg.clustered() {
		// The controller listener (or, on a broker-only node, the client
		// listener raft streams come to) serves the quorum from now on;
		// the cluster id comes from the quorum.
		if err := b.startController(dirPath); err != nil {
			b.closeListeners()
			return nil, err
		}
		for _, l := range b.listeners {
			if l.controller || l.raft {
				b.wg.Add(1)
				go b.accept(l)
			}
		}
		if !cfg.hasRole("broker") {
			b.cluster.followMetadata()
			b.cluster.wg.Add(1)
			go func() {
				defer b.cluster.wg.Done()
				b.cluster.followMetadataLoop()
			}()
			close(b.ready)
			b.logger.Info("gregor controller started", "node.id", cfg.NodeID)
			return b, nil
		}
		var err error
		if clusterID, err = b.cluster.awaitClusterID(ctx); err != nil {
			b.abortStart()
			return nil, err
		}
		if b.cluster.adopting {
			if err := b.cluster.checkAdopted(dirPath); err != nil {
				b.abortStart()
				return nil, err
			}
		}
	} else if err := refuseClusterDir(dirPath); err != nil {
		b.abortStart()
		return nil, err
	}
	open := logstore.OpenDirs
	if cfg.clustered() {
		open = logstore.OpenDirsKeepingFailed // log_dir_failure.go
	}
	dir, err := open(cfg.LogDirs, clusterID, cfg.NodeID, cfg.Log, logstore.OpenOptions{RecoveryThreads: cfg.RecoveryThreads, MoveThreads: cfg.MoveThreads,
		Logger: b.loggers.Logger(logManagerLoggerName), CleanerLogger: b.loggers.LoggerAt(logCleanerLoggerName, "INFO")})
	if err != nil {
		b.abortStart()
		return nil, fmt.Errorf("opening the log dirs: %w", err)
	}
	b.dirs = dir
	dir.SetCordoned(b.cordonedDirs) // cordoned_log_dirs.go
	b.fatal = make(chan error, 1)
	dir.OnFailure(b.logDirFailed) // log_dir_failure.go
	if cfg.clustered() && dir.ClusterID() != clusterID {
		b.abortStart()
		dir.Close()
		return nil, fmt.Errorf("the log dirs belong to cluster %s, but the controller quorum's cluster is %s", dir.ClusterID(), clusterID)
	}
	if err := os.MkdirAll(dirPath, 0o755); err != nil { // a metadata.log.dir not formatted yet
		b.abortStart()
		dir.Close()
		return nil, err
	}
	if id := logstore.FormattedClusterID(dirPath); id != "" && id != dir.ClusterID() {
		b.abortStart()
		dir.Close()
		return nil, fmt.Errorf("metadata.log.dir %s belongs to cluster %s, but the log dirs to cluster %s", dirPath, id, dir.ClusterID())
	}
	if b.meta, err = openMetaStore(dirPath); err != nil {
		b.abortStart()
		dir.Close()
		return nil, err
	}
	if abs, _ := filepath.Abs(dirPath); abs == dir.All()[0].Path() {
		b.meta.failed = dir.All()[0].Fail // the file's dir goes offline with it
	}
	if !cfg.clustered() {
		if b.voterDirectoryID, err = metadataDirectoryID(dirPath, dir, cfg.NodeID); err != nil {
			b.abortStart()
			dir.Close()
			return nil, fmt.Errorf("metadata.log.dir %s: %w", dirPath, err)
		}
		var boot bootstrap
		if b.meta.fresh {
			formatted, err := logstore.ReadFormatted(dirPath)
			if err != nil {
				b.abortStart()
				dir.Close()
				return nil, fmt.Errorf("reading what kafka-storage format wrote: %w", err)
			}
			boot = b.bootstrapFrom(formatted)
		}
		if err := b.meta.elected(boot); err != nil {
			b.abortStart()
			dir.Close()
			return nil, fmt.Errorf("recording the start in the metadata file: %w", err)
		}
		if err := b.keepClusterMinISR(); err != nil {
			b.abortStart()
			dir.Close()
			return nil, fmt.Errorf("recording the cluster's min.insync.replicas: %w", err)
		}
	}
	b.initLiveConfig()
	b.throttles = newThrottles(cfg.Throttles)
	b.applyThrottles()
	dir.SetMoveThrottle(b.throttles.alterLogDirs)
	b.producerIDs = &producerIDAllocator{meta: b.meta, cluster: b.cluster}
	if b.cluster == nil {
		b.installQuotas()
		b.installACLs(b.meta.acls())
	}
	b.topics = newTopicRegistry(b)
	if err := b.topics.load(); err != nil {
		b.abortStart()
		dir.Close()
		return nil, err
	}
	b.applyDirSettings(nil)
	b.sessions = newFetchSessionCache(cfg.FetchSessionCacheSlots)
	b.groups = newGroupCoordinator(b)
	b.txns = newTxnCoordinator(b)
	b.shareState = newShareStateCoordinator(b)
	b.shares = newSharePartitions(b)
	b.shareSessions = newShareSessions(b)
	if b.cluster != nil {
		b.cluster.run()
	} else {
		b.groups.start()
		b.txns.start()
		b.shareState.start()
		b.stopTokens = make(chan struct{})
		b.wg.Add(1)
		go b.removeExpiredTokens()
	}
	for _, l := range b.listeners {
		if !cfg.clustered() || !l.controller && !l.raft {
			b.wg.Add(1)
			go b.accept(l)
		}
	}
	close(b.ready)
	if b.cluster == nil {
		b.startServing()
	}
	b.logger.Info("gregor started", "node.id", cfg.NodeID, "cluster.id", dir.ClusterID(), "log.dirs", strings.Join(cfg.LogDirs, ","))
	return b, nil
}

// startServing lets client requests in.
func (b *Broker) startServing() {
	b.servingOnce.Do(func() {
		close(b.serving)
		if b.cluster != nil {
			b.logger.Info("caught up with the metadata: serving clients")
		}
	})
}

// bind opens every listener: the client listeners, and the controller
// listener of a node with the controller role.
func (b *Broker) bind() error {
	bindOne := func(l Listener, controller bool) error {
		lc := net.ListenConfig{Control: setReceiveBuffer(b.cfg.SocketReceiveBufferBytes)}
		ln, err := lc.Listen(context.Background(), "tcp", net.JoinHostPort(l.Host, strconv.Itoa(l.Port)))
		if err != nil {
			return fmt.Errorf("listener %s: %w", l, err)
		}
		if err := setListenBacklog(ln, b.cfg.SocketListenBacklog); err != nil {
			ln.Close()
			return fmt.Errorf("listener %s: socket.listen.backlog.size: %w", l, err)
		}
		b.listeners = append(b.listeners, &listener{name: l.Name, ln: ln, controller: controller, security: b.cfg.Security[l.Name]})
		b.logger.Info("listening", "listener", l.Name, "addr", ln.Addr().String())
		return nil
	}
	if !b.cfg.clustered() || b.cfg.hasRole("broker") {
		for _, l := range b.cfg.clientListeners() {
			if err := bindOne(l, false); err != nil {
				return err
			}
		}
	}
	// A single node serves its CONTROLLER listener as the controller of a
	// quorum of one (registry_controller.go), for the admin clients given
	// bootstrap.controllers.
	if b.cfg.hasRole("controller") {
		if l, ok := b.cfg.controllerListener(); ok {
			return bindOne(l, true)
		}
	}
	if b.cfg.clustered() && !b.cfg.hasRole("controller") {
		// A broker-only node follows the metadata log as a raft observer;
		// the controller reaches it on its inter-broker listener.
		b.interBrokerBound().raft = true
	}
	return nil
}

// interBrokerBound is the bound inter-broker listener of a node with the
// broker role.
func (b *Broker) interBrokerBound() *listener {
	ib, _, _ := b.cfg.interBrokerListener()
	i := slices.IndexFunc(b.listeners, func(l *listener) bool { return !l.controller && l.name == ib.Name })
	return b.listeners[i]
}

// setReceiveBuffer sets a listening socket's SO_RCVBUF before it binds,
// as Kafka does with socket.receive.buffer.bytes: accepted connections
// inherit it, and the TCP window scale they agree on at the handshake
// follows from it. A size of -1 leaves the kernel's default.
func setReceiveBuffer(size int) func(network, address string, rc syscall.RawConn) error {
	return func(_, _ string, rc syscall.RawConn) error {
		if size <= 0 {
			return nil
		}
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, size)
		})
		if err != nil {
			return err
		}
		return serr
	}
}

// setListenBacklog makes the kernel queue at most backlog connections for
// accept on ln. Go listens with the kernel's maximum (somaxconn); Linux
// takes a second listen(2) on a listening socket as a new backlog.
func setListenBacklog(ln net.Listener, backlog int) error {
	tl, ok := ln.(*net.TCPListener)
	if !ok || backlog <= 0 {
		return nil
	}
	rc, err := tl.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = syscall.Listen(int(fd), backlog) }); err != nil {
		return err
	}
	return lerr
}

func (b *Broker) closeListeners() {
	b.mu.Lock()
	b.closed = true
	for c := range b.conns {
		c.close() // the quorum's peers keep theirs open
	}
	for nc := range b.opening {
		nc.Close()
	}
	b.mu.Unlock()
	b.connCounts.shut()
	for _, l := range b.listeners {
		l.ln.Close()
	}
}

// abortStart undoes a cluster start that failed after the controller ran.
func (b *Broker) abortStart() {
	b.closeListeners()
	if b.cluster != nil {
		b.cluster.close()
	}
	b.wg.Wait()
}

// Addr is the address of the first client listener, for tests and tools.
func (b *Broker) Addr() string { return b.listeners[0].ln.Addr().String() }

// ControllerAddr is the address of the controller listener, or "".
func (b *Broker) ControllerAddr() string {
	if l := b.boundControllerListener(); l != nil {
		return l.ln.Addr().String()
	}
	return ""
}

// boundControllerListener is the controller listener this node bound, or nil.
func (b *Broker) boundControllerListener() *listener {
	for _, l := range b.listeners {
		if l.controller {
			return l
		}
	}
	return nil
}

// ClusterID is the id stored in meta.properties.
func (b *Broker) ClusterID() string { return b.dirs.ClusterID() }

func (b *Broker) accept(l *listener) {
	defer b.wg.Done()
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			b.mu.Lock()
			closed := b.closed
			b.mu.Unlock()
			if !closed {
				b.logger.Error("accept failed", "listener", l.name, "err", err)
			}
			return
		}
		ip, admitted := b.admitConnection(nc, l)
		if !admitted {
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok && b.cfg.SocketSendBufferBytes > 0 {
			if err := tc.SetWriteBuffer(b.cfg.SocketSendBufferBytes); err != nil {
				b.logger.Warn("setting socket.send.buffer.bytes failed", "err", err)
			}
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer b.releaseConnection(ip, l)
			if !b.startOpening(nc) {
				return
			}
			raw := nc
			var c *conn
			var user string
			ok := true
			if l.security.TLS != nil {
				nc, user, ok = b.tlsHandshake(nc, l)
			}
			if ok && b.cfg.clustered() && (l.controller || l.raft) {
				c, ok = b.serveControllerConn(nc, l, user)
			} else if ok {
				c = newConn(b, nc, l)
				c.user = user
			}
			// Known before it waits to be served, so that a stop meanwhile
			// closes it rather than waiting for it.
			b.mu.Lock()
			delete(b.opening, raw)
			if !ok {
				b.mu.Unlock()
				return
			}
			if b.closed {
				b.mu.Unlock()
				nc.Close()
				return
			}
			b.conns[c] = struct{}{}
			b.mu.Unlock()
			defer func() {
				b.mu.Lock()
				delete(b.conns, c)
				b.mu.Unlock()
			}()
			switch {
			case l.controller && b.cfg.clustered():
			case l.raft && l.security.sasl():
				c.awaitServing = true // after the login, unless raft's (conn.serve)
			default:
				// Clients wait until the broker serves them, their login
				// too: SCRAM credentials and delegation tokens come from
				// the metadata log the broker has then replayed.
				select {
				case <-b.serving:
				case <-c.done:
					return
				}
			}
			c.serve()
		}()
	}
}

// startOpening records nc as opening, or closes it if the broker is
// stopping: false then.
func (b *Broker) startOpening(nc net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		nc.Close()
		return false
	}
	b.opening[nc] = struct{}{}
	return true
}

// Close stops the listeners, closes every connection, and shuts the log
// dir down cleanly (flush, checkpoints, clean-shutdown marker).
func (b *Broker) Close() error {
	if b.cluster != nil && b.cfg.Cluster.ControlledShutdownEnabled && b.cfg.hasRole("broker") {
		b.cluster.controlledShutdown(30 * time.Second)
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	if b.shares != nil {
		// Before the listeners close: a queue write failing on them would
		// archive its records instead of leaving them for the next leader.
		b.shares.dlq.stop()
	}
	b.connCounts.shut()
	for _, l := range b.listeners {
		l.ln.Close()
	}
	for c := range b.conns {
		c.close()
	}
	for nc := range b.opening {
		nc.Close()
	}
	b.mu.Unlock()
	if b.txns != nil {
		b.txns.close()
	}
	if b.shares != nil {
		b.shares.close()
		b.shareState.close()
	}
	if b.groups != nil {
		b.groups.Close()
	}
	if b.cluster != nil {
		b.cluster.close()
	}
	if b.stopTokens != nil {
		close(b.stopTokens)
	}
	b.wg.Wait()
	if b.dirs == nil { // a controller-only node
		b.logger.Info("gregor stopped")
		return nil
	}
	b.topics.wakeAll()
	if b.cluster != nil {
		b.dirs.SetBrokerEpoch(b.cluster.brokerEpoch()) // KIP-966: this shutdown was clean
	}
	err := b.dirs.Close()
	b.logger.Info("gregor stopped")
	return err
}

// newClusterID makes a cluster id the way Kafka prints one: 16 random
// bytes in URL-safe base64 without padding.
func newClusterID() string {
	var id [16]byte
	rand.Read(id[:])
	return base64.RawURLEncoding.EncodeToString(id[:])
}

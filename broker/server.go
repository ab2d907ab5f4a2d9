package broker

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"

	"github.com/gregor-broker/gregor/logstore"
)

// Broker is one Gregor node: its listeners, its log dir and the topics in
// it. New starts serving; Close stops.
type Broker struct {
	cfg    Config
	logger *slog.Logger

	dir         *logstore.Dir
	meta        *metaStore
	live        liveConfig // cfg with the dynamic broker configs applied
	topics      *topicRegistry
	sessions    *fetchSessionCache
	producerIDs *producerIDAllocator
	groups      *groupCoordinator

	listeners []*listener
	wg        sync.WaitGroup

	mu     sync.Mutex // guards conns and closed
	conns  map[*conn]struct{}
	closed bool
}

type listener struct {
	name string
	ln   net.Listener
}

// New opens the log dir (recovering it if the last shutdown was not
// clean), binds every client listener and starts accepting connections.
func New(cfg Config, logger *slog.Logger) (*Broker, error) {
	if logger == nil {
		logger = slog.Default()
	}
	if cfg.values == nil {
		return nil, errors.New("broker: config must come from DefaultConfig or ParseConfig")
	}
	b := &Broker{cfg: cfg, logger: logger, conns: map[*conn]struct{}{}}
	dirPath := cfg.LogDirs[0]
	dir, err := logstore.OpenDir(dirPath, newClusterID(), cfg.NodeID, cfg.Log)
	if err != nil {
		return nil, fmt.Errorf("opening log dir %s: %w", dirPath, err)
	}
	b.dir = dir
	if b.meta, err = openMetaStore(dirPath); err != nil {
		dir.Close()
		return nil, err
	}
	if err := b.initLiveConfig(); err != nil {
		dir.Close()
		return nil, err
	}
	b.producerIDs = &producerIDAllocator{meta: b.meta}
	b.topics = newTopicRegistry(b)
	if err := b.topics.load(); err != nil {
		dir.Close()
		return nil, err
	}
	b.applyDirSettings(nil)
	b.sessions = newFetchSessionCache(cfg.FetchSessionCacheSlots)
	b.groups = newGroupCoordinator(b)
	b.groups.start()
	for _, l := range cfg.clientListeners() {
		addr := net.JoinHostPort(l.Host, strconv.Itoa(l.Port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("listener %s: %w", l, err)
		}
		b.listeners = append(b.listeners, &listener{name: l.Name, ln: ln})
		logger.Info("listening", "listener", l.Name, "addr", ln.Addr().String())
	}
	for _, l := range b.listeners {
		b.wg.Add(1)
		go b.accept(l)
	}
	logger.Info("gregor started", "node.id", cfg.NodeID, "cluster.id", dir.ClusterID(), "log.dir", dirPath)
	return b, nil
}

// Addr is the address of the first client listener, for tests and tools.
func (b *Broker) Addr() string { return b.listeners[0].ln.Addr().String() }

// ClusterID is the id stored in meta.properties.
func (b *Broker) ClusterID() string { return b.dir.ClusterID() }

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
		c := newConn(b, nc, l)
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			nc.Close()
			return
		}
		b.conns[c] = struct{}{}
		b.mu.Unlock()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			c.serve()
			b.mu.Lock()
			delete(b.conns, c)
			b.mu.Unlock()
		}()
	}
}

// Close stops the listeners, closes every connection, and shuts the log
// dir down cleanly (flush, checkpoints, clean-shutdown marker).
func (b *Broker) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	for _, l := range b.listeners {
		l.ln.Close()
	}
	for c := range b.conns {
		c.close()
	}
	b.mu.Unlock()
	if b.groups != nil {
		b.groups.Close()
	}
	b.wg.Wait()
	b.topics.wakeAll()
	err := b.dir.Close()
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

package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/delegation"
	"github.com/gregor-broker/gregor/internal/features"
	"github.com/gregor-broker/gregor/sasl"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// Config configures one controller (a voter of the quorum).
type Config struct {
	NodeID int32
	// Voters maps each voter's node id to the host:port of its CONTROLLER
	// listener (controller.quorum.voters). A node not among them (a
	// broker-only node) runs as an observer: a raft non-voter that only
	// follows the metadata log, added by the active controller when its
	// broker registers.
	Voters map[int32]string
	// ObserverAddr is, on an observer, the host:port where it accepts raft
	// streams: the address of its ObserverListener endpoint.
	ObserverAddr string
	// ObserverListener names the broker listener (as registered in
	// BrokerRegistration) on which observers accept raft streams; the
	// active controller dials its endpoint. Empty: the first endpoint.
	ObserverListener string
	// ListenerName is the name of the CONTROLLER listener, given with the
	// voters' addresses in DescribeQuorum.
	ListenerName string
	// Dir is where raft keeps its log, stable store and snapshots.
	Dir string
	// ClusterID is the cluster id kafka-storage format wrote into this
	// node's metadata dir, which the first active controller takes; empty
	// means a random one.
	ClusterID string
	// DirectoryID returns the directory id of this node's metadata dir
	// (zero while it has none), which its vote must be recorded with
	// (votes.go). Nil: every node votes, whatever its directory id.
	DirectoryID func() [16]byte
	// InitialControllers are the voters kafka-storage format
	// --initial-controllers named, with their directory ids, which the
	// first active controller records with the cluster id.
	InitialControllers []RegisteredController
	// BootstrapFeatures and BootstrapScram are the feature levels (nil:
	// the defaults) and the SCRAM credentials kafka-storage format set up
	// (--release-version, --feature, --add-scram), which the first active
	// controller records with the cluster id, as Kafka's writes the
	// bootstrap snapshot's records.
	BootstrapFeatures map[string]int16
	BootstrapScram    []sasl.CredentialChange
	// Adopted are records the first active controller appends to the
	// bootstrap ones if it is this node: a single node's metadata, which
	// the quorum starts from (broker/adopt.go).
	Adopted []Record
	// SessionTimeout (broker.session.timeout.ms) fences a broker that has
	// not heartbeated for that long; HeartbeatInterval
	// (broker.heartbeat.interval.ms) is what brokers are expected to use.
	SessionTimeout, HeartbeatInterval time.Duration
	// Defaults for CreateTopics with -1 partitions or replication factor.
	DefaultPartitions        int32
	DefaultReplicationFactor int16
	// UncleanDefault is unclean.leader.election.enable from the static
	// config; a cluster-wide dynamic default or a topic override wins.
	UncleanDefault bool
	// MinISRDefault is min.insync.replicas from the static config; a
	// cluster-wide dynamic default or a topic override wins. 0 means 1.
	MinISRDefault int
	// AutoLeaderRebalance (auto.leader.rebalance.enable) moves leadership
	// back to preferred replicas every LeaderImbalanceCheckInterval
	// (leader.imbalance.check.interval.seconds).
	AutoLeaderRebalance          bool
	LeaderImbalanceCheckInterval time.Duration
	// UncleanElectionCheckInterval (unclean.leader.election.interval.ms,
	// default 5 minutes) is how often the active controller elects
	// leaders for leaderless partitions, unclean where the topic allows
	// it: as in Kafka, turning unclean.leader.election.enable on acts at
	// the next check (ElectLeaders with the unclean type acts at once).
	UncleanElectionCheckInterval time.Duration
	// ValidateConfigs checks the values a resource's configs would have
	// after CreateTopics, AlterConfigs or IncrementalAlterConfigs, as
	// Kafka's ControllerConfigurationValidator does: a code (INVALID_CONFIG
	// for a value its key does not accept) and Kafka's message, or 0. Nil:
	// every value passes.
	ValidateConfigs func(res ConfigResource, values map[string]string) (int16, string)
	// ListConfig tells whether a resource's config is a LIST, which
	// APPEND and SUBTRACT need, and its default, which they start from
	// when it is not set. Nil: every config is a LIST with no default.
	ListConfig func(res ConfigResource, key string) (def string, isList bool)
	// Tokens are the delegation.token.* settings; expired tokens are
	// removed every TokenExpiryCheckInterval.
	Tokens                   delegation.Config
	TokenExpiryCheckInterval time.Duration
	// ElectionTimeout (controller.quorum.election.timeout.ms, default 1s)
	// is how long a voter waits for the leader before calling an election.
	ElectionTimeout time.Duration
	// SnapshotMaxBytes (metadata.log.max.record.bytes.between.snapshots;
	// 0: Kafka's 20 MB) and SnapshotMaxInterval
	// (metadata.log.max.snapshot.interval.ms; 0: never by time) are when a
	// snapshot is written (snapshots.go).
	SnapshotMaxBytes    int64
	SnapshotMaxInterval time.Duration
	// Security is how raft and the Client reach CONTROLLER listeners (and
	// observers' listeners, which have their protocol): TLS for SSL, a
	// SASL login for SASL_PLAINTEXT and SASL_SSL. Zero: plain TCP.
	Security Security
	Logger   *slog.Logger
	// commitTimeout is raft's CommitTimeout, the idle time after which
	// the leader tells followers its commit index (0: raft's 50 ms).
	// Tests lengthen it to show that nothing waits for it.
	commitTimeout time.Duration
}

// Controller is one member of the controller quorum. On the raft leader it
// is the active controller and answers the controller APIs through Handle;
// on every member Image follows the committed metadata log.
type Controller struct {
	cfg       Config
	log       *slog.Logger
	fsm       *fsm
	raft      *raft.Raft
	stream    *streamLayer
	progress  *progressTransport
	store     *raftboltdb.BoltStore
	closeOnce sync.Once
	closed    chan struct{}
	loopDone  chan struct{}
	// snapshotsDone is closed when snapshotLoop has returned.
	snapshotsDone chan struct{}

	// mu serialises the active controller's work: each request reads the
	// image, proposes its records and waits for them to be applied before
	// the next one starts, so decisions always see the latest state.
	mu       sync.Mutex
	active   bool                // this node is leader and caught up (barrier done)
	lastSeen map[int32]time.Time // last heartbeat per broker; in memory, reset on election
	// metadataOffsets is each broker's metadata offset as its last
	// heartbeat gave it, and shutdownOffsets the offset of the records
	// that started a broker's controlled shutdown (brokers.go); in
	// memory, reset on election.
	metadataOffsets, shutdownOffsets map[int32]int64
	stopLead                         context.CancelFunc      // stops the active controller's tickers
	reported                         map[int32]reportedVoter // UpdateRaftVoter per voter, this term (kraft_upgrade.go)

	voterChange sync.Mutex // held by the voter change in progress (voters.go)

	// awaitingVote: this node started on an empty raft dir without being
	// a voter to bootstrap, and its directory id has not had the vote
	// since (votes.go). Kept across restarts by a file in the raft dir.
	awaitingVote atomic.Bool
}

const applyTimeout = 10 * time.Second

// Start opens (or creates) the raft state in cfg.Dir and joins the quorum.
// Without existing state the voters bootstrap the cluster from cfg.Voters;
// there is no separate format step.
func Start(cfg Config) (*Controller, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	self, voter := cfg.Voters[cfg.NodeID]
	if !voter {
		if cfg.ObserverAddr == "" {
			return nil, fmt.Errorf("controller: node.id %d is not in controller.quorum.voters and has no observer address", cfg.NodeID)
		}
		self = cfg.ObserverAddr
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 9 * time.Second
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 2 * time.Second
	}
	cfg.MinISRDefault = max(cfg.MinISRDefault, 1)
	if cfg.DefaultPartitions <= 0 {
		cfg.DefaultPartitions = 1
	}
	if cfg.DefaultReplicationFactor <= 0 {
		cfg.DefaultReplicationFactor = 1
	}
	if cfg.LeaderImbalanceCheckInterval <= 0 {
		cfg.LeaderImbalanceCheckInterval = 300 * time.Second
	}
	if cfg.UncleanElectionCheckInterval <= 0 {
		cfg.UncleanElectionCheckInterval = 300 * time.Second
	}
	if cfg.TokenExpiryCheckInterval <= 0 {
		cfg.TokenExpiryCheckInterval = time.Hour
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	if cfg.SnapshotMaxBytes <= 0 {
		cfg.SnapshotMaxBytes = defaultSnapshotMaxBytes
	}
	c := &Controller{cfg: cfg, log: cfg.Logger, fsm: newFSM(cfg.Logger, cfg.SnapshotMaxBytes),
		closed: make(chan struct{}), loopDone: make(chan struct{}), snapshotsDone: make(chan struct{})}
	hlog := hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: slogWriter{cfg.Logger}})

	store, err := raftboltdb.NewBoltStore(filepath.Join(cfg.Dir, "raft.db"))
	if err != nil {
		return nil, fmt.Errorf("controller: opening raft log: %w", err)
	}
	c.store = store
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 2, hlog)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("controller: opening snapshots: %w", err)
	}
	logs, err := raft.NewLogCache(512, store)
	if err != nil {
		store.Close()
		return nil, err
	}
	c.stream = newStreamLayer(self, cfg.Security)
	trans := newProgressTransport(raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: c.stream, MaxPool: 3, Timeout: 10 * time.Second, Logger: hlog}))
	c.progress = trans

	notify := make(chan bool, 16)
	rc := raft.DefaultConfig()
	rc.LocalID = serverID(cfg.NodeID)
	rc.Logger = hlog
	rc.NotifyCh = notify
	// A leader that RemoveRaftVoter demotes stays on as an observer, as
	// KRaft's does, instead of shutting its raft down.
	rc.ShutdownOnRemove = false
	if cfg.ElectionTimeout > 0 {
		rc.HeartbeatTimeout = cfg.ElectionTimeout
		rc.ElectionTimeout = cfg.ElectionTimeout
		rc.LeaderLeaseTimeout = cfg.ElectionTimeout / 2
	}
	rc.SnapshotThreshold = math.MaxUint64 // snapshotLoop decides
	if cfg.commitTimeout > 0 {
		rc.CommitTimeout = cfg.commitTimeout
	}
	existing, err := raft.HasExistingState(logs, store, snaps)
	if err != nil {
		trans.Close()
		store.Close()
		return nil, err
	}
	if err := c.markAwaitingVote(!existing && !voter); err != nil {
		trans.Close()
		store.Close()
		return nil, err
	}
	gate := newVoteGate(trans, rc.LocalID, c.mayVote)
	r, err := raft.NewRaft(rc, c.fsm, logs, store, snaps, gate)
	if err != nil {
		gate.Close()
		store.Close()
		return nil, fmt.Errorf("controller: starting raft: %w", err)
	}
	c.raft = r
	trans.raft.Store(r)
	fallback := c.configuredAddress
	c.stream.fallback.Store(&fallback)
	go c.leadershipLoop(notify)
	go c.snapshotLoop()
	go c.watchForVote()
	if !existing && voter {
		if err := r.BootstrapCluster(voterConfiguration(cfg.Voters)).Error(); err != nil &&
			!errors.Is(err, raft.ErrCantBootstrap) {
			c.close(false)
			return nil, fmt.Errorf("controller: bootstrapping: %w", err)
		}
	}
	return c, nil
}

func serverID(id int32) raft.ServerID { return raft.ServerID(strconv.Itoa(int(id))) }

// configuredAddress is where controller.quorum.voters puts the voter that
// raft's configuration has at address, if that is elsewhere.
func (c *Controller) configuredAddress(address raft.ServerAddress) (raft.ServerAddress, bool) {
	for _, s := range c.raft.GetConfiguration().Configuration().Servers {
		if s.Address != address {
			continue
		}
		id, err := strconv.Atoi(string(s.ID))
		if err != nil {
			return "", false
		}
		configured, ok := c.cfg.Voters[int32(id)]
		return raft.ServerAddress(configured), ok
	}
	return "", false
}

func voterConfiguration(voters map[int32]string) raft.Configuration {
	ids := make([]int32, 0, len(voters))
	for id := range voters {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var conf raft.Configuration
	for _, id := range ids {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter,
			ID: serverID(id), Address: raft.ServerAddress(voters[id])})
	}
	return conf
}

// Image returns the current metadata image; it never changes once returned.
func (c *Controller) Image() *Image { return c.fsm.image.Load() }

// Changed returns a channel closed at the next apply. Take the channel
// before reading Image(), so that no change falls between the two; after
// it fires, take a fresh one and the new image.
func (c *Controller) Changed() <-chan struct{} { return c.fsm.changedCh() }

// LeaderID returns the node id of the raft leader, if one is known.
func (c *Controller) LeaderID() (int32, bool) {
	_, id := c.raft.LeaderWithID()
	if id == "" {
		return -1, false
	}
	n, err := strconv.Atoi(string(id))
	if err != nil {
		return -1, false
	}
	return int32(n), true
}

// Active reports whether this node is the active controller, ready to
// serve Handle.
func (c *Controller) Active() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active
}

// HandOff passes a raft connection the broker accepted on its CONTROLLER
// listener, after reading RaftMagic from it, to the raft transport.
func (c *Controller) HandOff(conn net.Conn) { c.stream.handOff(conn) }

// Snapshot asks raft to write a snapshot of the image now.
func (c *Controller) Snapshot() error { return c.raft.Snapshot().Error() }

// Close leaves the quorum (without removing this voter) and closes the
// raft files. A leader first hands leadership to another voter.
func (c *Controller) Close() error { return c.close(true) }

// close stops the controller; without resign a leader just stops, as if
// its process died.
func (c *Controller) close(resign bool) error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		if resign && c.raft.State() == raft.Leader && len(c.Voters()) > 1 {
			// Resign, as Kafka's controller does, rather than leave the
			// others to time out.
			if terr := c.raft.LeadershipTransfer().Error(); terr != nil {
				c.log.Warn("controller: leadership transfer on close", "err", terr)
			}
		}
		err = c.raft.Shutdown().Error()
		<-c.loopDone
		<-c.snapshotsDone
		c.stream.Close()
		if cerr := c.store.Close(); err == nil {
			err = cerr
		}
	})
	return err
}

// leadershipLoop follows raft's leadership notifications: on gaining
// leadership it starts the active controller, on losing it stops it.
func (c *Controller) leadershipLoop(notify <-chan bool) {
	defer close(c.loopDone)
	for {
		select {
		case <-c.closed:
			c.stepDown()
			return
		case leader := <-notify:
			if leader {
				c.stepDown()
				ctx, cancel := context.WithCancel(context.Background())
				c.mu.Lock()
				c.stopLead = cancel
				c.mu.Unlock()
				go c.becomeActive(ctx)
			} else {
				c.stepDown()
			}
		}
	}
}

func (c *Controller) stepDown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopLead != nil {
		c.stopLead()
		c.stopLead = nil
	}
	c.active = false
	c.lastSeen = nil
	c.metadataOffsets, c.shutdownOffsets = nil, nil
}

// becomeActive waits until every entry of earlier terms is applied (a
// raft barrier), resets the broker sessions (heartbeat times are not
// replicated: every broker gets a full session from now), writes the
// cluster id if the metadata has none (and, with eligible leader replicas
// on, the cluster's min.insync.replicas if it has none), and starts the
// periodic checks.
func (c *Controller) becomeActive(ctx context.Context) {
	for ctx.Err() == nil {
		if err := c.raft.Barrier(applyTimeout).Error(); err == nil {
			break
		} else if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) ||
			errors.Is(err, raft.ErrRaftShutdown) {
			return
		}
	}
	c.mu.Lock()
	if ctx.Err() != nil {
		c.mu.Unlock()
		return
	}
	now := time.Now()
	c.reported = map[int32]reportedVoter{}
	c.lastSeen = map[int32]time.Time{}
	c.metadataOffsets, c.shutdownOffsets = map[int32]int64{}, map[int32]int64{}
	for id := range c.Image().Brokers {
		c.lastSeen[id] = now
	}
	var recs []Record
	if c.Image().ClusterID == "" {
		id := c.cfg.ClusterID
		if id == "" {
			id = newClusterID()
		}
		recs = append(recs, Record{ClusterID: &id})
		for i := range c.cfg.InitialControllers {
			recs = append(recs, Record{Controller: &c.cfg.InitialControllers[i]})
		}
		levels := maps.Clone(c.cfg.BootstrapFeatures)
		if len(c.cfg.InitialControllers) > 0 {
			if levels == nil {
				levels = map[string]int16{}
			}
			levels[features.KRaftVersion] = 1 // a dynamic quorum
		}
		if levels != nil {
			recs = append(recs, Record{Features: &levels})
		}
		for i := range c.cfg.BootstrapScram {
			recs = append(recs, Record{ScramCredential: &c.cfg.BootstrapScram[i]})
		}
		recs = append(recs, c.cfg.Adopted...)
	}
	// The cluster's min.insync.replicas, judged by the image this batch
	// makes: its feature levels and adopted configs count.
	if next := c.Image().apply(c.Image().Offset, recs); elrEnabled(next) {
		recs = append(recs, c.clusterMinISRRecords(next)...)
	}
	if _, err := c.propose(recs); err != nil {
		c.mu.Unlock()
		c.log.Warn("controller: writing the cluster id and min.insync.replicas", "err", err)
		return
	}
	c.active = true
	c.mu.Unlock()
	c.log.Info("controller: active", "node", c.cfg.NodeID, "offset", c.Image().Offset)
	go c.tick(ctx)
}

// propose appends a batch to the raft log and waits until it is applied
// here; c.mu must be held. It returns the entry's raft index.
func (c *Controller) propose(recs []Record) (uint64, error) {
	if len(recs) == 0 {
		return c.Image().Offset, nil
	}
	data, err := encodeBatch(recs)
	if err != nil {
		return 0, err
	}
	f := c.raft.Apply(data, applyTimeout)
	if err := f.Error(); err != nil {
		return 0, err
	}
	// Raft tells followers an entry is committed only with the next
	// entry it sends them, or after an idle CommitTimeout (50-100 ms).
	// A barrier is that next entry, so every node applies this batch
	// at once, as Kafka's followers learn a new high watermark from
	// their parked fetch. Nothing waits for the barrier itself.
	c.raft.Barrier(0)
	return f.Index(), nil
}

// tick runs the active controller's periodic work until ctx ends: session
// expiry, elections for leaderless partitions, and leader rebalancing and
// token expiry when enabled.
func (c *Controller) tick(ctx context.Context) {
	sessions := time.NewTicker(max(c.cfg.SessionTimeout/8, 10*time.Millisecond))
	defer sessions.Stop()
	leaderless := time.NewTicker(c.cfg.UncleanElectionCheckInterval)
	defer leaderless.Stop()
	var rebalance, tokens <-chan time.Time
	if c.cfg.AutoLeaderRebalance {
		t := time.NewTicker(c.cfg.LeaderImbalanceCheckInterval)
		defer t.Stop()
		rebalance = t.C
	}
	if c.cfg.Tokens.Enabled() {
		t := time.NewTicker(c.cfg.TokenExpiryCheckInterval)
		defer t.Stop()
		tokens = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-sessions.C:
			c.expireSessions(ctx)
		case <-leaderless.C:
			c.electLeaderless(ctx)
		case <-rebalance:
			c.rebalanceLeaders(ctx)
		case <-tokens:
			c.removeExpiredTokens(ctx)
		}
	}
}

// slogWriter turns raft's log lines into slog records.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.log.Warn(strings.TrimSpace(string(p)), "component", "raft")
	return len(p), nil
}

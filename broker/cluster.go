package broker

// A node of a cluster (controller.quorum.voters set) is a voter of the
// controller quorum (coordinator/controller) and a broker. Its CONTROLLER
// listener carries both the quorum's raft traffic and the controller's
// Kafka APIs: a connection whose first four bytes are controller.RaftMagic
// is raft's, any other is a Kafka client of the controller (brokers
// registering and heartbeating, leaders altering ISRs, admin requests
// forwarded by brokers).
//
// The broker learns the cluster from the controller's image, which every
// voter applies from the raft log: applyImage turns it into local replicas
// (creating and deleting partition logs, becoming leader or follower), and
// Metadata, FindCoordinator and DescribeCluster answer from it. The broker
// registers with the active controller (BrokerRegistration) and heartbeats
// (BrokerHeartbeat); a broker that stops heartbeating is fenced and loses
// its leaderships.

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/acl"
	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// raftDirName is where the controller keeps its raft log and snapshots,
// inside the log dir; it is not a partition directory.
const raftDirName = "gregor-raft"

type cluster struct {
	b           *Broker
	ctl         *controller.Controller
	client      *controller.Client
	incarnation [16]byte
	epoch       atomic.Int64 // from BrokerRegistration; -1 before
	// metadataDirID is the metadata dir's directory id once known
	// (metadataDirectoryID).
	metadataDirID atomic.Pointer[[16]byte]
	// registered closes at the first registration, which must come within
	// initial.broker.registration.timeout.ms of the node's start.
	registered     chan struct{}
	registeredOnce sync.Once
	startedAt      time.Time
	// previousEpoch is the epoch the log dir's last clean shutdown
	// recorded, -1 after an unclean one: sent on registration (KIP-966).
	previousEpoch int64
	fetchers      *fetcherManager
	// stateChange is state.change.logger: this node's partitions becoming
	// leaders and followers (nil on a controller-only node).
	stateChange *slog.Logger
	// partitionLog is kafka.cluster.Partition: the ISR changes of the
	// partitions this node leads (nil on a controller-only node).
	partitionLog *slog.Logger
	stop         chan struct{}
	// stopped ends every request to the controller in flight when the node
	// stops, so that none holds up Close (see sendContext).
	stopped    context.Context
	endStopped context.CancelFunc
	// kickHeartbeat sends a heartbeat now (a log dir failed); kickAssign
	// compares the replicas' dirs with the image now (dir_assignments.go).
	kickHeartbeat, kickAssign chan struct{}
	wg                        sync.WaitGroup
	// autoCreating holds the topics Metadata asked the controller to
	// create whose answer has not come yet (autoCreate).
	autoCreating sync.Map

	applyMu      sync.Mutex // serialises applyImage
	applied      atomic.Pointer[controller.Image]
	fenced       atomic.Bool
	strayChecked bool // guarded by applyMu
	adopting     bool // the metadata dir holds a single node's metadata (adopt.go)

	// the dynamic broker configs last installed; guarded by applyMu
	appliedBroker, appliedCluster map[string]string
}

func (cl *cluster) brokerEpoch() int64 { return cl.epoch.Load() }

// image is the metadata this broker last applied.
func (cl *cluster) image() *controller.Image { return cl.applied.Load() }

// startController starts this node's voter of the controller quorum.
func (b *Broker) startController(dirPath string) error {
	cfg := b.cfg
	cl := &cluster{b: b, stop: make(chan struct{}), kickHeartbeat: make(chan struct{}, 1), kickAssign: make(chan struct{}, 1),
		registered: make(chan struct{}), startedAt: time.Now()}
	cl.stopped, cl.endStopped = context.WithCancel(context.Background())
	cl.epoch.Store(-1)
	cl.previousEpoch = logstore.PreviousBrokerEpochs(cfg.LogDirs)
	cl.fenced.Store(true) // until a heartbeat says otherwise
	rand.Read(cl.incarnation[:])
	var observerAddr, observerListener, controllerListener string
	if len(cfg.ControllerListenerNames) > 0 {
		controllerListener = cfg.ControllerListenerNames[0]
	}
	var formatted logstore.Formatted
	if cfg.hasRole("controller") {
		var err error
		if formatted, err = logstore.ReadFormatted(dirPath); err != nil {
			return fmt.Errorf("reading what kafka-storage format wrote: %w", err)
		}
	}
	voters, initial := formattedQuorum(cfg, formatted.Voters)
	boot := b.bootstrapFrom(formatted)
	single, err := readSingleNodeMetadata(&cfg, dirPath) // adopt.go
	if err != nil {
		return err
	}
	clusterID := logstore.FormattedClusterID(dirPath)
	var adopted []controller.Record
	if single != nil {
		cl.adopting, adopted = true, single.records
		clusterID, boot.features = single.bootstrap(&cfg, clusterID, boot.features)
	}
	if _, voter := voters[cfg.NodeID]; !voter {
		// A broker-only node follows the log on its inter-broker
		// listener; a controller that is not a voter yet on its
		// CONTROLLER listener, where it will vote once added
		// (controller_registration.go).
		var l *listener
		if cfg.hasRole("controller") {
			l = b.listeners[slices.IndexFunc(b.listeners, func(l *listener) bool { return l.controller })]
		} else {
			l = b.interBrokerBound()
			observerListener = l.name
		}
		host, port := cfg.advertised(l.name, l.ln.Addr().(*net.TCPAddr))
		observerAddr = net.JoinHostPort(host, strconv.Itoa(port))
	}
	ctl, err := controller.Start(controller.Config{
		ObserverAddr:                 observerAddr,
		ObserverListener:             observerListener,
		ListenerName:                 controllerListener,
		NodeID:                       cfg.NodeID,
		Voters:                       voters,
		Dir:                          filepath.Join(dirPath, raftDirName),
		ClusterID:                    clusterID,
		InitialControllers:           initial,
		DirectoryID:                  cl.metadataDirectoryID,
		BootstrapFeatures:            boot.features,
		BootstrapScram:               boot.scram,
		Adopted:                      adopted,
		SessionTimeout:               cfg.Cluster.BrokerSessionTimeout,
		HeartbeatInterval:            cfg.Cluster.BrokerHeartbeatInterval,
		DefaultPartitions:            cfg.NumPartitions,
		DefaultReplicationFactor:     cfg.DefaultReplicationFactor,
		UncleanDefault:               cfg.values["unclean.leader.election.enable"] == "true",
		MinISRDefault:                cfg.settingsFor(nil).minInsync,
		AutoLeaderRebalance:          cfg.Cluster.AutoLeaderRebalance,
		LeaderImbalanceCheckInterval: cfg.Cluster.LeaderImbalanceCheck,
		UncleanElectionCheckInterval: cfg.Cluster.UncleanElectionCheck,
		ElectionTimeout:              cfg.Cluster.ElectionTimeout,
		SnapshotMaxBytes:             cfg.Cluster.SnapshotMaxBytes,
		SnapshotMaxInterval:          cfg.Cluster.SnapshotMaxInterval,
		ValidateConfigs:              b.validateControllerConfigs,
		ListConfig:                   controllerListConfig,
		Tokens:                       cfg.Tokens,
		TokenExpiryCheckInterval:     cfg.TokenExpiryCheckInterval,
		Security:                     b.liveControllerSecurity(),
		Logger:                       b.loggers.Logger(controllerLoggerName).With("component", "controller"),
	})
	if err != nil {
		return fmt.Errorf("starting the controller: %w", err)
	}
	cl.ctl = ctl
	cl.client = controller.NewClient(cfg.controllerAddrs(), fmt.Sprintf("gregor-broker-%d", cfg.NodeID), b.liveControllerSecurity())
	cl.fetchers = newFetcherManager(b, cfg.Cluster.NumReplicaFetchers)
	if cfg.hasRole("broker") {
		cl.stateChange = b.loggers.LoggerAt(stateChangeLoggerName, "INFO")
		cl.partitionLog = b.loggers.Logger(partitionLoggerName)
	}
	b.cluster = cl
	if cfg.hasRole("controller") {
		cl.wg.Add(1)
		go func() {
			defer cl.wg.Done()
			cl.registerControllerLoop()
			cl.updateVoterLoop()
		}()
	}
	return nil
}

// awaitClusterID waits until the quorum has a cluster id, which opening
// the log dir needs, or until ctx ends (a signal stopping the start).
func (cl *cluster) awaitClusterID(ctx context.Context) (string, error) {
	cl.b.logger.Info("waiting for the controller quorum", "voters", len(cl.b.cfg.Cluster.Voters))
	observer := !cl.b.cfg.hasRole("controller")
	timeout := time.NewTimer(time.Until(cl.registrationDeadline()))
	defer timeout.Stop()
	// Giving up ends an early registration in flight too.
	defer context.AfterFunc(ctx, cl.endStopped)()
	var lastTry time.Time
	for {
		changed := cl.ctl.Changed()
		if id := cl.ctl.Image().ClusterID; id != "" {
			return id, nil
		}
		if observer && time.Since(lastTry) > time.Second {
			// The active controller adds a broker-only node to raft when
			// it registers; until then it cannot learn the cluster id.
			lastTry = time.Now()
			if err := cl.register(); err != nil {
				cl.b.logger.Debug("early registration failed", "err", err)
			}
		}
		select {
		case <-changed:
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return "", fmt.Errorf("stopped while waiting for the controller quorum: %w", ctx.Err())
		case <-timeout.C:
			return "", cl.registrationTimedOut()
		}
	}
}

// registrationDeadline is when the node must have registered.
func (cl *cluster) registrationDeadline() time.Time {
	return cl.startedAt.Add(cl.b.cfg.Cluster.InitialRegistrationTimeout)
}

func (cl *cluster) registrationTimedOut() error {
	return fmt.Errorf("unable to register with the controller quorum within initial.broker.registration.timeout.ms (%d ms): shutting down, as Kafka's broker does",
		cl.b.cfg.Cluster.InitialRegistrationTimeout.Milliseconds())
}

// awaitRegistration halts the node, as Kafka's BrokerLifecycleManager
// shuts its broker down, if the first registration has not come by the
// deadline.
func (cl *cluster) awaitRegistration() {
	t := time.NewTimer(time.Until(cl.registrationDeadline()))
	defer t.Stop()
	select {
	case <-cl.registered:
	case <-cl.stop:
	case <-t.C:
		cl.b.halt(cl.registrationTimedOut())
	}
}

// run registers the broker, then heartbeats and applies every new image
// until Close.
func (cl *cluster) run() {
	// The first image is applied before the client listeners accept, so
	// that no request finds the broker without metadata.
	cl.applyImage(cl.ctl.Image())
	cl.wg.Add(5)
	go func() {
		defer cl.wg.Done()
		cl.awaitRegistration()
	}()
	go func() {
		defer cl.wg.Done()
		cl.applyLoop()
	}()
	go func() {
		defer cl.wg.Done()
		cl.assignLoop()
	}()
	go func() {
		defer cl.wg.Done()
		cl.heartbeatLoop()
	}()
	go func() {
		defer cl.wg.Done()
		cl.isrLoop()
	}()
}

func (cl *cluster) close() {
	close(cl.stop)
	cl.endStopped()
	cl.fetchers.close()
	cl.wg.Wait()
	cl.client.Close()
	cl.ctl.Close()
}

// sendContext bounds one request of the node's loops to the controller:
// by timeout, and by the node stopping. (A loop blocked in a send to a
// controller that no longer answers, its own whose listener Close has
// closed say, would otherwise hold up Close while this node, still the
// raft leader, fences the brokers that cannot reach it.)
func (cl *cluster) sendContext(timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cl.stopped, timeout)
}

// controlledShutdown asks the controller to move leadership away and
// waits (up to the timeout) until it says this broker may stop.
func (cl *cluster) controlledShutdown(timeout time.Duration) {
	if cl.epoch.Load() < 0 {
		return
	}
	deadline := time.Now().Add(timeout)
	failures := 0
	for time.Now().Before(deadline) {
		resp, err := cl.heartbeat(true)
		if err == nil && (resp.ShouldShutdown || resp.ErrorCode != 0) {
			return
		}
		if err != nil {
			// No controller answers (the quorum may be gone): nothing
			// can move leadership, so do not wait for it.
			if failures++; failures >= 3 {
				cl.b.logger.Warn("controlled shutdown: no controller answers; stopping anyway")
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	cl.b.logger.Warn("controlled shutdown timed out; stopping anyway")
}

func (cl *cluster) applyLoop() {
	for {
		changed := cl.ctl.Changed() // before Image, so no change is missed
		cl.client.AddVoters(cl.ctl.Voters())
		cl.applyImage(cl.ctl.Image())
		kick(cl.kickAssign)
		select {
		case <-cl.stop:
			return
		case <-changed:
		}
	}
}

// followMetadata gives a controller-only node, which runs no broker, what
// the admin APIs its CONTROLLER listener answers as a broker does need
// (DescribeConfigs, DescribeAcls, DescribeUserScramCredentials): the
// current image, the configuration with its dynamic broker configs, and
// the ACLs.
func (cl *cluster) followMetadata() {
	b := cl.b
	img := cl.ctl.Image()
	cl.applied.Store(img)
	perBroker, clusterWide := b.dynamicBrokerConfigs()
	if live, err := overlay(&b.cfg, clusterWide, perBroker); err != nil {
		b.logger.Error("dynamic broker configs from the controller do not parse", "err", err)
		if b.liveConfig() == nil {
			b.live.cur.Store(&b.cfg)
		}
	} else {
		b.live.cur.Store(live)
	}
	b.installACLs(img.ACLs)
}

// followMetadataLoop runs followMetadata at every change of the image.
func (cl *cluster) followMetadataLoop() {
	for {
		changed := cl.ctl.Changed()
		cl.followMetadata()
		select {
		case <-cl.stop:
			return
		case <-changed:
		}
	}
}

func (cl *cluster) isrLoop() {
	iv := cl.b.cfg.Cluster.ReplicaLagTimeMax / 2
	if iv <= 0 {
		iv = time.Second
	}
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		select {
		case <-cl.stop:
			return
		case now := <-t.C:
			cl.b.shrinkISRs(now)
		}
	}
}

// heartbeatLoop registers the broker and keeps its session alive; a
// stale epoch (the controller forgot or fenced this incarnation) means
// registering again.
func (cl *cluster) heartbeatLoop() {
	iv := cl.b.cfg.Cluster.BrokerHeartbeatInterval
	var failedDirs dirFailureReport
	for {
		if cl.epoch.Load() >= 0 && failedDirs.overdue(cl.b.dirs.OfflineDirectoryIDs(), cl.b.cfg.Cluster.LogDirFailureTimeout) {
			cl.b.halt(fmt.Errorf("the controller has not learnt of the failed log dirs within log.dir.failure.timeout.ms (%d ms)",
				cl.b.cfg.Cluster.LogDirFailureTimeout.Milliseconds()))
			return
		}
		offline := cl.b.dirs.OfflineDirectoryIDs()
		if cl.epoch.Load() < 0 {
			if err := cl.register(); err != nil {
				cl.b.logger.Warn("broker registration failed", "err", err)
			}
		} else if resp, err := cl.heartbeat(false); err != nil {
			cl.b.logger.Debug("heartbeat failed", "err", err)
		} else if resp.ErrorCode != 0 {
			cl.b.logger.Warn("heartbeat refused; registering again", "error", errorMessageText(resp.ErrorCode))
			cl.epoch.Store(-1)
			continue
		} else {
			failedDirs.reported(offline)
			if was := cl.fenced.Swap(resp.IsFenced); was != resp.IsFenced {
				cl.b.logger.Info("broker fencing changed", "fenced", resp.IsFenced)
			}
		}
		select {
		case <-cl.stop:
			return
		case <-cl.kickHeartbeat:
		case <-time.After(iv):
		}
	}
}

// dirFailureReport tracks whether the controller has learnt, from an
// answered heartbeat, of every log dir that has failed here; a failure
// it has not learnt of within log.dir.failure.timeout.ms halts the node,
// as Kafka's BrokerLifecycleManager does, since the controller would go on
// counting the lost replicas as in sync.
type dirFailureReport struct {
	acked   [][16]byte // offline dirs the last answered heartbeat carried
	pending time.Time  // since when some offline dir is not among them; zero: none
}

// reported records the offline dirs an answered heartbeat carried.
func (r *dirFailureReport) reported(dirs [][16]byte) { r.acked = dirs }

// overdue reports whether some of offline has gone unreported for longer
// than timeout.
func (r *dirFailureReport) overdue(offline [][16]byte, timeout time.Duration) bool {
	unreported := slices.ContainsFunc(offline, func(id [16]byte) bool { return !slices.Contains(r.acked, id) })
	switch {
	case !unreported:
		r.pending = time.Time{}
	case r.pending.IsZero():
		r.pending = time.Now()
	}
	return unreported && time.Since(r.pending) > timeout
}

func (cl *cluster) register() error {
	b := cl.b
	req := newest(kmsg.NewPtrBrokerRegistrationRequest())
	req.BrokerID = b.cfg.NodeID
	if b.dirs != nil {
		req.ClusterID = b.ClusterID()
	}
	req.IncarnationID = cl.incarnation
	req.Rack = nil
	if b.cfg.Cluster.Rack != "" {
		req.Rack = &b.cfg.Cluster.Rack
	}
	for _, l := range b.listeners {
		if l.controller {
			continue
		}
		host, port := b.cfg.advertised(l.name, l.ln.Addr().(*net.TCPAddr))
		e := kmsg.BrokerRegistrationRequestListener{Name: l.name, Host: host, Port: uint16(port)}
		if l.raft {
			// First: the active controller streams the metadata log to
			// a broker-only node's first endpoint.
			req.Listeners = append([]kmsg.BrokerRegistrationRequestListener{e}, req.Listeners...)
		} else {
			req.Listeners = append(req.Listeners, e)
		}
	}
	if b.dirs != nil {
		req.LogDirs = b.dirs.DirectoryIDs()
	}
	req.PreviousBrokerEpoch = cl.previousEpoch
	ctx, cancel := cl.sendContext(10 * time.Second)
	defer cancel()
	resp, err := cl.client.Send(ctx, req)
	if err != nil {
		return err
	}
	r := resp.(*kmsg.BrokerRegistrationResponse)
	if r.ErrorCode != 0 {
		return fmt.Errorf("controller refused the registration: %s", errorMessageText(r.ErrorCode))
	}
	cl.fenced.Store(true)
	cl.epoch.Store(r.BrokerEpoch)
	cl.registeredOnce.Do(func() { close(cl.registered) })
	b.logger.Info("registered with the controller", "broker.epoch", r.BrokerEpoch)
	return nil
}

func (cl *cluster) heartbeat(shutdown bool) (*kmsg.BrokerHeartbeatResponse, error) {
	req := newest(kmsg.NewPtrBrokerHeartbeatRequest())
	req.BrokerID = cl.b.cfg.NodeID
	req.BrokerEpoch = cl.epoch.Load()
	if img := cl.image(); img != nil {
		req.CurrentMetadataOffset = int64(img.Offset)
	}
	req.WantShutdown = shutdown
	req.OfflineLogDirs = cl.b.dirs.OfflineDirectoryIDs()
	if !cl.fenced.Load() && cl.b.cordonedLogDirsInEffect() {
		// Once caught up (unfenced), so that the dynamic configs of the
		// metadata are applied: the list replaces the one recorded.
		req.CordonedLogDirs = cl.b.dirs.CordonedDirectoryIDs()
	}
	ctx, cancel := cl.sendContext(max(cl.b.cfg.Cluster.BrokerHeartbeatInterval, time.Second))
	defer cancel()
	resp, err := cl.client.Send(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.BrokerHeartbeatResponse), nil
}

// applyImage makes the local replicas match the image: topics created and
// deleted, partition logs created for the replicas assigned here and
// removed for the ones moved away, leadership and ISR installed.
func (cl *cluster) applyImage(img *controller.Image) {
	cl.applyMu.Lock()
	defer cl.applyMu.Unlock()
	if prev := cl.applied.Load(); prev != nil && prev.Offset >= img.Offset && prev != img {
		return
	}
	b := cl.b
	self := b.cfg.NodeID
	r := b.topics
	cl.applyDynamicConfigs()
	b.quotas.Set(img.ClientQuotas)
	b.installACLs(img.ACLs)
	if prev := cl.applied.Load(); prev != nil {
		b.topicsDeleted(prev.DeletedTopics(img))
	}
	for _, t := range r.all() {
		it := img.Topics[t.name]
		if it == nil || it.ID != t.id {
			if err := r.delete(t); err != nil {
				b.logger.Error("deleting topic failed", "topic", t.name, "err", err)
			}
		}
	}
	for _, ct := range b.coordinatorTopics() {
		if it := img.Topics[ct.name]; it != nil {
			ct.takeCount(it.ID, int32(len(it.Partitions))) // once an earlier topic of the name is gone, before any partition is led
		}
	}
	// Leadership the image gives this node id belongs to the incarnation
	// registered under it. Until that is this process (a restarted node,
	// between its first image and its registration), it leads nothing:
	// its log may have lost a tail the followers hold, and they would
	// truncate to it. Its own registration moves leadership away first.
	reg := img.Brokers[self]
	registered := reg != nil && reg.IncarnationID == cl.incarnation
	// The controller unfences a registration once the broker has caught
	// up with the metadata up to it: an image showing this process
	// unfenced is not behind what the broker knew before a restart.
	caughtUp := registered && !reg.Fenced
	for _, name := range img.SortedTopicNames() {
		it := img.Topics[name]
		if t := r.get(name); t != nil && t.id == it.ID {
			for i, ip := range it.Partitions {
				if p := t.partition(int32(i)); p != nil && !slices.Contains(ip.Replicas, self) {
					b.leaveReplica(p, ip)
				}
			}
		}
		overrides := img.Configs[controller.ConfigResource{Type: controller.ResourceTopic, Name: name}]
		t, err := r.ensureReplicas(it, overrides, self, caughtUp)
		if err != nil {
			b.logger.Error("creating replicas failed", "topic", name, "err", err)
			continue
		}
		for i, ip := range it.Partitions {
			p := t.partition(int32(i))
			if p == nil || ip.Leader == self && !registered {
				continue
			}
			b.installState(p, &replicaState{
				leader: ip.Leader, leaderEpoch: ip.LeaderEpoch, partitionEpoch: ip.PartitionEpoch,
				replicas: ip.Replicas, isr: ip.ISR,
			})
		}
	}
	cl.applied.Store(img)
	if caughtUp {
		b.startServing()
	}
	if !cl.strayChecked && !cl.fenced.Load() && cl.epoch.Load() >= 0 {
		cl.strayChecked = true
		cl.removeStrayLogs(img)
	}
}

// removeStrayLogs deletes the partition logs in the log dir that the
// controller does not assign to this broker (topics deleted, or replicas
// moved away, while it was down), once the broker has caught up with the
// metadata (the controller unfenced it).
func (cl *cluster) removeStrayLogs(img *controller.Image) {
	self := cl.b.cfg.NodeID
	for tp, l := range cl.b.dirs.Logs() {
		it := img.Topics[tp.Topic]
		if it != nil && it.ID == l.TopicID() && int(tp.Partition) < len(it.Partitions) &&
			slices.Contains(it.Partitions[tp.Partition].Replicas, self) {
			continue
		}
		cl.b.logger.Info("deleting stray partition log", "partition", tp.String())
		if err := cl.b.dirs.DeleteLog(tp); err != nil {
			cl.b.logger.Error("deleting stray partition log failed", "partition", tp.String(), "err", err)
		}
	}
}

// installState moves a partition to a newer replication state: it becomes
// leader (a new leader epoch starts at its log end offset) or follower
// (the fetcher truncates it to the leader's log, then copies), or just
// learns a new ISR. Older states (by leader and partition epoch) are
// ignored: the AlterPartition answer and the image bring the same state in
// either order.
func (b *Broker) installState(p *partition, st *replicaState) {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	old := p.state.Load()
	if old != nil && (st.leaderEpoch < old.leaderEpoch ||
		(st.leaderEpoch == old.leaderEpoch && st.partitionEpoch <= old.partitionEpoch)) {
		return
	}
	p.state.Store(st)
	self := p.topic.node
	newEpoch := old == nil || old.leaderEpoch != st.leaderEpoch || old.leader != st.leader
	wasLeader := old != nil && old.leader == self
	switch {
	case st.leader == self && newEpoch:
		b.cluster.fetchers.remove(p)
		if err := p.log.AssignLeaderEpoch(st.leaderEpoch); err != nil {
			b.logger.Error("recording leader epoch failed", "topic", p.topic.name, "partition", p.index, "err", err)
		}
		p.leader.reset(st, self, p.log.LogEndOffset(), time.Now(), b.mayJoinISR)
		b.cluster.stateChange.Info("leading partition", "topic", p.topic.name, "partition", p.index, "leader.epoch", st.leaderEpoch,
			"partition.epoch", st.partitionEpoch, "log.end.offset", p.log.LogEndOffset(), "isr", st.isr)
		b.groups.partitionLed(p)
		b.txns.partitionLed(p)
		b.shareState.partitionLed(p)
	case st.leader != self && newEpoch:
		if wasLeader {
			b.groups.partitionLost(p)
			b.txns.partitionLost(p)
			b.shareState.partitionLost(p)
		}
		msg := "following partition"
		if st.leader < 0 {
			msg = "partition without a leader"
		}
		b.cluster.stateChange.Info(msg, "topic", p.topic.name, "partition", p.index, "leader", st.leader,
			"leader.epoch", st.leaderEpoch, "partition.epoch", st.partitionEpoch, "log.end.offset", p.log.LogEndOffset())
		if st.leader >= 0 && !p.offline() {
			b.cluster.fetchers.follow(p, st.leader, st.leaderEpoch)
		} else {
			b.cluster.fetchers.remove(p)
		}
	}
	if st.leader == self {
		if !newEpoch {
			p.leader.syncReplicas(st, self)
		}
		p.advanceHighWatermark()
	}
	p.wake()
}

// leaveReplica hands over a replica that a reassignment moved off this
// node, before ensureReplicas deletes it: the replica takes the
// partition's new state, as one losing its leadership does, so that the
// requests parked on it (acks=all produces, coordinator writes) are
// answered NOT_LEADER_OR_FOLLOWER naming the new leader, as Kafka's
// ReplicaManager completes the delayed operations of a partition it stops
// hosting, and a coordinator gives the partition up.
func (b *Broker) leaveReplica(p *partition, ip controller.Partition) {
	b.cluster.fetchers.remove(p)
	p.stateMu.Lock()
	old := p.state.Load()
	p.state.Store(&replicaState{leader: ip.Leader, leaderEpoch: ip.LeaderEpoch, partitionEpoch: ip.PartitionEpoch,
		replicas: ip.Replicas, isr: ip.ISR})
	p.stateMu.Unlock()
	if self := p.topic.node; old.leader == self && ip.Leader != self {
		b.groups.partitionLost(p)
		b.txns.partitionLost(p)
		b.shareState.partitionLost(p)
	}
	p.wake()
}

// ensureReplicas makes the local topic match an image topic: a topic
// object with one entry per partition, holding a partition (and its log)
// where this node is a replica and nil elsewhere.
func (r *topicRegistry) ensureReplicas(it *controller.Topic, overrides map[string]string, self int32, caughtUp bool) (*topic, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.byName[it.Name]
	if t == nil {
		t = &topic{name: it.Name, id: it.ID, node: self}
		r.applySettings(t, overrides)
		r.byName[t.name] = t
		r.byID[t.id] = t
	} else if !maps.Equal(t.overrides, overrides) {
		r.applySettings(t, overrides)
	}
	t.overrides = overrides
	parts := slices.Clone(t.partitions())
	for len(parts) < len(it.Partitions) {
		parts = append(parts, nil)
	}
	changed := false
	var create []logstore.TopicPartition
	var removed []*partition
	for i, ip := range it.Partitions {
		here := slices.Contains(ip.Replicas, self)
		switch {
		case here && parts[i] == nil:
			tp := logstore.TopicPartition{Topic: t.name, Partition: int32(i)}
			l := r.b.dirs.Log(tp)
			if l != nil && l.TopicID() != t.id {
				if !caughtUp {
					// The image may be older than the log's topic (the
					// first images of a restart): judged once caught up.
					continue
				}
				// Left from an earlier topic of the same name.
				if err := r.b.dirs.DeleteLog(tp); err != nil {
					return nil, err
				}
				l = nil
			}
			if l == nil && r.b.replicaInOfflineDir(ip, caughtUp) {
				continue
			}
			if l == nil {
				create = append(create, tp)
				continue
			}
			parts[i] = newReplica(t, int32(i), l)
			changed = true
		case !here && parts[i] != nil:
			if err := r.b.dirs.DeleteLog(logstore.TopicPartition{Topic: t.name, Partition: int32(i)}); err != nil {
				return nil, err
			}
			r.b.cluster.fetchers.remove(parts[i])
			removed = append(removed, parts[i])
			parts[i] = nil
			changed = true
		}
	}
	if len(create) > 0 {
		logs, err := r.b.dirs.CreateLogsAtEpoch(create, t.id, t.settings.Load().log, -1)
		if err != nil {
			return nil, err
		}
		if err := r.b.dirs.SyncLogDirs(); err != nil {
			return nil, err
		}
		for i, l := range logs {
			parts[create[i].Partition] = newReplica(t, create[i].Partition, l)
		}
		changed = true
	}
	if changed {
		t.setPartitions(parts)
	}
	for _, p := range removed { // woken once no longer hosted
		p.wake()
	}
	return t, nil
}

// newReplica is a partition of t this node holds a replica of, with no
// role until installState gives it one: requests get
// NOT_LEADER_OR_FOLLOWER meanwhile.
func newReplica(t *topic, index int32, l *logstore.Log) *partition {
	p := &partition{topic: t, index: index, log: l}
	p.state.Store(&replicaState{leader: -1, leaderEpoch: -1, partitionEpoch: -1})
	return p
}

// firstBytesTimeout bounds the wait for a connection's first four bytes
// on a listener that takes raft streams too, so that a peer that connects
// and says nothing does not hold a goroutine for ever.
var firstBytesTimeout = 10 * time.Second

// raftAfterLogin returns the connection as a raft stream when it logged
// in on a SASL listener that takes raft streams and what it sends next
// is RaftMagic (which it consumes); nil otherwise. A principal that may
// not speak raft (mayStreamRaft) has the connection closed instead.
func raftAfterLogin(c *conn, r *bufio.Reader) (stream net.Conn, closed bool) {
	l := c.listener
	if c.auth != nil || l == nil || !l.security.sasl() || !l.controller && !l.raft || c.b.cluster == nil {
		return nil, false
	}
	if hdr, err := r.Peek(len(controller.RaftMagic)); err != nil || [4]byte(hdr) != controller.RaftMagic {
		return nil, false
	}
	if !c.mayStreamRaft() {
		return nil, true
	}
	r.Discard(len(controller.RaftMagic))
	return &bufferedConn{Conn: c.nc, r: r}, false
}

// raftStreamKey names a raft stream in the audit log, for it is no Kafka
// request.
const raftStreamKey int16 = -1

// mayStreamRaft reports whether the connection's principal may speak
// raft: with an authorizer it needs CLUSTER_ACTION on the cluster, which
// Kafka's controllers ask of Vote, Fetch and the other raft requests.
// The stream is raft's from then on: asked again only when the ACLs
// change (raft_streams.go).
func (c *conn) mayStreamRaft() bool {
	return c.checkLater(raftStreamKey, kmsg.ACLOperationClusterAction, kmsg.ACLResourceTypeCluster, acl.ClusterName, auditBoth)
}

// bufferedConn is a connection whose reads go through the buffer that
// already holds what was read past the point it changed hands.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// serveControllerConn hands a raft connection to the controller, or
// serves a Kafka client of the controller (user: its TLS principal).
func (b *Broker) serveControllerConn(nc net.Conn, l *listener, user string) (*conn, bool) {
	var magic [4]byte
	nc.SetReadDeadline(time.Now().Add(firstBytesTimeout))
	if _, err := io.ReadFull(nc, magic[:]); err != nil {
		nc.Close()
		return nil, false
	}
	nc.SetReadDeadline(time.Time{})
	c := newConn(b, nc, l)
	c.user = user
	// On a SASL listener raft streams log in first (conn.serve hands them
	// over after the login).
	if magic == controller.RaftMagic && b.cluster != nil && !l.security.sasl() {
		if c.mayStreamRaft() {
			b.handOffRaft(c, nc)
		} else {
			nc.Close()
		}
		return nil, false
	}
	c.prefix = magic[:]
	return c, true
}

package broker

import (
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/internal/connsetup"
)

// ClusterConfig is what a node of a cluster needs beyond a single node's
// settings: its roles, the controller quorum, and Kafka's replication
// keys. Cluster mode is on when controller.quorum.voters is set; without
// it the node is a single broker that leads every partition.
type ClusterConfig struct {
	Roles  []string         // process.roles: broker, controller
	Voters map[int32]string // controller.quorum.voters: node id -> host:port
	// Bootstrap is controller.quorum.bootstrap.servers when they name
	// controllers other than this node: it joins their quorum (see
	// resolveBootstrap).
	Bootstrap []string
	Rack      string // broker.rack

	ReplicaLagTimeMax           time.Duration
	ReplicaFetchMaxBytes        int32
	ReplicaFetchWaitMax         time.Duration
	ReplicaFetchMinBytes        int32
	ReplicaFetchResponseMax     int32         // replica.fetch.response.max.bytes: the whole fetch response
	ReplicaFetchBackoff         time.Duration // after a failed fetch
	ReplicaSocketTimeout        time.Duration // how long a fetch waits for its response
	ReplicaSocketReceiveBuffer  int           // SO_RCVBUF of the fetcher's connections; -1: the kernel's
	NumReplicaFetchers          int           // fetchers per leader this node follows partitions of
	ConnectionSetupTimeout      time.Duration // socket.connection.setup.timeout.ms (interbroker_dial.go)
	ConnectionSetupTimeoutMax   time.Duration // socket.connection.setup.timeout.max.ms
	AutoLeaderRebalance         bool
	LeaderImbalanceCheck        time.Duration
	UncleanElectionCheck        time.Duration // unclean.leader.election.interval.ms
	InitialRegistrationTimeout  time.Duration // initial.broker.registration.timeout.ms
	LogDirFailureTimeout        time.Duration // log.dir.failure.timeout.ms
	OffsetsReplicationFactor    int16
	TxnStateReplicationFactor   int16
	ShareStateReplicationFactor int16
	BrokerSessionTimeout        time.Duration
	BrokerHeartbeatInterval     time.Duration
	ElectionTimeout             time.Duration
	AutoJoin                    bool          // controller.quorum.auto.join.enable
	SnapshotMaxBytes            int64         // metadata.log.max.record.bytes.between.snapshots
	SnapshotMaxInterval         time.Duration // metadata.log.max.snapshot.interval.ms
	ControlledShutdownEnabled   bool
	RackAwareReads              bool // replica.selector.class is the RackAwareReplicaSelector (read_replica.go)
}

// clusterKeys are the KRaft and replication keys.
var clusterKeys = []configKey{
	{"process.roles", "LIST", "broker,controller", "The roles this node plays: broker, controller, or both.", func(c *Config, v string) error {
		roles := splitList(v)
		for _, r := range roles {
			if r != "broker" && r != "controller" {
				return fmt.Errorf("role %q is neither broker nor controller", r)
			}
		}
		if len(roles) == 0 {
			return fmt.Errorf("at least one role is needed")
		}
		c.Cluster.Roles = roles
		return nil
	}},
	{"controller.quorum.voters", "LIST", "", "The voters of the controller quorum, id@host:port,...; empty runs a single node without replication.", func(c *Config, v string) error {
		voters, err := parseVoters(v)
		c.Cluster.Voters = voters
		return err
	}},
	{"controller.quorum.bootstrap.servers", "LIST", "", "host:port of controllers to find the quorum through, when controller.quorum.voters is not set.", func(c *Config, v string) error {
		for _, addr := range splitList(v) {
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return fmt.Errorf("bootstrap server %q: %v", addr, err)
			}
		}
		c.Cluster.Bootstrap = splitList(v)
		return nil
	}},
	{"broker.rack", "STRING", "", "Rack of the broker, used in rack-aware replica placement.", func(c *Config, v string) error {
		c.Cluster.Rack = v
		return nil
	}},
	{"replica.lag.time.max.ms", "LONG", "30000", "A follower that has not caught up with the leader's log end offset for this long leaves the ISR.", millis(func(c *Config) *time.Duration { return &c.Cluster.ReplicaLagTimeMax })},
	{"replica.fetch.max.bytes", "INT", "1048576", "The number of bytes of messages to attempt to fetch for each partition.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		c.Cluster.ReplicaFetchMaxBytes = int32(n)
		return err
	}},
	{"replica.fetch.wait.max.ms", "INT", "500", "The maximum wait time for each fetcher request issued by follower replicas.", millis(func(c *Config) *time.Duration { return &c.Cluster.ReplicaFetchWaitMax })},
	{"replica.fetch.min.bytes", "INT", "1", "Minimum bytes expected for each fetch response.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.Cluster.ReplicaFetchMinBytes = int32(n)
		return err
	}},
	{"replica.fetch.response.max.bytes", "INT", "10485760", "Maximum bytes expected for the entire fetch response.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		c.Cluster.ReplicaFetchResponseMax = int32(n)
		return err
	}},
	{"replica.fetch.backoff.ms", "INT", "1000", "The amount of time to sleep when fetch partition error occurs.", millis(func(c *Config) *time.Duration { return &c.Cluster.ReplicaFetchBackoff })},
	{"replica.socket.receive.buffer.bytes", "INT", "65536", "The socket receive buffer for network requests to the leader for replicating data; -1 leaves the kernel's.", func(c *Config, v string) error {
		n, err := parseSocketBuffer(v)
		c.Cluster.ReplicaSocketReceiveBuffer = n
		return err
	}},
	{"num.replica.fetchers", "INT", "1", "Number of fetcher threads used to replicate records from each source broker. The total number of fetchers on each broker is bound by num.replica.fetchers multiplied by the number of brokers in the cluster. Increasing this value can increase the degree of I/O parallelism in the follower and leader broker at the cost of higher CPU and memory utilization.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.Cluster.NumReplicaFetchers = int(n)
		return err
	}},
	{"socket.connection.setup.timeout.ms", "LONG", "10000", "The amount of time the client will wait for the socket connection to be established. If the connection is not built before the timeout elapses, clients will close the socket channel. This value is the initial backoff value and will increase exponentially for each consecutive connection failure, up to the socket.connection.setup.timeout.max.ms value.", longMillis(0, func(c *Config) *time.Duration { return &c.Cluster.ConnectionSetupTimeout })},
	{"socket.connection.setup.timeout.max.ms", "LONG", "30000", "The maximum amount of time the client will wait for the socket connection to be established. The connection setup timeout will increase exponentially for each consecutive connection failure up to this maximum. To avoid connection storms, a randomization factor of 0.2 will be applied to the timeout resulting in a random range between 20% below and 20% above the computed value.", longMillis(0, func(c *Config) *time.Duration { return &c.Cluster.ConnectionSetupTimeoutMax })},
	{"replica.socket.timeout.ms", "INT", "30000", "The socket timeout for network requests. Its value should be at least replica.fetch.wait.max.ms", millis(func(c *Config) *time.Duration { return &c.Cluster.ReplicaSocketTimeout })},
	{"auto.leader.rebalance.enable", "BOOLEAN", "true", "Move leadership back to preferred replicas in the background.", func(c *Config, v string) error {
		b, err := parseBool(v)
		c.Cluster.AutoLeaderRebalance = b
		return err
	}},
	{"leader.imbalance.check.interval.seconds", "LONG", "300", "The frequency with which the partition rebalance check is triggered by the controller.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.Cluster.LeaderImbalanceCheck = time.Duration(n) * time.Second
		return err
	}},
	{"log.dir.failure.timeout.ms", "LONG", "30000", "If the broker is unable to successfully communicate to the controller that some log directory has failed for longer than this time, the broker will fail and shut down.", longMillis(1, func(c *Config) *time.Duration { return &c.Cluster.LogDirFailureTimeout })},
	{"initial.broker.registration.timeout.ms", "INT", "60000", "When initially registering with the controller quorum, the number of milliseconds to wait before declaring failure and exiting the broker process.", millis(func(c *Config) *time.Duration { return &c.Cluster.InitialRegistrationTimeout })},
	{"unclean.leader.election.interval.ms", "LONG", "300000", "The frequency with which the controller checks if it should perform an unclean leader election for leaderless partitions.", longMillis(1, func(c *Config) *time.Duration { return &c.Cluster.UncleanElectionCheck })},
	{"broker.session.timeout.ms", "INT", "9000", "A broker that sends no heartbeat for this long is fenced by the controller.", millis(func(c *Config) *time.Duration { return &c.Cluster.BrokerSessionTimeout })},
	{"broker.heartbeat.interval.ms", "INT", "2000", "The length of time in milliseconds between broker heartbeats.", millis(func(c *Config) *time.Duration { return &c.Cluster.BrokerHeartbeatInterval })},
	{"controller.quorum.election.timeout.ms", "INT", "1000", "How long a controller waits for the quorum leader before calling an election.", millis(func(c *Config) *time.Duration { return &c.Cluster.ElectionTimeout })},
	{"metadata.log.max.record.bytes.between.snapshots", "LONG", "20971520", "This is the maximum number of bytes in the log between the latest snapshot and the high-watermark needed before generating a new snapshot. To generate snapshots based on the time elapsed, see metadata.log.max.snapshot.interval.ms. The node will generate a snapshot when either the maximum time interval is reached or the maximum bytes limit is reached.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt64)
		c.Cluster.SnapshotMaxBytes = n
		return err
	}},
	{"metadata.log.max.snapshot.interval.ms", "LONG", "3600000", "This is the maximum number of milliseconds to wait to generate a snapshot if there are committed records in the log that are not included in the latest snapshot. A value of zero disables time based snapshot generation.", longMillis(0, func(c *Config) *time.Duration { return &c.Cluster.SnapshotMaxInterval })},
	{"controller.quorum.auto.join.enable", "BOOLEAN", "false", "Controls whether a KRaft controller should automatically join the cluster metadata partition for its cluster id: a controller that is not a voter of a dynamic quorum asks the active controller to add it (AddRaftVoter), and asks again if it is removed.", func(c *Config, v string) error {
		b, err := parseBool(v)
		c.Cluster.AutoJoin = b
		return err
	}},
	{"controlled.shutdown.enable", "BOOLEAN", "true", "Move leadership away before a node shuts down.", func(c *Config, v string) error {
		b, err := parseBool(v)
		c.Cluster.ControlledShutdownEnabled = b
		return err
	}},
}

func init() {
	brokerKeys = append(brokerKeys, clusterKeys...)
	for _, k := range []string{"process.roles", "controller.quorum.voters", "controller.quorum.bootstrap.servers"} {
		delete(knownUnusedKeys, k)
	}
}

// longMillis parses a LONG key of milliseconds, at least lo, into field.
func longMillis(lo int64, field func(c *Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := parseInt(v, lo, math.MaxInt64/int64(time.Millisecond))
		*field(c) = time.Duration(n) * time.Millisecond
		return err
	}
}

// millis applies a non-negative millisecond count to the duration field.
func millis(field func(c *Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		*field(c) = time.Duration(n) * time.Millisecond
		return err
	}
}

// parseVoters reads controller.quorum.voters: id@host:port,...
func parseVoters(v string) (map[int32]string, error) {
	items := splitList(v)
	if len(items) == 0 {
		return nil, nil
	}
	voters := map[int32]string{}
	for _, item := range items {
		idText, addr, ok := strings.Cut(item, "@")
		id, err := strconv.ParseInt(idText, 10, 32)
		if !ok || err != nil || id < 0 {
			return nil, fmt.Errorf("voter %q is not id@host:port", item)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("voter %q: %v", item, err)
		}
		if _, dup := voters[int32(id)]; dup {
			return nil, fmt.Errorf("voter id %d is listed twice", id)
		}
		voters[int32(id)] = addr
	}
	return voters, nil
}

// clustered reports whether this node is part of a replicated cluster.
func (c *Config) clustered() bool { return len(c.Cluster.Voters) > 0 || len(c.Cluster.Bootstrap) > 0 }

// resolveBootstrap decides what controller.quorum.bootstrap.servers mean.
// Kafka's own server.properties names the node itself there (a quorum of
// one, formatted --standalone), which Gregor runs as its single node.
// Naming other controllers, without controller.quorum.voters, the node
// joins their quorum: a broker as an observer, a controller as an
// observer until kafka-metadata-quorum add-controller makes it a voter.
// With controller.quorum.voters set, the voters win, as in Kafka. A node
// with the controller role but no CONTROLLER listener (Kafka's file with
// the listeners overridden to a client listener alone) cannot be one of
// their controllers and stays a single node.
func (c *Config) resolveBootstrap() {
	_, hasCtl := c.controllerListener()
	others := slices.ContainsFunc(c.Cluster.Bootstrap, func(addr string) bool { return !c.ownAddress(addr) })
	if len(c.Cluster.Voters) > 0 || !others || c.hasRole("controller") && !hasCtl {
		c.Cluster.Bootstrap = nil
	}
}

// ownAddress reports whether host:port is one of this node's listeners:
// the same port, on the listener's host or, both naming this machine, on
// another of its addresses.
func (c *Config) ownAddress(addr string) bool {
	host, portText, err := net.SplitHostPort(addr)
	port, perr := strconv.Atoi(portText)
	if err != nil || perr != nil {
		return false
	}
	for _, l := range c.Listeners {
		if l.Port != port {
			continue
		}
		if l.Host == host || localHost(l.Host) && localHost(host) {
			return true
		}
	}
	return false
}

func isWildcard(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// localHost reports whether host names this machine: loopback, or an
// address of one of its interfaces.
func localHost(host string) bool {
	if isLoopback(host) || isWildcard(host) {
		return true
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return false
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, ip := range ips {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
}

// controllerAddrs are the addresses the controller client starts from:
// the voters by id, and bootstrap servers under ids -1, -2, ... as Kafka
// numbers them.
func (c *Config) controllerAddrs() map[int32]string {
	addrs := maps.Clone(c.Cluster.Voters)
	if addrs == nil {
		addrs = map[int32]string{}
	}
	for i, addr := range c.Cluster.Bootstrap {
		addrs[int32(-1-i)] = addr
	}
	return addrs
}

func (c *Config) hasRole(role string) bool { return slices.Contains(c.Cluster.Roles, role) }

// controllerListener is the listener the controller quorum talks on.
func (c *Config) controllerListener() (Listener, bool) {
	for _, l := range c.Listeners {
		if slices.Contains(c.ControllerListenerNames, l.Name) {
			return l, true
		}
	}
	return Listener{}, false
}

// validateQuorumNamed refuses a node of one role that names no
// controllers, as Kafka's KafkaConfig does any node with process.roles:
// only a node of both roles can be Gregor's single node.
func (c *Config) validateQuorumNamed() error {
	if c.hasRole("broker") && c.hasRole("controller") || c.clustered() {
		return nil
	}
	return fmt.Errorf("If using process.roles, either controller.quorum.bootstrap.servers must contain the set of bootstrap controllers " +
		"or controller.quorum.voters must contain a parseable set of controllers.")
}

// bindsEveryControllerListener reports whether every name of
// controller.listener.names is one of the listeners.
func (c *Config) bindsEveryControllerListener() bool {
	for _, name := range c.ControllerListenerNames {
		if !slices.ContainsFunc(c.Listeners, func(l Listener) bool { return l.Name == name }) {
			return false
		}
	}
	return true
}

// validateCluster checks the cluster keys against each other, as Kafka's
// KafkaConfig does for KRaft nodes.
func (c *Config) validateCluster() error {
	if !c.clustered() {
		return nil
	}
	_, voter := c.Cluster.Voters[c.NodeID]
	_, hasCtl := c.controllerListener()
	switch {
	case !c.explicit["node.id"]:
		// The default, 1, is a single node's; a node of a quorum taking
		// it would pass itself off as node 1.
		return fmt.Errorf("Missing configuration `node.id` which is required when `process.roles` is defined (i.e. when running in KRaft mode).")
	case !c.hasRole("controller") && voter:
		return fmt.Errorf("node.id %d is in controller.quorum.voters but lacks the controller role", c.NodeID)
	case c.hasRole("controller") && len(c.Cluster.Voters) > 0 && !voter:
		// A static quorum's voters never change: this node could not join.
		return fmt.Errorf("If process.roles contains the 'controller' role, the node id %d must be included in the set of voters controller.quorum.voters=%v",
			c.NodeID, slices.Sorted(maps.Keys(c.Cluster.Voters)))
	case c.hasRole("controller") && !hasCtl:
		return fmt.Errorf("invalid value for config key controller.listener.names: controller.listener.names must contain at least one value appearing in the 'listeners' configuration when running the KRaft controller role")
	case c.hasRole("controller") && !c.bindsEveryControllerListener():
		return fmt.Errorf("invalid value for config key controller.listener.names: controller.listener.names must only contain values appearing in the 'listeners' configuration when running the KRaft controller role")
	case c.hasRole("broker") && len(c.clientListeners()) == 0:
		return fmt.Errorf("invalid value for config key listeners: no listener serves clients")
	case !c.hasRole("controller") && len(c.ControllerListenerNames) == 0:
		return fmt.Errorf("invalid value for config key controller.listener.names: controller.listener.names must contain at least one value when running KRaft with just the broker role")
	case !c.hasRole("controller") && hasCtl:
		return fmt.Errorf("invalid value for config key controller.listener.names: controller.listener.names must not contain a value appearing in the 'listeners' configuration when running KRaft with just the broker role")
	case !c.hasRole("broker") && len(c.clientListeners()) > 0:
		return fmt.Errorf("invalid value for config key listeners: The listeners config must only contain KRaft controller listeners from controller.listener.names when process.roles=controller")
	}
	return nil
}

// connectionSetup is a new count of one client's failed connection
// setups, timed by socket.connection.setup.timeout.ms and .max.ms.
func (c *Config) connectionSetup() *connsetup.Policy {
	return connsetup.New(c.Cluster.ConnectionSetupTimeout, c.Cluster.ConnectionSetupTimeoutMax)
}

package broker

// DescribeQuorum, versions 0-2, on a single node (a cluster forwards it to
// the active controller, coordinator/controller/quorum.go). A single node
// is what Kafka formats with --standalone: the controller quorum of one
// voter, itself, its leader. Its leader epoch counts its starts, as each
// start of a lone voter is a new election, and its metadata log's high
// watermark and end offset, always equal, count the metadata changes it
// has committed (metaStore.MetadataOffset). So `kafka-metadata-quorum
// describe --status` and `--replication` show this node as leader and
// only voter, with no lag and no observers, as against Kafka.

import (
	"net"
	"path/filepath"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDescribeQuorum(b *Broker, c *conn, req *kmsg.DescribeQuorumRequest) (*kmsg.DescribeQuorumResponse, error) {
	if resp := controller.UnknownQuorumPartitions(req); resp != nil {
		return resp, nil
	}
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	epoch, offset := b.meta.quorum()
	now := time.Now().UnixMilli()
	self := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
	self.ReplicaID = b.cfg.NodeID
	self.ReplicaDirectoryID = b.voterDirectoryID
	self.LogEndOffset = offset
	self.LastFetchTimestamp, self.LastCaughtUpTimestamp = now, now
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.LeaderID, p.LeaderEpoch, p.HighWatermark = b.cfg.NodeID, epoch, offset
	p.CurrentVoters = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{self}
	resp.Topics = []kmsg.DescribeQuorumResponseTopic{{Topic: controller.MetadataTopic, Partitions: []kmsg.DescribeQuorumResponseTopicPartition{p}}}
	node := kmsg.DescribeQuorumResponseNode{NodeID: b.cfg.NodeID}
	if name, host, port, ok := b.controllerEndpoint(); ok {
		node.Listeners = []kmsg.DescribeQuorumResponseNodeListener{{Name: name, Host: host, Port: uint16(port)}}
	}
	resp.Nodes = []kmsg.DescribeQuorumResponseNode{node}
	return resp, nil
}

// controllerEndpoint is where a single node advertises its CONTROLLER
// listener: its advertised.listeners entry, or the address it is bound to.
func (b *Broker) controllerEndpoint() (name, host string, port int, ok bool) {
	l := b.boundControllerListener()
	if l == nil {
		return "", "", 0, false
	}
	host, port = b.cfg.advertised(l.name, l.ln.Addr().(*net.TCPAddr))
	return l.name, host, port, true
}

// metadataDirectoryID is the directory id of the metadata dir at dirPath:
// that of the log dir it is, or of its own meta.properties, which it is
// given if it has none, as kafka-storage format gives every dir one.
func metadataDirectoryID(dirPath string, dirs *logstore.Dirs, nodeID int32) ([16]byte, error) {
	abs, err := filepath.Abs(dirPath)
	if err != nil {
		return [16]byte{}, err
	}
	for _, d := range dirs.All() {
		if d.Path() == abs {
			return d.DirectoryID(), nil
		}
	}
	return logstore.EnsureMetaProperties(dirPath, dirs.ClusterID(), nodeID)
}

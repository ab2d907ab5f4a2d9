package broker

import (
	"sort"

	"github.com/gregor-broker/gregor/coordinator/sharestate"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handlerFunc serves one decoded request. A nil response means none is sent
// (acks=0 produce); an error means the client broke the protocol and the
// connection is closed.
type handlerFunc func(b *Broker, c *conn, req kmsg.Request) (kmsg.Response, error)

// handler is one entry of the registry: the versions served and the
// function serving them. advertiseFromZero is set only for Produce, whose
// v0-2 Kafka 4 advertises but refuses (KAFKA-18659: librdkafka disables
// compression unless Produce v0 is listed).
type handler struct {
	min, max          int16
	advertiseFromZero bool
	serve             handlerFunc
}

// typedFunc serves one request of a concrete kmsg type.
type typedFunc[Req kmsg.Request, Resp kmsg.Response] func(*Broker, *conn, Req) (Resp, error)

// typed adapts a handler on concrete kmsg types to the registry's shape.
func typed[Req kmsg.Request, Resp kmsg.Response](fn func(*Broker, *conn, Req) (Resp, error)) handlerFunc {
	return func(b *Broker, c *conn, req kmsg.Request) (kmsg.Response, error) {
		resp, err := fn(b, c, req.(Req))
		if err != nil {
			return nil, err
		}
		var none Resp // a typed nil: the handler chose not to respond
		if any(resp) == any(none) {
			return nil, nil
		}
		return resp, nil
	}
}

// authorizedBy serves with serve what authorize lets through.
func authorizedBy[Req kmsg.Request, Resp kmsg.Response](authorize func(*Broker, *conn, Req, typedFunc[Req, Resp]) (Resp, error), serve typedFunc[Req, Resp]) handlerFunc {
	return typed(func(b *Broker, c *conn, req Req) (Resp, error) { return authorize(b, c, req, serve) })
}

// handlers is the single registry: ApiVersions advertises exactly these
// keys and ranges, and the connection refuses everything else. The ranges
// are those Apache Kafka 4.1 serves (4.2's for the share group APIs, for
// ListOffsets, and for OffsetCommit and OffsetFetch, whose v10 names
// topics by id; 4.4's for ApiVersions, whose v5 names the node meant,
// TxnOffsetCommit, whose v6 names topics by id, and DeleteGroups, whose
// v3 adds a per-group error message; 4.3's for DescribeLogDirs, whose v5
// marks cordoned dirs).
var handlers map[int16]handler

func init() {
	handlers = map[int16]handler{
		0:  {min: 3, max: 13, advertiseFromZero: true, serve: typed(handleProduce)},
		1:  {min: 4, max: 18, serve: typed(handleFetch)},
		2:  {min: 1, max: 11, serve: typed(handleListOffsets)},
		3:  {min: 0, max: 13, serve: typed(handleMetadata)},
		8:  {min: 2, max: 10, serve: typed(handleOffsetCommit)},
		9:  {min: 1, max: 10, serve: typed(handleOffsetFetch)},
		10: {min: 0, max: 6, serve: typed(handleFindCoordinator)},
		11: {min: 0, max: 9, serve: typed(handleJoinGroup)},
		12: {min: 0, max: 4, serve: typed(handleHeartbeat)},
		13: {min: 0, max: 5, serve: typed(handleLeaveGroup)},
		14: {min: 0, max: 5, serve: typed(handleSyncGroup)},
		15: {min: 0, max: 6, serve: typed(handleDescribeGroups)},
		16: {min: 0, max: 5, serve: typed(handleListGroups)},
		17: {min: 0, max: 1, serve: typed(handleSaslHandshake)},
		18: {min: 0, max: 5, serve: typed(handleApiVersions)},
		19: {min: 2, max: 7, serve: authorizedBy(authorizeCreateTopics, createTopicsHandler)},
		20: {min: 1, max: 6, serve: deletionEnabled(false, authorizedBy(authorizeDeleteTopics, deleteTopicsHandler))},
		21: {min: 0, max: 2, serve: typed(handleDeleteRecords)},
		22: {min: 0, max: 5, serve: typed(handleInitProducerID)},
		23: {min: 2, max: 4, serve: typed(handleOffsetForLeaderEpoch)},
		24: {min: 0, max: 5, serve: typed(handleAddPartitionsToTxn)},
		25: {min: 0, max: 4, serve: typed(handleAddOffsetsToTxn)},
		26: {min: 0, max: 5, serve: typed(handleEndTxn)},
		27: {min: 1, max: 2, serve: typed(handleWriteTxnMarkers)},
		28: {min: 0, max: 6, serve: typed(handleTxnOffsetCommit)},
		29: {min: 1, max: 3, serve: typed(handleDescribeACLs)},
		30: {min: 1, max: 3, serve: typed(handleCreateACLs)},
		31: {min: 1, max: 3, serve: typed(handleDeleteACLs)},
		32: {min: 1, max: 4, serve: typed(handleDescribeConfigs)},
		33: {min: 0, max: 2, serve: authorizedBy(authorizeAlterConfigs, alterConfigsHandler)},
		34: {min: 1, max: 2, serve: typed(handleAlterReplicaLogDirs)},
		35: {min: 1, max: 5, serve: typed(handleDescribeLogDirs)},
		36: {min: 0, max: 2, serve: typed(handleSaslAuthenticate)},
		37: {min: 0, max: 3, serve: authorizedBy(authorizeCreatePartitions, createPartitionsHandler)},
		44: {min: 0, max: 1, serve: authorizedBy(authorizeIncrementalAlterConfigs, incrementalAlterConfigsHandler)},
		42: {min: 0, max: 3, serve: typed(handleDeleteGroups)},
		43: {min: 0, max: 2, serve: typed(handleElectLeaders)},
		45: {min: 0, max: 1, serve: typed(handleAlterPartitionReassignments)},
		46: {min: 0, max: 0, serve: typed(handleListPartitionReassignments)},
		47: {min: 0, max: 0, serve: typed(handleOffsetDelete)},
		48: {min: 0, max: 1, serve: typed(handleDescribeClientQuotas)},
		49: {min: 0, max: 1, serve: typed(handleAlterClientQuotas)},
		38: {min: 1, max: 3, serve: typed(handleCreateDelegationToken)},
		39: {min: 1, max: 2, serve: typed(handleRenewDelegationToken)},
		40: {min: 1, max: 2, serve: typed(handleExpireDelegationToken)},
		41: {min: 1, max: 3, serve: typed(handleDescribeDelegationToken)},
		50: {min: 0, max: 0, serve: typed(handleDescribeUserScramCredentials)},
		51: {min: 0, max: 0, serve: typed(handleAlterUserScramCredentials)},
		55: {min: 0, max: 2, serve: typed(handleDescribeQuorum)},
		57: {min: 0, max: 2, serve: typed(handleUpdateFeatures)},
		60: {min: 0, max: 2, serve: typed(handleDescribeCluster)},
		61: {min: 0, max: 0, serve: typed(handleDescribeProducers)},
		65: {min: 0, max: 0, serve: typed(handleDescribeTransactions)},
		66: {min: 0, max: 2, serve: typed(handleListTransactions)},
		74: {min: 0, max: 1, serve: typed(listConfigResourcesHandler)},
		75: {min: 0, max: 0, serve: typed(handleDescribeTopicPartitions)},
		76: {min: 1, max: 1, serve: typed(handleShareGroupHeartbeat)},
		77: {min: 1, max: 1, serve: typed(handleShareGroupDescribe)},
		78: {min: 1, max: 2, serve: typed(handleShareFetch)},
		79: {min: 1, max: 2, serve: typed(handleShareAcknowledge)},
		83: {min: 0, max: 0, serve: shareStateHandler((*sharestate.Coordinator).Initialize)},
		84: {min: 0, max: 0, serve: shareStateHandler((*sharestate.Coordinator).Read)},
		85: {min: 0, max: 1, serve: shareStateHandler((*sharestate.Coordinator).Write)},
		86: {min: 0, max: 0, serve: shareStateHandler((*sharestate.Coordinator).Delete)},
		87: {min: 0, max: 1, serve: shareStateHandler((*sharestate.Coordinator).ReadSummary)},
		90: {min: 0, max: 1, serve: typed(handleDescribeShareGroupOffsets)},
		91: {min: 0, max: 0, serve: typed(handleAlterShareGroupOffsets)},
		92: {min: 0, max: 0, serve: typed(handleDeleteShareGroupOffsets)},
	}
}

// advertisedKeys lists the registry as ApiVersions reports it, sorted by key.
func advertisedKeys(table map[int16]handler) []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(table))
	for k, h := range table {
		lo := h.min
		if h.advertiseFromZero {
			lo = 0
		}
		keys = append(keys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: lo, MaxVersion: h.max})
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].ApiKey < keys[j].ApiKey })
	return keys
}

package broker

// Broker loggers (resource type BROKER_LOGGER, 8): this node's named
// loggers and their levels (internal/loglevel), described with
// DescribeConfigs and changed with IncrementalAlterConfigs as Kafka's
// RuntimeLoggerManager changes its log4j loggers (kafka-configs
// --entity-type broker-loggers --entity-name <node id>). The resource
// name is this node's id; a level is set (SET) or made to follow its
// dotted parent's or root's again (DELETE); nothing is stored, so a
// restart starts over. The
// loggers have the names Kafka's have, so that what an operator sets on
// Kafka works here: root (everything not below), kafka and
// org.apache.kafka (the parents, as in Kafka's shipped log4j2.yaml),
// org.apache.kafka.coordinator.group and kafka.coordinator.transaction
// (the group and transaction coordinators), kafka.log.LogManager (the
// log dirs: recovery, failures, moves, flushes, retention),
// org.apache.kafka.storage.internals.log.LogCleaner (compaction), in a
// cluster org.apache.kafka.controller, state.change.logger (this node's
// partitions becoming leaders and followers) and kafka.cluster.Partition
// (the ISR changes of the partitions it leads),
// kafka.request.logger (request_logger.go) and kafka.authorizer.logger
// (authorizer_logger.go). Those Kafka's log4j2.yaml gives a level of
// their own have it here too. The legacy AlterConfigs does not take this
// type, as in Kafka.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/gregor-broker/gregor/internal/loglevel"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Named loggers besides root, kafka.request.logger and kafka.authorizer.logger.
const (
	kafkaLoggerName       = "kafka"
	apacheLoggerName      = "org.apache.kafka"
	controllerLoggerName  = "org.apache.kafka.controller"
	groupLoggerName       = "org.apache.kafka.coordinator.group"
	txnLoggerName         = "kafka.coordinator.transaction"
	logManagerLoggerName  = "kafka.log.LogManager"
	logCleanerLoggerName  = "org.apache.kafka.storage.internals.log.LogCleaner"
	stateChangeLoggerName = "state.change.logger"
	partitionLoggerName   = "kafka.cluster.Partition"
)

// describeBrokerLoggers answers DescribeConfigs for this node's loggers:
// each with its current level, as DYNAMIC_BROKER_LOGGER_CONFIG.
func (b *Broker) describeBrokerLoggers(name string, names []string) ([]kmsg.DescribeConfigsResponseResourceConfig, int16, string) {
	switch id, err := strconv.Atoi(name); {
	case name == "":
		return nil, errInvalidRequest, "Broker id must not be empty"
	case err != nil:
		return nil, errInvalidRequest, "Broker id must be an integer, but it is: " + name
	case id != int(b.cfg.NodeID):
		return nil, errInvalidRequest, fmt.Sprintf("Unexpected broker id, expected %d but received %s", b.cfg.NodeID, name)
	}
	levels := b.loggers.Effective()
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, logger := range slices.Sorted(maps.Keys(levels)) {
		if wanted(names, logger) {
			out = append(out, kmsg.DescribeConfigsResponseResourceConfig{Name: logger, Value: kmsg.StringPtr(levels[logger]),
				Source: kmsg.ConfigSourceDynamicBrokerLoggerConfig})
		}
	}
	return out, 0, ""
}

// alterBrokerLoggers checks every operation before applying any, with
// Kafka's codes and messages.
func (b *Broker) alterBrokerLoggers(r alterResource, validateOnly bool) *configError {
	id, err := strconv.Atoi(r.name)
	if err != nil {
		return configErr(errInvalidRequest, "Node id must be an integer, but it is: %s", r.name)
	}
	if id != int(b.cfg.NodeID) {
		return configErr(errInvalidRequest, "Unexpected node id. Expected %d, but received %s", b.cfg.NodeID, r.name)
	}
	for _, o := range r.ops {
		switch o.op {
		case cfgOpSet, cfgOpDelete:
			if !b.loggers.Exists(o.name) {
				return configErr(errInvalidConfig, "Logger %s does not exist!", o.name)
			}
		default:
			return configErr(errInvalidRequest, "%s operation is not allowed for the BROKER_LOGGER resource", opName(o.op))
		}
		if o.op == cfgOpSet && !loglevel.Valid(*o.value) {
			return configErr(errInvalidConfig, "Cannot set the log level of %s to %s as it is not a supported log level. Valid log levels are %s",
				o.name, *o.value, loglevel.ValidLevels())
		}
		if o.op == cfgOpDelete && o.name == loglevel.Root {
			return configErr(errInvalidRequest, "Removing the log level of the root logger is not allowed")
		}
	}
	if validateOnly {
		return nil
	}
	for _, o := range r.ops {
		if o.op == cfgOpSet {
			b.loggers.Set(o.name, *o.value) // checked above
			b.logger.Warn("updated the log level", "logger", o.name, "level", *o.value)
		} else {
			b.loggers.Unset(o.name)
			b.logger.Warn("unset the log level", "logger", o.name)
		}
	}
	return nil
}

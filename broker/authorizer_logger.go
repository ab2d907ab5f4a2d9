package broker

// The authorizer's audit log, kafka.authorizer.logger as in Kafka: each
// action the authorizer decides is written as Kafka's StandardAuthorizer
// writes it,
//
//	Principal = User:alice is Denied operation = WRITE from host = 127.0.0.1
//	on resource = Topic:LITERAL:orders for request = Produce with
//	resourceRefCount = 1 based on rule DefaultDeny
//
// (one line): a denial at INFO, a grant at DEBUG, and at TRACE what a
// check asks not to be logged (Kafka's logIfAllowed / logIfDenied: the
// operations bits of a describe, CREATE on the cluster tried before CREATE
// on a topic, a listing that leaves out what may not be described). The
// logger starts at INFO, as in Kafka's shipped log4j2.yaml, so denials are
// written and grants are not until `kafka-configs --entity-type
// broker-loggers --alter --add-config kafka.authorizer.logger=DEBUG`.
//
// As Kafka writes one line per distinct resource a request names, with a
// count of how many times it named it (a fetch of three partitions of one
// topic: resourceRefCount = 3), a request's checks are gathered while it
// is served and written when it has been: one line per action and level.
// A check made later on a request's behalf (a regex subscription matched
// against a new topic) is written at once.

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/gregor-broker/gregor/acl"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const authorizerLoggerName = "kafka.authorizer.logger"

const levelTrace = slog.LevelDebug - 4 // loglevel's TRACE

// auditFlags are Kafka's logIfAllowed and logIfDenied of one check.
type auditFlags uint8

const (
	auditAllowed auditFlags = 1 << iota
	auditDenied
	auditBoth = auditAllowed | auditDenied
)

// auditEntry is one decided action of a request, to be written.
type auditEntry struct {
	op       kmsg.ACLOperation
	rt       kmsg.ACLResourceType
	name     string
	decision acl.Decision
	level    slog.Level
	count    int // Kafka's resourceRefCount
}

// auditLevel is the level a decision is written at, if the authorizer
// logger writes it at all.
func (b *Broker) auditLevel(allowed bool, flags auditFlags) (slog.Level, bool) {
	level := levelTrace
	switch {
	case allowed && flags&auditAllowed != 0:
		level = slog.LevelDebug
	case !allowed && flags&auditDenied != 0:
		level = slog.LevelInfo
	}
	if b.authorizerLogger.Enabled(context.Background(), level) {
		return level, true
	}
	if level != levelTrace && b.authorizerLogger.Enabled(context.Background(), levelTrace) {
		return levelTrace, true
	}
	return 0, false
}

// audited keeps a decided action for the end of the request, counting
// it with the same action decided before in the same request.
func (c *conn) audited(e auditEntry) {
	for i := range c.audit {
		if a := &c.audit[i]; a.op == e.op && a.rt == e.rt && a.name == e.name && a.level == e.level {
			a.count++
			return
		}
	}
	c.audit = append(c.audit, e)
}

// flushAudit writes the request's decided actions.
func (c *conn) flushAudit(key int16) {
	if len(c.audit) == 0 {
		return
	}
	principal, host := "User:"+c.principal(), c.clientIP()
	for _, e := range c.audit {
		c.b.writeAudit(principal, host, key, e)
	}
	clear(c.audit)
	c.audit = c.audit[:0]
}

// checkLater decides an action on behalf of a request already answered
// (key) and writes it at once.
func (c *conn) checkLater(key int16, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string, flags auditFlags) bool {
	a := c.b.authorizer.Load()
	if a == nil {
		return true
	}
	principal, host := "User:"+c.principal(), c.clientIP()
	d := a.Decide(principal, host, op, rt, name)
	if level, ok := c.b.auditLevel(d.Allowed, flags); ok {
		c.b.writeAudit(principal, host, key, auditEntry{op: op, rt: rt, name: name, decision: d, level: level, count: 1})
	}
	return d.Allowed
}

// writeAudit writes one line of the audit log.
func (b *Broker) writeAudit(principal, host string, key int16, e auditEntry) {
	outcome := "Denied"
	if e.decision.Allowed {
		outcome = "Allowed"
	}
	b.authorizerLogger.Log(context.Background(), e.level, "Principal = "+principal+" is "+outcome+
		" operation = "+acl.OperationName(e.op)+" from host = "+host+
		" on resource = "+acl.ResourceTypeName(e.rt)+":LITERAL:"+e.name+
		" for request = "+kafkaAPIName(key)+" with resourceRefCount = "+strconv.Itoa(e.count)+
		" based on rule "+e.decision.Rule())
}

// kafkaAPIName is an API's name as Kafka's ApiKeys spells it, where
// franz-go's differs (SASL, ACL, ID, ISR in capitals).
func kafkaAPIName(key int16) string {
	switch key {
	case 4:
		return "LeaderAndIsr"
	case 17:
		return "SaslHandshake"
	case 22:
		return "InitProducerId"
	case 29:
		return "DescribeAcls"
	case 30:
		return "CreateAcls"
	case 31:
		return "DeleteAcls"
	case 36:
		return "SaslAuthenticate"
	case 45:
		return "AlterPartitionReassignments"
	case 50:
		return "DescribeUserScramCredentials"
	case 51:
		return "AlterUserScramCredentials"
	case 67:
		return "AllocateProducerIds"
	case raftStreamKey:
		return "RaftStream"
	}
	return kmsg.NameForKey(key)
}

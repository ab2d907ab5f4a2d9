package broker

// Authorization (package acl): with authorizer.class.name set to Kafka's
// StandardAuthorizer, every request is checked against the ACLs for the
// connection's principal ("User:" and the SASL user, the client
// certificate's subject, or ANONYMOUS) and its address, as Kafka's
// KafkaApis checks them: a topic the principal may not use gets
// TOPIC_AUTHORIZATION_FAILED, a group GROUP_AUTHORIZATION_FAILED, a
// cluster operation CLUSTER_AUTHORIZATION_FAILED; Metadata leaves out
// topics the principal may not describe. super.users may do everything.
// ACLs are kept like SCRAM credentials: in the metadata file, or as
// controller records in a cluster. CreateAcls, DescribeAcls and DeleteAcls
// answer SECURITY_DISABLED without an authorizer, as in Kafka.

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/acl"
	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/internal/features"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// standardAuthorizer is the one authorizer.class.name Gregor serves.
const standardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

var authorizerKeys = []configKey{
	{"authorizer.class.name", "STRING", "", "The authorizer: empty for none, or " + standardAuthorizer + ".", func(c *Config, v string) error {
		if v != "" && v != standardAuthorizer {
			return fmt.Errorf("Gregor's authorizer is Kafka's StandardAuthorizer (%s)", standardAuthorizer)
		}
		c.Authorizer = v != ""
		return nil
	}},
	{"super.users", "STRING", "", "Principals allowed everything, separated by semicolons: User:admin;User:broker.", func(c *Config, v string) error {
		c.SuperUsers = nil
		for _, u := range strings.Split(v, ";") {
			if u = strings.TrimSpace(u); u != "" {
				if kind, name, ok := strings.Cut(u, ":"); !ok || kind == "" || name == "" {
					return fmt.Errorf("%q is not a principal (User:name)", u)
				}
				c.SuperUsers = append(c.SuperUsers, u)
			}
		}
		return nil
	}},
	{"allow.everyone.if.no.acl.found", "BOOLEAN", "false", "Whether a resource no ACL names is open to everyone.", func(c *Config, v string) error {
		b, err := parseBool(v)
		c.AllowIfNoACL = b
		return err
	}},
}

func init() {
	brokerKeys = append(brokerKeys, authorizerKeys...)
}

// acls returns the ACLs this node knows, keyed by acl.Binding.Key.
func (b *Broker) acls() map[string]acl.Binding {
	if b.cluster != nil {
		if img := b.cluster.image(); img != nil {
			return img.ACLs
		}
		return nil
	}
	return b.meta.acls()
}

// installACLs builds the authorizer over the current ACLs (none without
// authorizer.class.name).
func (b *Broker) installACLs(acls map[string]acl.Binding) {
	if !b.cfg.Authorizer {
		return
	}
	b.authorizer.Store(acl.NewAuthorizer(acls, b.cfg.SuperUsers, b.cfg.AllowIfNoACL))
	b.recheckRaftStreams()
}

// authorized reports whether the connection's principal may perform op on
// a resource; always, without an authorizer. The outcome goes to the
// audit log as Kafka writes it by default: a denial at INFO, a grant at
// DEBUG (authorizer_logger.go).
func (c *conn) authorized(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return c.check(op, rt, name, auditBoth)
}

// authorizedProbe is authorized for a check whose denial is not a
// refusal (Kafka's logIfDenied=false): CREATE on the cluster before
// CREATE on each topic, a listing that leaves out what may not be
// described. A denial goes to the audit log at TRACE only.
func (c *conn) authorizedProbe(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return c.check(op, rt, name, auditAllowed)
}

// allowedUnaudited decides an action without writing it to the audit
// log, for a check the request has already made and written.
func (c *conn) allowedUnaudited(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	a := c.b.authorizer.Load()
	return a == nil || a.Allowed("User:"+c.principal(), c.clientIP(), op, rt, name)
}

// check decides one action and records it for the audit log.
func (c *conn) check(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string, flags auditFlags) bool {
	a := c.b.authorizer.Load()
	if a == nil {
		return true
	}
	d := a.Decide("User:"+c.principal(), c.clientIP(), op, rt, name)
	if level, ok := c.b.auditLevel(d.Allowed, flags); ok {
		c.audited(auditEntry{op: op, rt: rt, name: name, decision: d, level: level, count: 1})
	}
	return d.Allowed
}

func (c *conn) authorizedTopic(op kmsg.ACLOperation, topic string) bool {
	return c.authorized(op, kmsg.ACLResourceTypeTopic, topic)
}

func (c *conn) authorizedGroup(op kmsg.ACLOperation, group string) bool {
	return c.authorized(op, kmsg.ACLResourceTypeGroup, group)
}

func (c *conn) authorizedTxnID(op kmsg.ACLOperation, transactionalID string) bool {
	return c.authorized(op, kmsg.ACLResourceTypeTransactionalId, transactionalID)
}

func (c *conn) authorizedCluster(op kmsg.ACLOperation) bool {
	return c.authorized(op, kmsg.ACLResourceTypeCluster, acl.ClusterName)
}

func (c *conn) authorizedClusterProbe(op kmsg.ACLOperation) bool {
	return c.authorizedProbe(op, kmsg.ACLResourceTypeCluster, acl.ClusterName)
}

// authorizedAnyTopic reports whether the principal may perform op on some
// topic (an idempotent producer without IDEMPOTENT_WRITE, as in Kafka).
// Like Kafka's Authorizer.authorizeByResourceType it first asks about a
// topic called "hardcode", and that check is what the audit log shows.
func (c *conn) authorizedAnyTopic(op kmsg.ACLOperation) bool {
	a := c.b.authorizer.Load()
	if a == nil {
		return true
	}
	principal, host := "User:"+c.principal(), c.clientIP()
	d := a.Decide(principal, host, op, kmsg.ACLResourceTypeTopic, "hardcode")
	if level, ok := c.b.auditLevel(d.Allowed, auditAllowed); ok {
		// count 0: Kafka's probe counts no reference to a resource.
		c.audited(auditEntry{op: op, rt: kmsg.ACLResourceTypeTopic, name: "hardcode", decision: d, level: level, count: 0})
	}
	return d.Allowed || a.AllowedAnyOf(principal, host, op, kmsg.ACLResourceTypeTopic)
}

// clientIP is the client's address as Kafka's authorizer sees it (Java's
// InetAddress.getHostAddress): what ACL hosts name and the audit log
// writes.
func (c *conn) clientIP() string {
	if a, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
		return javaHostAddress(a.IP, a.Zone)
	}
	host, _, _ := net.SplitHostPort(c.nc.RemoteAddr().String())
	return host
}

// javaHostAddress writes an address as Java's getHostAddress does: an
// IPv4 address (or an IPv4-mapped one) dotted, an IPv6 address as eight
// hexadecimal groups without leading zeros and without "::", so that
// ::1 is 0:0:0:0:0:0:0:1, and an ACL for ::1 matches no client in Kafka
// nor in Gregor.
func javaHostAddress(ip net.IP, zone string) string {
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	if len(ip) != net.IPv6len {
		return ip.String()
	}
	var b strings.Builder
	for i := 0; i < net.IPv6len; i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strconv.FormatUint(uint64(ip[i])<<8|uint64(ip[i+1]), 16))
	}
	if zone != "" {
		b.WriteString("%" + zone)
	}
	return b.String()
}

var (
	errTopicAuthorization     = kerr.TopicAuthorizationFailed.Code
	errStreamsInvalidTopology = kerr.StreamsInvalidTopology.Code
	errGroupAuthorization     = kerr.GroupAuthorizationFailed.Code
	errClusterAuthorization   = kerr.ClusterAuthorizationFailed.Code
)

func handleDescribeACLs(b *Broker, c *conn, req *kmsg.DescribeACLsRequest) (*kmsg.DescribeACLsResponse, error) {
	if aclRequestNamesUnknown(req) {
		return nil, errUnknownACLElement
	}
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	switch {
	case !b.cfg.Authorizer:
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr("No Authorizer is configured on the broker")
	case !c.authorizedCluster(kmsg.ACLOperationDescribe):
		resp.ErrorCode = errClusterAuthorization
	default:
		resp = acl.Describe(req, b.acls())
	}
	return resp, nil
}

// aclRefusal answers CreateAcls or DeleteAcls without an authorizer or
// for a principal without ALTER on the cluster, or returns nil.
func aclRefusal(b *Broker, c *conn, req kmsg.Request) kmsg.Response {
	code := int16(0)
	switch {
	case !b.cfg.Authorizer:
		code = kerr.SecurityDisabled.Code
	case !c.authorizedCluster(kmsg.ACLOperationAlter):
		code = errClusterAuthorization
	default:
		return nil
	}
	msg := errorMessage(code)
	switch r := req.(type) {
	case *kmsg.CreateACLsRequest:
		resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
		for range r.Creations {
			resp.Results = append(resp.Results, kmsg.CreateACLsResponseResult{ErrorCode: code, ErrorMessage: msg})
		}
		return resp
	case *kmsg.DeleteACLsRequest:
		resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
		for range r.Filters {
			resp.Results = append(resp.Results, kmsg.DeleteACLsResponseResult{ErrorCode: code, ErrorMessage: msg})
		}
		return resp
	}
	return nil
}

// errUnknownACLElement closes the connection of an ACL request naming
// UNKNOWN, which does not parse in Kafka (acl.NamesUnknown).
var errUnknownACLElement = errors.New("ACL request contains UNKNOWN elements")

// aclRequestNamesUnknown reports whether a CreateAcls, DescribeAcls or
// DeleteAcls names UNKNOWN in any of its ACLs or filters.
func aclRequestNamesUnknown(req kmsg.Request) bool {
	switch r := req.(type) {
	case *kmsg.CreateACLsRequest:
		for _, cr := range r.Creations {
			if acl.NamesUnknown(cr.ResourceType, cr.ResourcePatternType, cr.Operation, cr.PermissionType) {
				return true
			}
		}
	case *kmsg.DescribeACLsRequest:
		return acl.NamesUnknown(r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType)
	case *kmsg.DeleteACLsRequest:
		for _, f := range r.Filters {
			if acl.NamesUnknown(f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType) {
				return true
			}
		}
	}
	return false
}

func handleCreateACLs(b *Broker, c *conn, req *kmsg.CreateACLsRequest) (kmsg.Response, error) {
	if aclRequestNamesUnknown(req) {
		return nil, errUnknownACLElement
	}
	stored, _ := b.featureLevels()
	cidr := features.Level(stored, features.MetadataVersion) >= features.CIDRACLs
	return changeACLs(b, c, req, func(have map[string]acl.Binding) (kmsg.Response, []acl.Change) { return acl.Create(req, have, cidr) })
}

func handleDeleteACLs(b *Broker, c *conn, req *kmsg.DeleteACLsRequest) (kmsg.Response, error) {
	if aclRequestNamesUnknown(req) {
		return nil, errUnknownACLElement
	}
	return changeACLs(b, c, req, func(have map[string]acl.Binding) (kmsg.Response, []acl.Change) { return acl.Delete(req, have) })
}

// changeACLs serves CreateAcls or DeleteAcls: refused without an
// authorizer or ALTER on the cluster, forwarded to the controller in a
// cluster, otherwise decided against the stored ACLs and stored.
func changeACLs(b *Broker, c *conn, req kmsg.Request, decide func(have map[string]acl.Binding) (kmsg.Response, []acl.Change)) (kmsg.Response, error) {
	if r := aclRefusal(b, c, req); r != nil {
		return r, nil
	}
	if b.cluster != nil {
		return forwardToController(b, c, req)
	}
	var resp kmsg.Response
	err := b.storeACLs(func(have map[string]acl.Binding) []acl.Change {
		var changes []acl.Change
		resp, changes = decide(have)
		return changes
	})
	if err != nil {
		return controller.ErrorResponse(req, errUnknownServerError), nil
	}
	return resp, nil
}

// storeACLs applies the changes decide returns to the metadata file and
// installs the result (single node).
func (b *Broker) storeACLs(decide func(have map[string]acl.Binding) []acl.Change) error {
	err := b.meta.update(func(d *metaData) {
		changes := decide(d.ACLs)
		if len(changes) == 0 {
			return
		}
		d.ACLs = maps.Clone(d.ACLs)
		if d.ACLs == nil {
			d.ACLs = map[string]acl.Binding{}
		}
		for _, ch := range changes {
			ch.Apply(d.ACLs)
		}
	})
	if err != nil {
		b.logger.Error("storing ACLs failed", "err", err)
		return err
	}
	b.installACLs(b.meta.acls())
	return nil
}

// clusterOperationOf are the operations on the cluster the APIs that act
// on the whole cluster need, as Kafka's KafkaApis checks them.
var clusterOperationOf = map[int16]kmsg.ACLOperation{
	34: kmsg.ACLOperationAlter,           // AlterReplicaLogDirs
	35: kmsg.ACLOperationDescribe,        // DescribeLogDirs
	43: kmsg.ACLOperationAlter,           // ElectLeaders
	45: kmsg.ACLOperationAlter,           // AlterPartitionReassignments
	46: kmsg.ACLOperationDescribe,        // ListPartitionReassignments
	48: kmsg.ACLOperationDescribeConfigs, // DescribeClientQuotas
	49: kmsg.ACLOperationAlterConfigs,    // AlterClientQuotas
	50: kmsg.ACLOperationDescribe,        // DescribeUserScramCredentials
	51: kmsg.ACLOperationAlter,           // AlterUserScramCredentials
	55: kmsg.ACLOperationDescribe,        // DescribeQuorum
	57: kmsg.ACLOperationAlter,           // UpdateFeatures
	64: kmsg.ACLOperationAlter,           // UnregisterBroker
	74: kmsg.ACLOperationDescribeConfigs, // ListConfigResources
	80: kmsg.ACLOperationAlter,           // AddRaftVoter
	81: kmsg.ACLOperationAlter,           // RemoveRaftVoter
	94: kmsg.ACLOperationAlter,           // UnregisterController
}

// controllerOperationOf are the operations on the cluster a CONTROLLER
// listener asks of the same APIs and of the nodes' own, as Kafka's
// ControllerApis checks them: DescribeCluster there needs ALTER.
var controllerOperationOf = func() map[int16]kmsg.ACLOperation {
	ops := maps.Clone(clusterOperationOf)
	ops[60] = kmsg.ACLOperationAlter // DescribeCluster
	for _, key := range []int16{
		56, // AlterPartition
		58, // Envelope
		62, // BrokerRegistration
		63, // BrokerHeartbeat
		67, // AllocateProducerIds
		70, // ControllerRegistration
		73, // AssignReplicasToDirs
		82, // UpdateRaftVoter
	} {
		ops[key] = kmsg.ACLOperationClusterAction
	}
	return ops
}()

// clusterDenied answers a whole-cluster request the principal may not
// make with CLUSTER_AUTHORIZATION_FAILED, or returns nil. On a cluster's
// CONTROLLER listener another node's requests (fromNode) pass.
func (c *conn) clusterDenied(req kmsg.Request) kmsg.Response {
	if c.b.authorizer.Load() == nil || c.listener == nil {
		return nil
	}
	ops := clusterOperationOf
	if c.onControllerListener() {
		ops = controllerOperationOf
	}
	op, ok := ops[req.Key()]
	if !ok || c.onControllerListener() && c.b.cluster != nil && c.fromNode() || c.authorizedCluster(op) {
		return nil
	}
	code := errClusterAuthorization
	switch r := req.ResponseKind().(type) {
	case *kmsg.DescribeLogDirsResponse:
		r.ErrorCode = code
		return r
	case *kmsg.AlterReplicaLogDirsResponse:
		return alterReplicaLogDirsAnswer(req.(*kmsg.AlterReplicaLogDirsRequest), func(logstore.TopicPartition) int16 { return code })
	case *kmsg.DescribeClientQuotasResponse:
		r.ErrorCode = code // no message: ApiError.fromThrowable leaves out the default one
		return r
	case *kmsg.DescribeUserSCRAMCredentialsResponse:
		r.ErrorCode = code // as DescribeClientQuotas
		return r
	}
	return controller.ErrorResponse(req, code)
}

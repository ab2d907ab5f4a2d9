package broker

// In a cluster, admin requests that change metadata are forwarded to the
// active controller, as Kafka's brokers forward them: the broker first
// checks each entry on its own image in the order of Kafka's controller,
// with the controller's checks, so that the mutation quota (kept here)
// comes last as in Kafka; it sends the rest in one request, merges the
// answers, and
// waits until its own image shows the change, so a client that created a
// topic can produce to this broker at once.

import (
	"context"
	"maps"
	"net"
	"strconv"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// forward sends a request to the active controller. When none answers in
// time, Kafka's ForwardingManager answers the client REQUEST_TIMED_OUT in
// the request's shape (getErrorResponse); callers do the same.
func (cl *cluster) forward(c *conn, req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := c.requestContext(timeout)
	defer cancel()
	return cl.client.Send(ctx, req)
}

// awaitImage waits until the applied image satisfies cond, or timeout.
func (cl *cluster) awaitImage(timeout time.Duration, cond func(*controller.Image) bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if img := cl.image(); img != nil && cond(img) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// clusterCreateTopics checks each entry on this broker's image in the
// order of Kafka's controller, the mutation quota last (newTopicRefusal,
// with the controller's own checks of existing names and placement), and
// forwards those that pass, which the controller checks again.
func (b *Broker) clusterCreateTopics(c *conn, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	counts := countNames(req.Topics, func(rt kmsg.CreateTopicsRequestTopic) string { return rt.Topic })
	if b.excessiveCreateTopics(req, counts) {
		return controller.ExcessiveCreateTopics(req), nil
	}
	img := b.cluster.image()
	taken := func(name string) (int16, string) { return controller.TopicNameTaken(img, name) }
	place := func(rt kmsg.CreateTopicsRequestTopic) (int16, string) {
		_, code, msg := b.cluster.ctl.PlaceTopic(img, rt, controller.MaxRecordsPerUserOp)
		return code, msg
	}
	fwd := newest(kmsg.NewPtrCreateTopicsRequest())
	fwd.TimeoutMillis, fwd.ValidateOnly = req.TimeoutMillis, req.ValidateOnly
	local := map[string]kmsg.CreateTopicsResponseTopic{}
	q := c.mutationQuota(req.Version, 6)
	defer q.finish(resp)
	for _, rt := range req.Topics {
		if _, ok := local[rt.Topic]; ok {
			continue // Kafka answers a topic named twice once
		}
		st := kmsg.CreateTopicsResponseTopic{Topic: rt.Topic, NumPartitions: -1, ReplicationFactor: -1}
		code, msg := errInvalidRequest, controller.DuplicateTopicName
		if counts[rt.Topic] == 1 {
			code, msg = b.newTopicRefusal(rt, taken, place)
		}
		if code == 0 && !q.admit(b.partitionsCreated(rt)) {
			code, msg = errThrottlingQuotaExceeded, *throttledMessage
		}
		if code == 0 {
			fwd.Topics = append(fwd.Topics, rt)
			continue
		}
		st.ErrorCode, st.ErrorMessage = code, kmsg.StringPtr(msg)
		local[rt.Topic] = st
	}
	answered := map[string]kmsg.CreateTopicsResponseTopic{}
	if len(fwd.Topics) > 0 {
		r, err := b.cluster.forward(c, fwd, time.Duration(req.TimeoutMillis)*time.Millisecond)
		if err != nil {
			for _, rt := range fwd.Topics {
				answered[rt.Topic] = kmsg.CreateTopicsResponseTopic{Topic: rt.Topic, NumPartitions: -1, ReplicationFactor: -1,
					ErrorCode: errRequestTimedOut, ErrorMessage: kmsg.StringPtr(err.Error())}
			}
		} else {
			for _, st := range r.(*kmsg.CreateTopicsResponse).Topics {
				answered[st.Topic] = st
			}
		}
	}
	var created []string
	done := map[string]bool{}
	for _, rt := range req.Topics {
		if done[rt.Topic] {
			continue
		}
		done[rt.Topic] = true
		st, ok := local[rt.Topic]
		if !ok {
			st = answered[rt.Topic]
			st.Topic = rt.Topic
			if st.ErrorCode == 0 {
				st.Configs = b.createdTopicConfigs(configMap(rt.Configs))
				if !req.ValidateOnly {
					created = append(created, rt.Topic)
				}
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	b.cluster.awaitImage(5*time.Second, func(img *controller.Image) bool {
		for _, name := range created {
			if img.Topics[name] == nil || b.topics.get(name) == nil {
				return false
			}
		}
		return true
	})
	return resp, nil
}

// clusterDeleteTopics refuses malformed entries (controller.SortDeletions,
// with this broker's image), takes the mutation quota for the others and
// forwards those it admits.
func (b *Broker) clusterDeleteTopics(c *conn, req *kmsg.DeleteTopicsRequest) (*kmsg.DeleteTopicsResponse, error) {
	q := c.mutationQuota(req.Version, 5)
	valid, refused := controller.SortDeletions(controller.DeletionEntries(req), func(name string) ([16]byte, bool) {
		if img := b.cluster.image(); img != nil && img.Topics[name] != nil {
			return img.Topics[name].ID, true
		}
		return [16]byte{}, false
	})
	fwd := *req
	fwd.Topics, fwd.TopicNames = nil, nil
	for _, w := range valid {
		if !q.admit(b.partitionCountOf(b.topicNameOf(w))) {
			refused = append(refused, kmsg.DeleteTopicsResponseTopic{Topic: w.Topic, TopicID: w.TopicID,
				ErrorCode: errThrottlingQuotaExceeded, ErrorMessage: throttledMessage})
		} else if req.Version >= 6 {
			fwd.Topics = append(fwd.Topics, w)
		} else {
			fwd.TopicNames = append(fwd.TopicNames, *w.Topic)
		}
	}
	req = &fwd
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	before := map[string][16]byte{} // the ids of the topics named (answers before v6 carry none)
	if img := b.cluster.image(); img != nil {
		for _, name := range req.TopicNames {
			if t := img.Topics[name]; t != nil {
				before[name] = t.ID
			}
		}
	}
	if len(req.Topics)+len(req.TopicNames) > 0 {
		r, err := b.cluster.forward(c, req, time.Duration(req.TimeoutMillis)*time.Millisecond)
		if err != nil {
			r = controller.ErrorResponse(req, errRequestTimedOut) // Kafka's forwarding timeout
		}
		resp = r.(*kmsg.DeleteTopicsResponse)
	}
	resp.Topics = append(resp.Topics, refused...)
	q.finish(resp)
	// Wait for the applied image, which the checks of the next request
	// read: it is stored after the registry has dropped the topics.
	b.cluster.awaitImage(5*time.Second, func(img *controller.Image) bool {
		for _, st := range resp.Topics {
			if st.ErrorCode != 0 || st.Topic == nil {
				continue
			}
			if t := img.Topics[*st.Topic]; t != nil && (t.ID == st.TopicID || t.ID == before[*st.Topic]) {
				return false
			}
		}
		return true
	})
	return resp, nil
}

// clusterCreatePartitions answers a topic named twice once, makes the
// controller's first checks on this broker's image
// (controller.PartitionIncreaseRefusal), then takes the mutation quota,
// as Kafka's controller checks it before the assignments, and forwards
// the topics it admits.
func (b *Broker) clusterCreatePartitions(c *conn, req *kmsg.CreatePartitionsRequest) (*kmsg.CreatePartitionsResponse, error) {
	q := c.mutationQuota(req.Version, 3)
	counts := countNames(req.Topics, func(rt kmsg.CreatePartitionsRequestTopic) string { return rt.Topic })
	var refused []kmsg.CreatePartitionsResponseTopic
	fwd := *req
	fwd.Topics = nil
	answered := map[string]bool{}
	for _, rt := range req.Topics {
		if answered[rt.Topic] {
			continue // Kafka answers a topic named twice once
		}
		answered[rt.Topic] = true
		code, msg := errInvalidRequest, kmsg.StringPtr(controller.DuplicateTopicName)
		if counts[rt.Topic] == 1 {
			code, msg = controller.PartitionIncreaseRefusal(rt, int(b.partitionCountOf(rt.Topic)))
		}
		if code == 0 && !q.admit(b.partitionsAdded(rt)) {
			code, msg = errThrottlingQuotaExceeded, throttledMessage
		}
		if code == 0 {
			fwd.Topics = append(fwd.Topics, rt)
		} else {
			refused = append(refused, kmsg.CreatePartitionsResponseTopic{Topic: rt.Topic, ErrorCode: code, ErrorMessage: msg})
		}
	}
	req = &fwd
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	if len(req.Topics) > 0 {
		r, err := b.cluster.forward(c, req, time.Duration(req.TimeoutMillis)*time.Millisecond)
		if err != nil {
			r = controller.ErrorResponse(req, errRequestTimedOut) // Kafka's forwarding timeout
		}
		resp = r.(*kmsg.CreatePartitionsResponse)
	}
	resp.Topics = append(resp.Topics, refused...)
	q.finish(resp)
	want := map[string]int32{}
	for _, rt := range req.Topics {
		want[rt.Topic] = rt.Count
	}
	b.cluster.awaitImage(5*time.Second, func(img *controller.Image) bool {
		for _, st := range resp.Topics {
			if t := img.Topics[st.Topic]; st.ErrorCode == 0 && !req.ValidateOnly && (t == nil || int32(len(t.Partitions)) < want[st.Topic]) {
				return false
			}
		}
		return true
	})
	return resp, nil
}

// topicOverrides are a topic's config overrides: the controller's in a
// cluster, the metadata file's on a single node.
func (b *Broker) topicOverrides(name string) map[string]string {
	if b.cluster != nil {
		if img := b.cluster.image(); img != nil {
			return img.Configs[controller.ConfigResource{Type: controller.ResourceTopic, Name: name}]
		}
		return nil
	}
	return b.meta.topicConfigs(name)
}

// topicExists reports whether the topic exists in the cluster (it may
// have no replica on this broker).
func (b *Broker) topicExists(name string) bool {
	if b.cluster != nil {
		img := b.cluster.image()
		return img != nil && img.Topics[name] != nil
	}
	return b.topics.get(name) != nil
}

// setConfigs changes a topic's, broker's or group's overrides to next
// through the controller and waits until this broker applied them. An
// incremental change (touched: the keys the request named) goes as those
// keys' new values or deletions (IncrementalAlterConfigs), which the
// controller applies to its own current overrides: another change that
// this broker has not seen yet is kept, as Kafka's controller merges it.
// A legacy AlterConfigs (touched nil) replaces them all.
func (cl *cluster) setConfigs(typ kmsg.ConfigResourceType, name string, next map[string]string, touched []string) *configError {
	var req kmsg.Request
	incremental := touched != nil
	if incremental {
		ir := newest(kmsg.NewPtrIncrementalAlterConfigsRequest())
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		for _, k := range touched {
			op := kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: k, Op: kmsg.IncrementalAlterConfigOpDelete}
			if v, ok := next[k]; ok {
				op.Op, op.Value = kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(v)
			}
			rr.Configs = append(rr.Configs, op)
		}
		ir.Resources = append(ir.Resources, rr)
		req = ir
	} else {
		ar := newest(kmsg.NewPtrAlterConfigsRequest())
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		for k, v := range next {
			rr.Configs = append(rr.Configs, kmsg.AlterConfigsRequestResourceConfig{Name: k, Value: kmsg.StringPtr(v)})
		}
		ar.Resources = append(ar.Resources, rr)
		req = ar
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cl.client.Send(ctx, req)
	if err != nil {
		return configErr(errRequestTimedOut, "the controller did not answer: %v", err)
	}
	var code int16
	var msg *string
	switch r := resp.(type) {
	case *kmsg.AlterConfigsResponse:
		code, msg = r.Resources[0].ErrorCode, r.Resources[0].ErrorMessage
	case *kmsg.IncrementalAlterConfigsResponse:
		code, msg = r.Resources[0].ErrorCode, r.Resources[0].ErrorMessage
	}
	if code != 0 {
		text := errorMessageText(code)
		if msg != nil {
			text = *msg
		}
		return configErr(code, "%s", text)
	}
	key := controller.ConfigResource{Type: int8(typ), Name: name}
	cl.awaitImage(5*time.Second, func(img *controller.Image) bool {
		got := img.Configs[key]
		if !incremental {
			return maps.Equal(got, next)
		}
		for _, k := range touched {
			v, set := next[k]
			if now, ok := got[k]; ok != set || now != v {
				return false
			}
		}
		return true
	})
	return nil
}

// dynamicBrokerConfigs are this node's dynamic broker configs and the
// cluster-wide defaults: the controller's in a cluster, the metadata
// file's on a single node.
func (b *Broker) dynamicBrokerConfigs() (perBroker, clusterWide map[string]string) {
	if b.cluster == nil {
		return b.meta.brokerConfigs()
	}
	img := b.cluster.ctl.Image()
	return img.Configs[controller.ConfigResource{Type: controller.ResourceBroker, Name: strconv.Itoa(int(b.cfg.NodeID))}],
		img.Configs[controller.ConfigResource{Type: controller.ResourceBroker, Name: ""}]
}

// applyDynamicConfigs installs the image's dynamic broker configs when
// they changed (another broker altered the cluster-wide defaults, say).
func (cl *cluster) applyDynamicConfigs() {
	b := cl.b
	perBroker, clusterWide := b.dynamicBrokerConfigs()
	if maps.Equal(perBroker, cl.appliedBroker) && maps.Equal(clusterWide, cl.appliedCluster) {
		return
	}
	live, err := overlay(&b.cfg, clusterWide, perBroker)
	if err != nil {
		b.logger.Error("dynamic broker configs from the controller do not parse", "err", err)
		return
	}
	cl.appliedBroker, cl.appliedCluster = perBroker, clusterWide
	b.setLiveConfig(live)
}

// partitionsCreated is what creating a topic takes from the
// controller_mutation_rate bucket: its partitions, nothing when it exists
// already (Kafka checks the quota after refusing that).
func (b *Broker) partitionsCreated(rt kmsg.CreateTopicsRequestTopic) int32 {
	if b.partitionCountOf(rt.Topic) > 0 {
		return 0
	}
	return partitionCount(rt, b.liveConfig().NumPartitions)
}

// partitionsAdded is what CreatePartitions takes from the bucket: the
// partitions added to a topic that exists.
func (b *Broker) partitionsAdded(rt kmsg.CreatePartitionsRequestTopic) int32 {
	if n := b.partitionCountOf(rt.Topic); n > 0 {
		return rt.Count - n
	}
	return 0
}

// partitionCountOf is how many partitions a topic has (0 when it does not
// exist): in the cluster's image, or on this single node.
func (b *Broker) partitionCountOf(name string) int32 {
	if b.cluster != nil {
		if img := b.cluster.image(); img != nil && img.Topics[name] != nil {
			return int32(len(img.Topics[name].Partitions))
		}
		return 0
	}
	if t := b.topics.get(name); t != nil {
		return int32(len(t.partitions()))
	}
	return 0
}

// topicNameOf is the name of a DeleteTopics entry, given by name or id.
func (b *Broker) topicNameOf(w kmsg.DeleteTopicsRequestTopic) string {
	if w.Topic != nil {
		return *w.Topic
	}
	if b.cluster != nil {
		if img := b.cluster.image(); img != nil {
			for name, t := range img.Topics {
				if t.ID == w.TopicID {
					return name
				}
			}
		}
		return ""
	}
	if t := b.topics.getByID(w.TopicID); t != nil {
		return t.name
	}
	return ""
}

// forwardEnveloped sends req to the controller in an Envelope naming the
// connection's principal and address, and returns the answer inside.
func (cl *cluster) forwardEnveloped(c *conn, req kmsg.Request) (kmsg.Response, error) {
	p := controller.Principal{Type: "User", Name: c.principal(), TokenAuthenticated: c.tokenAuthenticated}
	host := net.ParseIP(c.clientIP())
	if v4 := host.To4(); v4 != nil {
		host = v4
	}
	env := controller.Envelope(req, p, c.clientID, host)
	resp, err := cl.forward(c, env, 30*time.Second)
	if err != nil {
		return nil, err
	}
	return controller.Unwrapped(req, resp.(*kmsg.EnvelopeResponse))
}

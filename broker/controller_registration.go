package broker

import (
	"context"
	"net"
	"time"

	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A node with the controller role registers its CONTROLLER listener with
// the active controller (ControllerRegistration), as KRaft's controllers
// do. For a node that is not a voter yet this is how it joins: the active
// controller makes it a raft observer at that listener, and
// kafka-metadata-quorum add-controller can then make it a voter
// (coordinator/controller/voters.go). A controller-only node also writes
// the meta.properties that add-controller reads its directory id from,
// once it knows the cluster id.

// registerControllerLoop sends ControllerRegistration until it is
// accepted or the node stops.
func (cl *cluster) registerControllerLoop() {
	b := cl.b
	req := newest(kmsg.NewPtrControllerRegistrationRequest())
	req.ControllerID, req.IncarnationID = b.cfg.NodeID, cl.incarnation
	for _, l := range b.listeners {
		if l.controller {
			host, port := b.cfg.advertised(l.name, l.ln.Addr().(*net.TCPAddr))
			req.Listeners = append(req.Listeners, kmsg.ControllerRegistrationRequestListener{Name: l.name, Host: host, Port: uint16(port)})
		}
	}
	started, warned := time.Now(), false
	for {
		if !warned && len(b.cfg.Cluster.Voters) == 0 && time.Since(started) > 10*time.Second {
			// Kafka forms a new quorum from kafka-storage format
			// --initial-controllers; Gregor has no format step.
			b.logger.Warn("no active controller has taken this controller's registration through controller.quorum.bootstrap.servers yet; the first controllers of a new cluster need controller.quorum.voters",
				"bootstrap.servers", b.cfg.Cluster.Bootstrap)
			warned = true
		}
		cl.client.AddVoters(cl.ctl.Voters())
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := cl.client.Send(ctx, req)
		cancel()
		if err == nil && resp.(*kmsg.ControllerRegistrationResponse).ErrorCode == 0 {
			break
		}
		if err == nil {
			b.logger.Warn("controller registration refused", "err", errorMessageText(resp.(*kmsg.ControllerRegistrationResponse).ErrorCode))
		}
		select {
		case <-cl.stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
	if b.cfg.hasRole("broker") {
		return // the broker's log dirs have their meta.properties
	}
	for {
		changed := cl.ctl.Changed()
		if id := cl.ctl.Image().ClusterID; id != "" {
			if _, err := logstore.EnsureMetaProperties(b.cfg.LogDirs[0], id, b.cfg.NodeID); err != nil {
				b.logger.Error("writing the controller's meta.properties", "err", err)
			}
			return
		}
		select {
		case <-cl.stop:
			return
		case <-changed:
		}
	}
}

package broker

// UpdateFeatures, versions 0-2 (kafka-features upgrade, downgrade,
// disable): package internal/features checks the updates as Kafka's
// controller does. A single node stores the levels in its metadata file
// and counts the updates as the features' epoch; in a cluster the request
// goes to the controller (registry_controller.go). Clients read the new
// levels from their next ApiVersions, so transaction.version below 2
// takes effect for connections made afterwards.

import (
	"maps"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/internal/features"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleUpdateFeatures(b *Broker, c *conn, req *kmsg.UpdateFeaturesRequest) (*kmsg.UpdateFeaturesResponse, error) {
	if b.cluster != nil {
		return b.cluster.updateFeatures(c, req)
	}
	stored, _ := b.meta.features()
	next, code, msg := features.Update(req, stored, false, b.cfg.NodeID)
	if code != 0 || req.ValidateOnly || maps.Equal(next, stored) {
		return features.Response(req, code, msg), nil
	}
	enabling := features.Level(stored, features.ELRVersion) < 1 && features.Level(next, features.ELRVersion) >= 1
	configsChanged := false
	err := b.meta.update(func(d *metaData) {
		d.Features = next
		d.FeaturesEpoch++
		configsChanged = enabling && b.singleNodeELRMinISR(d, true)
	})
	if err != nil {
		b.logger.Error("storing feature levels failed", "err", err)
		return features.Response(req, errUnknownServerError, "storing the feature levels failed: "+err.Error()), nil
	}
	b.logger.Info("updated features", "levels", next)
	if configsChanged {
		b.reloadLiveConfig()
	}
	return features.Response(req, 0, ""), nil
}

// updateFeatures forwards UpdateFeatures to the controller and, once it
// applied the levels, waits (up to 5 s) until this node's image has them,
// so that an ApiVersions to this node right after shows them.
func (cl *cluster) updateFeatures(c *conn, req *kmsg.UpdateFeaturesRequest) (*kmsg.UpdateFeaturesResponse, error) {
	resp, err := cl.forward(c, req, 30*time.Second)
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.UpdateFeaturesResponse)
	if r.ErrorCode == 0 && !req.ValidateOnly {
		cl.awaitImage(5*time.Second, func(img *controller.Image) bool {
			for _, u := range req.FeatureUpdates {
				if features.Level(img.Features, u.Feature) != u.MaxVersionLevel {
					return false
				}
			}
			return true
		})
	}
	return r, nil
}

package controller

import (
	"github.com/gregor-broker/gregor/internal/features"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// updateFeatures handles UpdateFeatures (kafka-features upgrade,
// downgrade, disable) with package features' rules, storing the levels
// in Image.Features. Turning eligible leader replicas off clears every
// partition's ELR and last known leader, which nothing maintains any more.
func (c *Controller) updateFeatures(req *kmsg.UpdateFeaturesRequest) kmsg.Response {
	img := c.Image()
	next, code, msg := features.Update(req, img.Features, true)
	if code != 0 || req.ValidateOnly {
		return features.Response(req, code, msg)
	}
	recs := []Record{{Features: &next}}
	if elrEnabled(img) && features.Level(next, features.ELRVersion) == 0 {
		recs = append(recs, clearELR(img, func(string) bool { return true })...)
	}
	if _, err := c.propose(recs); err != nil {
		return c.proposeFailed(req, err)
	}
	return features.Response(req, 0, "")
}

// elrEnabled reports whether eligible.leader.replicas.version is at least 1.
func elrEnabled(img *Image) bool { return features.Level(img.Features, features.ELRVersion) >= 1 }

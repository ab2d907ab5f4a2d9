package controller

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/internal/features"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// updateFeatures handles UpdateFeatures (kafka-features upgrade,
// downgrade, disable) with package features' rules, storing the levels
// in Image.Features. Raising kraft.version records the voters with their
// directory ids (kraft_upgrade.go). Turning eligible leader replicas off
// clears every partition's ELR and last known leader, which nothing
// maintains any more; turning them on removes every broker's own
// min.insync.replicas and sets the cluster's if it has none.
func (c *Controller) updateFeatures(req *kmsg.UpdateFeaturesRequest) kmsg.Response {
	img := c.Image()
	next, code, msg := features.Update(req, img.Features, true, c.cfg.NodeID)
	var voters []Record
	if code == 0 && features.Level(next, features.KRaftVersion) > features.Level(img.Features, features.KRaftVersion) {
		voters, code, msg = c.upgradeKRaftRecords()
	}
	if code != 0 || req.ValidateOnly {
		return features.Response(req, code, msg)
	}
	recs := append(voters, Record{Features: &next})
	switch on := features.Level(next, features.ELRVersion) >= 1; {
	case elrEnabled(img) && !on:
		recs = append(recs, clearELR(img, func(string) bool { return true })...)
	case !elrEnabled(img) && on:
		recs = append(recs, dropBrokerMinISR(img)...)
		recs = append(recs, c.clusterMinISRRecords(img)...)
	}
	if _, err := c.propose(recs); err != nil {
		return c.proposeFailed(req, err)
	}
	return features.Response(req, 0, "")
}

// dropBrokerMinISR removes every broker's own min.insync.replicas, as
// Kafka does when ELR is turned on: the controller judges eligibility by
// the topic's or the cluster's value, so no broker may count another.
func dropBrokerMinISR(img *Image) []Record {
	var recs []Record
	for _, res := range slices.SortedFunc(maps.Keys(img.Configs), func(a, b ConfigResource) int {
		return strings.Compare(a.Name, b.Name)
	}) {
		values := img.Configs[res]
		if _, ok := values[minISRKey]; !ok || res.Type != ResourceBroker || res.Name == "" {
			continue
		}
		values = maps.Clone(values)
		delete(values, minISRKey)
		recs = append(recs, Record{Config: &ConfigRecord{Resource: res, Values: values}})
	}
	return recs
}

// clusterMinISRRecords sets the cluster-wide min.insync.replicas to this
// controller's static value when there is none, as Kafka's controller does
// while ELR is on (KAFKA-16540): every broker then counts the ISR against
// the same number, whatever its own server.properties say.
func (c *Controller) clusterMinISRRecords(img *Image) []Record {
	if _, ok := img.ClusterConfig(minISRKey); ok {
		return nil
	}
	res := ConfigResource{ResourceBroker, ""}
	values := maps.Clone(img.Configs[res])
	if values == nil {
		values = map[string]string{}
	}
	values[minISRKey] = strconv.Itoa(c.cfg.MinISRDefault)
	return []Record{{Config: &ConfigRecord{Resource: res, Values: values}}}
}

// elrEnabled reports whether eligible.leader.replicas.version is at least 1.
func elrEnabled(img *Image) bool { return features.Level(img.Features, features.ELRVersion) >= 1 }

package broker

import (
	"maps"

	"github.com/gregor-broker/gregor/internal/features"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/gregor-broker/gregor/sasl"
)

// bootstrap is what a new cluster starts with beside its voters when
// kafka-storage format prepared its first log dir: the feature levels of
// --release-version and --feature, and the SCRAM users of --add-scram
// (the way Kafka's docs create the user brokers authenticate as before
// any broker runs). Kafka's first active controller writes them into the
// metadata log; Gregor's does the same, and a single node stores them in
// its metadata file at its first start.
type bootstrap struct {
	features map[string]int16 // nil: no format, the defaults
	scram    []sasl.CredentialChange
}

// bootstrapFrom takes what the format wrote, logging what Gregor cannot
// take as it is: feature levels beyond the ones it serves (a newer
// release's) and credentials of an unknown mechanism.
func (b *Broker) bootstrapFrom(f logstore.Formatted) bootstrap {
	var boot bootstrap
	if f.Features != nil {
		var adjusted []string
		boot.features, adjusted = features.Formatted(f.Features)
		for _, a := range adjusted {
			b.logger.Warn("kafka-storage format set a feature level Gregor does not serve: a new cluster starts at the nearest served level", "feature", a)
		}
	}
	for _, c := range f.ScramCredentials {
		m := sasl.ScramMechanism(c.Mechanism)
		if !m.Known() {
			b.logger.Warn("kafka-storage format added a SCRAM credential of an unknown mechanism", "user", c.User, "mechanism", c.Mechanism)
			continue
		}
		cred := sasl.Credential{Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations}
		boot.scram = append(boot.scram, sasl.CredentialChange{User: c.User, Mechanism: m, Credential: &cred})
	}
	return boot
}

// applyTo stores the bootstrap in a single node's metadata.
func (boot bootstrap) applyTo(d *metaData) {
	if boot.features != nil {
		d.Features = boot.features
	}
	if len(boot.scram) == 0 {
		return
	}
	d.ScramCredentials = maps.Clone(d.ScramCredentials) // readers hold the old map
	if d.ScramCredentials == nil {
		d.ScramCredentials = map[string]sasl.Credential{}
	}
	for _, c := range boot.scram {
		c.Apply(d.ScramCredentials)
	}
}

package broker

// AlterClientQuotas, versions 0-1: set or remove the byte rates,
// request_percentage and controller_mutation_rate of users, client ids,
// their pairs and defaults, and connection_creation_rate of ips, with
// validate_only; package quota validates as Kafka's controller does. A
// single node stores them in its metadata file; in a cluster the request
// goes to the controller (registry_controller.go).

import (
	"maps"

	"github.com/gregor-broker/gregor/quota"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleAlterClientQuotas(b *Broker, c *conn, req *kmsg.AlterClientQuotasRequest) (*kmsg.AlterClientQuotasResponse, error) {
	var resp *kmsg.AlterClientQuotasResponse
	err := b.meta.update(func(d *metaData) {
		var changed []quota.Entry
		resp, changed = quota.Alter(req, d.ClientQuotas)
		if len(changed) == 0 {
			return
		}
		d.ClientQuotas = maps.Clone(d.ClientQuotas)
		if d.ClientQuotas == nil {
			d.ClientQuotas = map[string]quota.Entry{}
		}
		for _, e := range changed {
			if len(e.Values) == 0 {
				delete(d.ClientQuotas, e.Entity.Key())
			} else {
				d.ClientQuotas[e.Entity.Key()] = e
			}
		}
	})
	if err != nil {
		b.logger.Error("storing client quotas failed", "err", err)
		for i := range resp.Entries {
			if resp.Entries[i].ErrorCode == 0 {
				resp.Entries[i].ErrorCode = errUnknownServerError
				resp.Entries[i].ErrorMessage = kmsg.StringPtr("storing the quotas failed: " + err.Error())
			}
		}
		return resp, nil
	}
	b.installQuotas()
	return resp, nil
}

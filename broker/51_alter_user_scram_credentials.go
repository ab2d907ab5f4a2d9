package broker

// AlterUserScramCredentials, version 0: set or remove users' SCRAM-SHA-256
// and SCRAM-SHA-512 credentials (package sasl validates them and derives
// the stored keys from the salted password). A single node keeps them in
// its metadata file; in a cluster the request goes to the controller
// (registry_controller.go) and every broker reads them from the metadata
// image.

import (
	"maps"

	"github.com/gregor-broker/gregor/sasl"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleAlterUserScramCredentials(b *Broker, c *conn, req *kmsg.AlterUserSCRAMCredentialsRequest) (*kmsg.AlterUserSCRAMCredentialsResponse, error) {
	var resp *kmsg.AlterUserSCRAMCredentialsResponse
	err := b.meta.update(func(d *metaData) {
		var changes []sasl.CredentialChange
		resp, changes = sasl.Alter(req, d.ScramCredentials)
		if len(changes) == 0 {
			return
		}
		d.ScramCredentials = maps.Clone(d.ScramCredentials)
		if d.ScramCredentials == nil {
			d.ScramCredentials = map[string]sasl.Credential{}
		}
		for _, ch := range changes {
			ch.Apply(d.ScramCredentials)
		}
	})
	if err != nil {
		b.logger.Error("storing SCRAM credentials failed", "err", err)
		for i := range resp.Results {
			if resp.Results[i].ErrorCode == 0 {
				resp.Results[i].ErrorCode = errUnknownServerError
				resp.Results[i].ErrorMessage = kmsg.StringPtr("storing the credentials failed: " + err.Error())
			}
		}
	}
	return resp, nil
}

// scramCredentials returns the SCRAM credentials this node knows, keyed by
// sasl.CredentialKey.
func (b *Broker) scramCredentials() map[string]sasl.Credential {
	if b.cluster != nil {
		if img := b.cluster.image(); img != nil {
			return img.ScramCredentials
		}
		return nil
	}
	return b.meta.scramCredentials()
}

// scramCredential finds one user's credential for a mechanism.
func (b *Broker) scramCredential(user string, m sasl.ScramMechanism) (sasl.Credential, bool) {
	cred, ok := b.scramCredentials()[sasl.CredentialKey(user, m)]
	return cred, ok
}

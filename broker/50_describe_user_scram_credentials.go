package broker

// DescribeUserScramCredentials, version 0: the mechanisms and iterations
// of users' SCRAM credentials (package sasl answers from the stored
// ones). kafka-configs asks it beside DescribeClientQuotas when it
// describes users.

import (
	"github.com/gregor-broker/gregor/sasl"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDescribeUserScramCredentials(b *Broker, c *conn, req *kmsg.DescribeUserSCRAMCredentialsRequest) (*kmsg.DescribeUserSCRAMCredentialsResponse, error) {
	return sasl.Describe(req, b.scramCredentials()), nil
}

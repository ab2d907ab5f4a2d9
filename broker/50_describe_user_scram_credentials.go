package broker

// DescribeUserScramCredentials, version 0. Gregor has no SASL, so no user
// has SCRAM credentials: describing all users lists none, and a named user
// gets RESOURCE_NOT_FOUND, as Kafka answers for a user without them.
// kafka-configs asks this beside DescribeClientQuotas when it describes
// users' quotas. AlterUserScramCredentials is not served.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDescribeUserScramCredentials(b *Broker, c *conn, req *kmsg.DescribeUserSCRAMCredentialsRequest) (*kmsg.DescribeUserSCRAMCredentialsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	resp.Results = []kmsg.DescribeUserSCRAMCredentialsResponseResult{}
	seen := map[string]int{}
	for _, u := range req.Users {
		seen[u.Name]++
	}
	for _, u := range req.Users {
		r := kmsg.DescribeUserSCRAMCredentialsResponseResult{User: u.Name, CredentialInfos: []kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}}
		if seen[u.Name] > 1 {
			r.ErrorCode = kerr.DuplicateResource.Code
			r.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + u.Name)
		} else {
			r.ErrorCode = kerr.ResourceNotFound.Code
			r.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist: " + u.Name)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}

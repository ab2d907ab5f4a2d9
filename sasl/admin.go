package sasl

import (
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CredentialKey is the key a credential is stored under.
func CredentialKey(user string, m ScramMechanism) string { return m.String() + ":" + user }

// splitCredentialKey undoes CredentialKey.
func splitCredentialKey(key string) (string, ScramMechanism) {
	mech, user, _ := strings.Cut(key, ":")
	return user, ScramMechanismNamed(mech)
}

// CredentialChange is one stored credential set (Credential) or removed
// (nil Credential).
type CredentialChange struct {
	User       string
	Mechanism  ScramMechanism
	Credential *Credential `json:",omitempty"`
}

// Apply makes the change in a map of credentials keyed by CredentialKey.
func (c CredentialChange) Apply(creds map[string]Credential) {
	key := CredentialKey(c.User, c.Mechanism)
	if c.Credential == nil {
		delete(creds, key)
	} else {
		creds[key] = *c.Credential
	}
}

// Alter validates an AlterUserScramCredentials request against the stored
// credentials (keyed by CredentialKey) with Kafka's controller's rules: a
// user may appear once per request, names must not be empty, mechanisms
// must be known, iterations within [MinIterations, MaxIterations], and a
// deleted credential must exist. It returns the response and the changes
// to store; a user with an error changes nothing.
func Alter(req *kmsg.AlterUserSCRAMCredentialsRequest, have map[string]Credential) (*kmsg.AlterUserSCRAMCredentialsResponse, []CredentialChange) {
	type failure struct {
		code int16
		msg  string
	}
	failed := map[string]failure{}
	deletions := map[string]kmsg.AlterUserSCRAMCredentialsRequestDeletion{}
	upserts := map[string]kmsg.AlterUserSCRAMCredentialsRequestUpsertion{}
	const twice = "A user credential cannot be altered twice in the same request"
	for _, d := range req.Deletions {
		if _, ok := failed[d.Name]; ok {
			continue
		}
		if _, ok := deletions[d.Name]; ok {
			delete(deletions, d.Name)
			failed[d.Name] = failure{kerr.DuplicateResource.Code, twice}
			continue
		}
		code, msg := validateName(d.Name, ScramMechanism(d.Mechanism))
		if code == 0 {
			if _, ok := have[CredentialKey(d.Name, ScramMechanism(d.Mechanism))]; !ok {
				code, msg = kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist"
			}
		}
		if code != 0 {
			failed[d.Name] = failure{code, msg}
			continue
		}
		deletions[d.Name] = d
	}
	for _, u := range req.Upsertions {
		if _, ok := failed[u.Name]; ok {
			continue
		}
		_, deleted := deletions[u.Name]
		_, upserted := upserts[u.Name]
		if deleted || upserted {
			delete(deletions, u.Name)
			delete(upserts, u.Name)
			failed[u.Name] = failure{kerr.DuplicateResource.Code, twice}
			continue
		}
		code, msg := validateName(u.Name, ScramMechanism(u.Mechanism))
		switch {
		case code != 0:
		case u.Iterations < MinIterations:
			code, msg = kerr.UnacceptableCredential.Code, "Too few iterations"
		case u.Iterations > MaxIterations:
			code, msg = kerr.UnacceptableCredential.Code, "Too many iterations"
		}
		if code != 0 {
			failed[u.Name] = failure{code, msg}
			continue
		}
		upserts[u.Name] = u
	}

	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var changes []CredentialChange
	for _, name := range slices.Sorted(maps.Keys(deletions)) {
		d := deletions[name]
		changes = append(changes, CredentialChange{User: name, Mechanism: ScramMechanism(d.Mechanism)})
		resp.Results = append(resp.Results, kmsg.AlterUserSCRAMCredentialsResponseResult{User: name})
	}
	for _, name := range slices.Sorted(maps.Keys(upserts)) {
		u := upserts[name]
		m := ScramMechanism(u.Mechanism)
		cred := NewCredential(m, u.Salt, u.SaltedPassword, u.Iterations)
		changes = append(changes, CredentialChange{User: name, Mechanism: m, Credential: &cred})
		resp.Results = append(resp.Results, kmsg.AlterUserSCRAMCredentialsResponseResult{User: name})
	}
	for _, name := range slices.Sorted(maps.Keys(failed)) {
		f := failed[name]
		resp.Results = append(resp.Results, kmsg.AlterUserSCRAMCredentialsResponseResult{User: name, ErrorCode: f.code, ErrorMessage: kmsg.StringPtr(f.msg)})
	}
	return resp, changes
}

func validateName(name string, m ScramMechanism) (int16, string) {
	if name == "" {
		return kerr.UnacceptableCredential.Code, "Username must not be empty"
	}
	if !m.Known() {
		return kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"
	}
	return 0, ""
}

// Describe answers DescribeUserScramCredentials from the stored
// credentials as Kafka's ScramImage does: every user with a credential
// when none are named, the mechanisms and iterations of each named user,
// RESOURCE_NOT_FOUND for a user without any and DUPLICATE_RESOURCE for a
// user named twice.
func Describe(req *kmsg.DescribeUserSCRAMCredentialsRequest, have map[string]Credential) *kmsg.DescribeUserSCRAMCredentialsResponse {
	byUser := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	for key, cred := range have {
		user, m := splitCredentialKey(key)
		byUser[user] = append(byUser[user], kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{Mechanism: int8(m), Iterations: cred.Iterations})
	}
	named := map[string]int{}
	for _, u := range req.Users {
		named[u.Name]++
	}
	users := slices.Sorted(maps.Keys(named))
	if len(req.Users) == 0 {
		users = slices.Sorted(maps.Keys(byUser))
	}
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	resp.Results = []kmsg.DescribeUserSCRAMCredentialsResponseResult{}
	for _, user := range users {
		r := kmsg.DescribeUserSCRAMCredentialsResponseResult{User: user, CredentialInfos: []kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}}
		infos := byUser[user]
		switch {
		case named[user] > 1:
			r.ErrorCode = kerr.DuplicateResource.Code
			r.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + user)
		case len(infos) == 0:
			r.ErrorCode = kerr.ResourceNotFound.Code
			r.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist: " + user)
		default:
			slices.SortFunc(infos, func(a, b kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo) int {
				return int(a.Mechanism) - int(b.Mechanism)
			})
			r.CredentialInfos = infos
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}

// Changes lists stored credentials as the changes that would store them,
// sorted by key, for snapshots.
func Changes(creds map[string]Credential) []CredentialChange {
	var out []CredentialChange
	for _, key := range slices.Sorted(maps.Keys(creds)) {
		user, m := splitCredentialKey(key)
		cred := creds[key]
		out = append(out, CredentialChange{User: user, Mechanism: m, Credential: &cred})
	}
	return out
}

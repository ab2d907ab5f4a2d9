package sasl

import (
	"bytes"
	"crypto/subtle"
	"strconv"
)

// plainServer checks one PLAIN message, "authzid NUL user NUL password",
// against the users of the listener's JAAS config, with the messages
// Kafka's PlainSaslServer gives.
type plainServer struct {
	users map[string]string
	user  string
}

func (s *plainServer) Step(token []byte) ([]byte, bool, error) {
	parts := bytes.SplitN(token, []byte{0}, 4)
	if len(parts) != 3 {
		return nil, false, &Failure{Message: "Invalid SASL/PLAIN response: expected 3 tokens, got " + strconv.Itoa(len(parts))}
	}
	authzid, user, password := string(parts[0]), string(parts[1]), parts[2]
	if user == "" {
		return nil, false, &Failure{Message: "Authentication failed: username not specified"}
	}
	if len(password) == 0 {
		return nil, false, &Failure{Message: "Authentication failed: password not specified"}
	}
	want, ok := s.users[user]
	if !ok || subtle.ConstantTimeCompare([]byte(want), password) != 1 {
		return nil, false, &Failure{Message: "Authentication failed: Invalid username or password"}
	}
	if authzid != "" && authzid != user {
		return nil, false, &Failure{Message: "Authentication failed: Client requested an authorization id that is different from username"}
	}
	s.user = user
	return []byte{}, true, nil
}

func (s *plainServer) User() string { return s.user }

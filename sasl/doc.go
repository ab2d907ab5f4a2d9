// Package sasl is the server side of Kafka's SASL authentication, without
// the sockets: the PLAIN mechanism (RFC 4616) checked against the users of
// a JAAS option string, the SCRAM-SHA-256 and SCRAM-SHA-512 mechanisms
// (RFC 5802, RFC 7677) checked against stored credentials, the
// OAUTHBEARER mechanism (RFC 7628) with Kafka's two token validators
// (unsecured JWTs, or JWTs signed by a key of a JSON Web Key Set), and the
// AlterUserScramCredentials / DescribeUserScramCredentials rules that
// maintain those credentials.
//
// A connection on a SASL listener talks to one Server per authentication:
//
//	client                        Server (one per connection)
//	SaslHandshake(mechanism) ---> New(mechanism, ...)      (broker)
//	token ---------------------->  Step -> challenge
//	token ---------------------->  Step -> final, done     (SCRAM: two steps)
//
// A failed Step returns a *Failure whose Message is what Kafka tells the
// client: PLAIN names the problem, SCRAM never says whether the user
// exists. OAUTHBEARER answers a refused token with RFC 7628's JSON error
// as a challenge, and fails when the client acknowledges it; a message it
// cannot parse is only "invalid credentials" to the client. The broker
// logs the Failure's Logged text, which says why (the token's fault).
//
// SCRAM credentials are kept as Kafka keeps them: salt, stored key, server
// key and iterations, derived from the salted password the client sends in
// AlterUserScramCredentials; the password itself is never seen.
package sasl

package broker

// Kafka's keys that name Java classes a broker loads to enforce something:
// topic and config policies, quota callbacks, principal builders, SSL
// engine factories. Gregor runs no Java, so a key naming a class it does
// not implement itself stops the start, rather than the broker running
// without the checks the operator configured. (The authorizer and the
// replica selector take the Kafka classes Gregor implements: authorize.go,
// read_replica.go.)

import "fmt"

// defaultPrincipalBuilder is Kafka's own principal builder, which Gregor's
// rules are (tls.go, sslprincipal, the SASL logins).
const defaultPrincipalBuilder = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"

var pluginKeys = []configKey{
	{"create.topic.policy.class.name", "CLASS", "", "The create topic policy class that should be used for validation. Gregor loads no classes.", refusePlugin("topics would be created without the policy's checks", "")},
	{"alter.config.policy.class.name", "CLASS", "", "The alter configs policy class that should be used for validation. Gregor loads no classes.", refusePlugin("configs would be altered without the policy's checks", "")},
	{"client.quota.callback.class", "CLASS", "", "The quota callback class. Gregor loads no classes: quotas are Kafka's default user and client-id quotas.", refusePlugin("quotas would not be the callback's", "")},
	{"principal.builder.class", "CLASS", defaultPrincipalBuilder, "The class that builds the principal of each connection: only Kafka's default.", refusePlugin("principals would not be the builder's", defaultPrincipalBuilder)},
	{"ssl.engine.factory.class", "CLASS", "", "The class of SSLEngine objects. Gregor loads no classes: TLS is Go's, configured by the ssl.* keys.", refusePlugin("TLS would not be the factory's", "")},
}

func init() {
	brokerKeys = append(brokerKeys, pluginKeys...)
}

// refusePlugin accepts an empty value (or the class Gregor's behaviour
// is) and refuses any other class, saying what would go unenforced.
func refusePlugin(consequence, builtin string) func(*Config, string) error {
	return func(_ *Config, v string) error {
		if v == "" || v == builtin {
			return nil
		}
		return fmt.Errorf("Gregor runs no Java plugins, so %s", consequence)
	}
}

package broker

import (
	"fmt"
	"net"
	"slices"
	"strings"
)

// validateListeners refuses what Kafka's KafkaConfig refuses at start-up
// in listeners and advertised.listeners, with its messages:
//   - two listeners of one name, in either key;
//   - two listeners on one port (port 0, an ephemeral port, excepted),
//     unless exactly two share it and one has an IPv4 address and the
//     other an IPv6 address;
//   - on a broker, an advertised client listener that listeners does not
//     define;
//   - an advertised listener on the nonroutable meta-address 0.0.0.0:
//     every client listener of advertised.listeners, or of listeners when
//     nothing is advertised, and a controller listener advertised as
//     such. (A CONTROLLER listener bound to 0.0.0.0 and not advertised
//     is allowed: its voters are reached where controller.quorum.voters
//     says.)
func (c *Config) validateListeners() error {
	if err := distinctListenerNames("listeners", c.Listeners, c.values["listeners"]); err != nil {
		return err
	}
	if err := distinctListenerPorts(c.Listeners, c.values["listeners"]); err != nil {
		return err
	}
	if c.explicit["advertised.listeners"] {
		if err := distinctListenerNames("advertised.listeners", c.AdvertisedListeners, c.values["advertised.listeners"]); err != nil {
			return err
		}
	}
	var advertisedClient []string
	for _, l := range c.AdvertisedListeners {
		isController := slices.Contains(c.ControllerListenerNames, l.Name)
		if !isController {
			advertisedClient = append(advertisedClient, l.Name)
		}
		if l.Host == "0.0.0.0" && (!isController || c.explicit["advertised.listeners"]) {
			key, why := "advertised.listeners", ""
			if !c.explicit[key] {
				key, why = "listeners", " (advertised.listeners is not set, so listeners are advertised)"
			}
			return fmt.Errorf("invalid value for config key %s: advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address.%s", key, why)
		}
	}
	if c.hasRole("broker") && c.explicit["advertised.listeners"] {
		var defined []string
		for _, l := range c.Listeners {
			defined = append(defined, l.Name)
		}
		for _, name := range advertisedClient {
			if !slices.Contains(defined, name) {
				return fmt.Errorf("invalid value for config key advertised.listeners: advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. Found %s. The valid options based on the current configuration are %s",
					strings.Join(advertisedClient, ","), strings.Join(defined, ","))
			}
		}
	}
	return nil
}

func distinctListenerNames(key string, ls []Listener, text string) error {
	seen := map[string]bool{}
	for _, l := range ls {
		if seen[l.Name] {
			return fmt.Errorf("invalid value for config key %s: Each listener must have a different name, listeners: %s", key, text)
		}
		seen[l.Name] = true
	}
	return nil
}

// distinctListenerPorts is Kafka's rule for the ports of listeners: a
// port may be shared by exactly two listeners with IP addresses, one IPv4
// and the other IPv6 (a dual-stack host binding each family on its own).
func distinctListenerPorts(ls []Listener, text string) error {
	byPort := map[int][]Listener{}
	var ports []int
	for _, l := range ls {
		if l.Port == 0 {
			continue
		}
		if byPort[l.Port] == nil {
			ports = append(ports, l.Port)
		}
		byPort[l.Port] = append(byPort[l.Port], l)
	}
	for _, port := range ports {
		same := byPort[port]
		if len(same) < 2 {
			continue
		}
		var v4, v6, named int
		for _, l := range same {
			switch ip := net.ParseIP(l.Host); {
			case ip == nil:
				named++
			case ip.To4() != nil:
				v4++
			default:
				v6++
			}
		}
		switch {
		case named > 1:
			return fmt.Errorf("invalid value for config key listeners: Each listener must have a different port, listeners: %s", text)
		case v4+v6 == 2 && (v4 != 1 || named > 0):
			return fmt.Errorf("invalid value for config key listeners: If you have two listeners on the same port then one needs to be IPv4 and the other IPv6, listeners: %s, port: %d", text, port)
		case v4+v6 != 2:
			return fmt.Errorf("invalid value for config key listeners: Each listener must have a different port unless exactly one listener has an IPv4 address and the other IPv6 address, listeners: %s, port: %d", text, port)
		}
	}
	return nil
}

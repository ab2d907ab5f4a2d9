// Package properties reads Java properties files: Kafka's
// server.properties, and the files Kafka's FileConfigProvider takes
// secrets from.
package properties

import (
	"bufio"
	"os"
	"strings"
)

// Read reads a Java properties file such as Kafka's
// server.properties: '#' and '!' comments, key=value, key:value or
// "key value", and lines continued with a trailing backslash.
func Read(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	props := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var pending string
	for sc.Scan() {
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if pending == "" && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if strings.HasSuffix(line, "\\") && !strings.HasSuffix(line, "\\\\") {
			pending += strings.TrimSuffix(line, "\\")
			continue
		}
		line, pending = pending+line, ""
		key, value := splitProperty(line)
		props[key] = value
	}
	return props, sc.Err()
}

func splitProperty(line string) (string, string) {
	i := strings.IndexAny(line, "=: \t")
	if i < 0 {
		return line, ""
	}
	key := line[:i]
	rest := strings.TrimLeft(line[i:], " \t")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = rest[1:]
	}
	return key, strings.TrimSpace(rest)
}
